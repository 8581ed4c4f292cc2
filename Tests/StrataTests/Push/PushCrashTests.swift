import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push kill -9", .serialized)
struct PushCrashTests {
    @Test("kill -9 during appends with a subscription: every acknowledged event has its notification, none without its event, each once")
    func killDuringAppends() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var acked = Set<UInt64>()
        for (round, seconds) in [1.0, 0.6, 0.8].enumerated() {
            let child = try CrashHelperProcess(["push", dir.path, String(round + 1)])
            let started = child.waitFor(timeout: 30) { $0.contains { $0.hasPrefix("ACK") } }
            #expect(started, "helper wrote no ACK: \(child.errorText)")
            child.run(for: seconds)
            child.killAndWait()
            #expect(child.errorText.isEmpty, "\(child.errorText)")
            for line in child.lines where line.hasPrefix("ACK ") {
                let f = line.split(separator: " ")
                guard f.count == 3, let first = UInt64(f[1]), let n = UInt64(f[2]) else { continue }
                for s in first..<(first + n) { acked.insert(s) }
            }
            // A clock hours ahead: every update S2 holds back is due.
            var options = StoreOptions()
            let ahead = Double(3_600 * (round + 1))
            options.clock = { Date().addingTimeInterval(ahead) }
            let store = try Store.open(at: dir.url, options: options)
            defer { try? store.close() }
            let next = try store.timeSeries("crash/push", of: Double.self).bounds().next
            let values = try store.timeSeries("crash/push", of: Double.self).query(.values).events.map(\.value)
            let push = try store.pushNotifications()
            var notified: [UInt64] = []
            var payloads: [UInt64: String] = [:]
            var merged: [UInt64] = []
            var batch = try push.pendingNotifications(limit: 1_000)
            var lastID: UInt64 = 0
            while !batch.isEmpty {
                for n in batch {
                    #expect(n.id > lastID, "ids increase")
                    lastID = n.id
                    let json = try JSON(parsing: n.payload)
                    if n.subscriptionID == "S2" {
                        guard case .string(let seq)? = json["merged"], let s = UInt64(seq) else {
                            Issue.record("payload \(n.payload)")
                            continue
                        }
                        merged.append(s)
                        continue
                    }
                    guard case .string(let seq)? = json["seq"], let s = UInt64(seq) else {
                        Issue.record("payload \(n.payload)")
                        continue
                    }
                    notified.append(s)
                    payloads[s] = n.payload
                }
                // The outbox is read in pages of ids: continue after the last.
                let all = try push.pendingNotifications(limit: 100_000)
                batch = Array(all.drop { $0.id <= lastID }.prefix(1_000))
            }
            #expect(notified == Array(0..<next), "one notification per event, in order, none for an event that is not there (round \(round))")
            // S2's waiting state survived the kill: released now, its newest notification is the newest event.
            #expect(merged.last == next - 1, "S2's last merged state \(merged.last.map(String.init) ?? "none"), events to \(next - 1)")
            #expect(merged == merged.sorted() && Set(merged).count == merged.count)
            #expect(acked.allSatisfy { $0 < next }, "an acknowledged event is missing")
            for (s, value) in values.enumerated().prefix(200) {
                #expect(payloads[UInt64(s)] == #"{"seq":"\#(s)","value":"\#(JSON.double(value).description)"}"#)
            }
            #expect(try push.subscriptions(device: "D1").count == 2)
        }
    }
}
