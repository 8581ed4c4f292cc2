import Foundation
import Strata
import Testing
@testable import StrataPushDelivery

@Suite struct DeliveryQueueTests {
    /// A notification from a real outbox (PushNotification has no public initializer).
    static let template: PushNotification = {
        let outbox = try! TestOutbox()
        try! outbox.device("t")
        try! outbox.notify("t")
        return try! outbox.pending()[0]
    }()

    static func notification(_ id: UInt64, device: String) -> PushNotification {
        var n = template
        n.id = id
        n.deviceID = device
        n.deviceToken = "t-\(device)"
        return n
    }

    static func drain(_ q: inout DeliveryQueue) -> [PushNotification] {
        var out: [PushNotification] = []
        while let n = q.next() { out.append(n) }
        return out
    }

    @Test("one in flight per device keeps each device's order; devices take turns")
    func order() {
        var q = DeliveryQueue(maxInFlight: 10, maxInFlightPerDevice: 1, batchSize: 10)
        for (id, device) in [(1, "A"), (2, "A"), (3, "B"), (4, "A"), (5, "C")] {
            let new = q.see(UInt64(id))
            #expect(new)
            q.enqueue(Self.notification(UInt64(id), device: device))
        }
        #expect(Self.drain(&q).map(\.id) == [1, 3, 5])
        #expect(q.checkInvariants().isEmpty)
        q.settle(Self.notification(1, device: "A"))
        #expect(Self.drain(&q).map(\.id) == [2])
        q.settle(Self.notification(2, device: "A"))
        q.settle(Self.notification(3, device: "B"))
        #expect(Self.drain(&q).map(\.id) == [4])
        #expect(q.checkInvariants().isEmpty)
    }

    @Test("the watermark skips ids already seen (a stream reopened after an overflow)")
    func watermark() {
        var q = DeliveryQueue(maxInFlight: 10, maxInFlightPerDevice: 1, batchSize: 10)
        let seen = [q.see(5), q.see(5), q.see(3), q.see(6)]
        #expect(seen == [true, false, false, true])
    }

    @Test("maxInFlight bounds the sends; answered-but-uncommitted ones count against maxInFlight + batch")
    func window() {
        var q = DeliveryQueue(maxInFlight: 2, maxInFlightPerDevice: 1, batchSize: 1)
        for id in 1...10 { _ = q.see(UInt64(id)); q.enqueue(Self.notification(UInt64(id), device: "D\(id)")) }
        var sent = Self.drain(&q)
        #expect(sent.map(\.id) == [1, 2], "maxInFlight")
        q.settle(sent[0])
        sent = Self.drain(&q)
        #expect(sent.map(\.id) == [3], "1 in flight + 1 answered < 2 + 1")
        q.settle(Self.notification(2, device: "D2"))
        let blocked = q.next()
        #expect(blocked == nil, "1 in flight + 2 answered = the window (maxInFlight + batch), though maxInFlight allows one more")
        let batch = q.takeBatch()
        #expect(batch.map(\.id) == [1] && q.committing == 1)
        let stillBlocked = q.next()
        #expect(stillBlocked == nil, "committing counts until the commit ends")
        q.endCommit()
        let fourth = q.next()
        #expect(fourth?.id == 4)
        #expect(q.checkInvariants().isEmpty)
    }

    @Test("a retry goes back to the front of its device and the device waits; other devices go on")
    func retry() {
        var q = DeliveryQueue(maxInFlight: 10, maxInFlightPerDevice: 1, batchSize: 10)
        for (id, device) in [(1, "A"), (2, "A"), (3, "B"), (4, "B")] { _ = q.see(UInt64(id)); q.enqueue(Self.notification(UInt64(id), device: device)) }
        let first = Self.drain(&q)
        let failures = q.retry(first[0])
        #expect(failures == 1)
        q.settle(first[1])
        #expect(Self.drain(&q).map(\.id) == [4], "A backs off, B goes on")
        q.endBackoff(device: "A")
        let again = Self.drain(&q)
        #expect(again.map(\.id) == [1], "the retried one first")
        let failuresAgain = q.retry(again[0])
        #expect(failuresAgain == 2, "consecutive failures count")
        q.endBackoff(device: "A")
        let last = q.next()
        #expect(last?.id == 1, "still the retried one first")
        if let last { q.settle(last) }
        #expect(q.devices["A"]?.failures == 0)
        #expect(q.checkInvariants().isEmpty)
    }

    @Test("dropping a device's waiting notifications leaves the one in flight")
    func drop() {
        var q = DeliveryQueue(maxInFlight: 10, maxInFlightPerDevice: 1, batchSize: 10)
        for id in 1...3 { _ = q.see(UInt64(id)); q.enqueue(Self.notification(UInt64(id), device: "A")) }
        let n = q.next()!
        let dropped = q.dropWaiting(device: "A")
        #expect(dropped.map(\.id) == [2, 3] && q.queued == 0)
        q.settle(n, alsoAcknowledge: dropped)
        let batch = q.takeBatch()
        #expect(batch.map(\.id) == [1, 2, 3])
        q.endCommit()
        #expect(q.devices.isEmpty, "an idle device is forgotten")
    }

    @Test("a random workload keeps the invariants")
    func randomized() {
        var generator = SystemRandomNumberGenerator()
        for perDevice in [1, 3] {
            var q = DeliveryQueue(maxInFlight: 7, maxInFlightPerDevice: perDevice, batchSize: 5)
            var flying: [PushNotification] = []
            var backingOff: Set<String> = []
            var next: UInt64 = 1
            for _ in 0..<5_000 {
                switch Int.random(in: 0..<6, using: &generator) {
                case 0:
                    _ = q.see(next)
                    q.enqueue(Self.notification(next, device: "D\(Int.random(in: 0..<5))"))
                    next += 1
                case 1:
                    if let n = q.next() {
                        flying.append(n)
                    }
                case 2:
                    if !flying.isEmpty { q.settle(flying.remove(at: Int.random(in: 0..<flying.count))) }
                case 3:
                    if !flying.isEmpty {
                        let n = flying.remove(at: Int.random(in: 0..<flying.count))
                        _ = q.retry(n)
                        backingOff.insert(n.deviceID)
                    }
                case 4:
                    if let d = backingOff.randomElement() { backingOff.remove(d); q.endBackoff(device: d) }
                default:
                    if q.committing > 0 { q.endCommit() } else { _ = q.takeBatch() }
                }
                let problems = q.checkInvariants()
                #expect(problems.isEmpty, "\(problems)")
                if !problems.isEmpty { return }
            }
        }
    }
}
