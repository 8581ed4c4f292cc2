import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Buffer sizes, frequency limits and waiting updates (API.md, "Push subscriptions"), timed by a
/// fake clock; the outbox and status streams.
@Suite struct PushTimingTests {
    typealias TestClock = PushStateTests.TestClock

    static func subscription(_ mode: PushSubscription.Mode, buffer: PushSubscription.BufferSize? = nil,
                             frequency: Double? = nil, trigger: String? = nil) -> PushSubscription {
        var sub = PushSubscription(mode: mode, items: ["prices/AAPL"], fields: ["last_price"])
        sub.notificationFormat = #"{"p":"${last_price}"}"#
        sub.requestedBufferSize = buffer
        sub.requestedMaxFrequency = frequency.map { .limited($0) }
        sub.triggerExpression = trigger
        return sub
    }

    /// Opens a store with one device subscribed with `sub`; returns the prices series to append to.
    struct Fixture {
        let store: Store
        let push: PushNotifications
        let device: String
        let subscriptionID: String
        let prices: TimeSeries<JSON>

        init(_ dir: TemporaryDirectory, _ clock: TestClock, _ sub: PushSubscription?) throws {
            let store = try PushStateTests.open(dir, clock)
            let push = try store.pushNotifications()
            let device = try push.register(PushStateTests.apple).id
            subscriptionID = try sub.map { try push.subscribe($0, device: device).subscriptionID ?? "" } ?? ""
            prices = try store.timeSeries("prices/AAPL", of: JSON.self)
            (self.store, self.push, self.device) = (store, push, device)
        }

        func append(_ p: Int) throws { try prices.append(["last_price": .int(Int64(p))]) }

        func appendAsync(_ p: Int) async throws { _ = try await prices.append(["last_price": .int(Int64(p))]) }

        static func make(_ dir: TemporaryDirectory, _ clock: TestClock, _ sub: PushSubscription?) async throws -> Fixture {
            try Fixture(dir, clock, sub)
        }

        /// The prices of the pending notifications, acknowledging them.
        func take() throws -> [String] {
            let pending = try push.pendingNotifications(limit: 1_000)
            for n in pending { try push.acknowledge(n) }
            return pending.map { String($0.payload.dropFirst(6).dropLast(2)) }
        }
    }

    @Test("MERGE, default buffer 1, 1 per second: the first update goes at once, later ones wait and only the latest state is kept")
    func mergeDefaultBuffer() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let f = try Fixture(dir, clock, Self.subscription(.merge, frequency: 1))
        defer { try? f.store.close() }
        try f.append(1)
        #expect(try f.take() == ["1"])
        clock.advance(100); try f.append(2)
        clock.advance(100); try f.append(3)
        #expect(try f.take() == [], "waiting for the interval")
        clock.advance(799)
        #expect(try f.take() == [])
        clock.advance(1)                                         // 1000 ms after the first notification
        #expect(try f.take() == ["3"], "released with no further update, the latest state only")
        clock.advance(500); try f.append(4)
        clock.advance(499)
        #expect(try f.take() == [])
        clock.advance(1)
        #expect(try f.take() == ["4"], "the interval counts from the released notification")
        clock.advance(5_000); try f.append(5)
        #expect(try f.take() == ["5"], "a long pause: at once")
    }

    @Test("DISTINCT with a buffer of 2: a full buffer drops the oldest waiting update; releases are spaced by the interval")
    func distinctBuffer() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let f = try Fixture(dir, clock, Self.subscription(.distinct, buffer: .limited(2), frequency: 1))
        defer { try? f.store.close() }
        try f.append(1)
        for p in 2...4 { clock.advance(10); try f.append(p) }     // 2 dropped: 3, 4 wait
        #expect(try f.take() == ["1"])
        clock.advance(970)                                       // t = 1000
        #expect(try f.take() == ["3"])
        clock.advance(999)
        #expect(try f.take() == [])
        clock.advance(1)
        #expect(try f.take() == ["4"])
    }

    @Test("DISTINCT unlimited: a late poll releases every update that came due meanwhile, each counted as sent when due")
    func latePoll() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let f = try Fixture(dir, clock, Self.subscription(.distinct, frequency: 2))   // one per 500 ms
        defer { try? f.store.close() }
        try f.append(1)
        clock.advance(1)
        for p in 2...5 { try f.append(p) }
        #expect(try f.take() == ["1"])
        clock.advance(1_599)                                     // t = 1600: 2 (500), 3 (1000), 4 (1500) due
        #expect(try f.take() == ["2", "3", "4"])
        try f.append(6)                                          // 5 due at 2000, 6 after it
        #expect(try f.take() == [])
        clock.advance(400)
        #expect(try f.take() == ["5"])
        clock.advance(500)
        #expect(try f.take() == ["6"])
    }

    @Test("an update arriving after the waiting one came due releases it first, then waits itself")
    func updateReleasesDue() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let f = try Fixture(dir, clock, Self.subscription(.distinct, frequency: 1))
        defer { try? f.store.close() }
        try f.append(1)
        clock.advance(10); try f.append(2)
        clock.advance(1_500); try f.append(3)                    // 2 went at 1000 (in this commit); 3 waits to 2000
        let pending = try f.push.pendingNotifications()
        #expect(pending.map(\.payload) == [#"{"p":"1"}"#, #"{"p":"2"}"#])
        #expect(try f.take() == ["1", "2"])
        clock.advance(489)
        #expect(try f.take() == [])
        clock.advance(1)
        #expect(try f.take() == ["3"])
    }

    @Test("without a frequency limit nothing waits, whatever the buffer")
    func unlimitedFrequency() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let f = try Fixture(dir, TestClock(), Self.subscription(.merge, buffer: .limited(3)))
        defer { try? f.store.close() }
        for p in 1...4 { try f.append(p) }
        #expect(try f.take() == ["1", "2", "3", "4"])
    }

    @Test("triggered notifications ignore the frequency limit")
    func triggeredExempt() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let f = try Fixture(dir, clock, Self.subscription(.distinct, frequency: 0.1, trigger: "Double.parseDouble(${last_price}) > 100"))
        defer { try? f.store.close() }
        try f.append(50)
        clock.advance(10); try f.append(150)
        #expect(try f.take() == ["150"])
        _ = try f.push.modify(f.subscriptionID, triggerExpression: nil, notificationFormat: nil)   // re-armed
        clock.advance(10); try f.append(200)                     // 10 ms later, under a 10 s interval
        #expect(try f.take() == ["200"])
    }

    @Test("waiting updates survive close and reopen, and are released after it")
    func waitingAcrossReopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        do {
            let f = try Fixture(dir, clock, Self.subscription(.distinct, buffer: .limited(5), frequency: 1))
            for p in 1...3 { try f.append(p); clock.advance(1) }
            #expect(try f.take() == ["1"])
            try f.store.close()
        }
        clock.advance(997)                                       // t = 1000
        let f = try Fixture(dir, clock, nil)
        defer { try? f.store.close() }
        let sub = try f.push.subscriptions(device: f.device)
        #expect(sub.first?.requestedBufferSize == .limited(5) && sub.first?.requestedMaxFrequency == .limited(1))
        #expect(try f.take() == ["2"])
        clock.advance(1_000)
        #expect(try f.take() == ["3"])
        let state = try #require(f.push.state.image.model.withLock { $0.subscriptions.values.first })
        #expect(state.timing[0]?.waiting.isEmpty == true && state.timing[0]?.lastSent != nil)
    }

    @Test("notifications(): first every pending due one, then each new one; again after a reopen until acknowledged; ends with .closed")
    func notificationStream() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        var firstIDs: [UInt64] = []
        do {
            let f = try await Fixture.make(dir, clock, Self.subscription(.distinct, frequency: 1))
            try await f.appendAsync(1)
            try await f.appendAsync(2)                                      // waits
            clock.advance(1_000)                                 // due: the stream's start releases it
            let stream = f.push.notifications()
            var it = stream.makeAsyncIterator()
            let a = try #require(try await it.next())
            let b = try #require(try await it.next())
            #expect([a.payload, b.payload] == [#"{"p":"1"}"#, #"{"p":"2"}"#])
            clock.advance(1_000)
            try await f.appendAsync(3)                          // due at once: yielded as it commits
            let c = try #require(try await it.next())
            #expect(c.payload == #"{"p":"3"}"# && c.id > b.id)
            try await f.appendAsync(4)                          // waits; nobody polls: the timer releases it
            clock.advance(1_000)
            let d = try #require(try await it.next())
            #expect(d.payload == #"{"p":"4"}"# && d.id > c.id)
            try await f.push.acknowledge(a)
            firstIDs = [b.id, c.id, d.id]
            try await f.store.close()
            await #expect(throws: StrataError.closed) { _ = try await it.next() }
        }
        let f = try await Fixture.make(dir, clock, nil)
        defer { try? f.store.close() }
        var it = f.push.notifications().makeAsyncIterator()
        let again = [try await it.next(), try await it.next(), try await it.next()].compactMap { $0?.id }
        #expect(again == firstIDs, "unacknowledged ones again after the reopen, oldest first")
    }

    @Test("statusChanges() reports subscribed, triggered, modified, deleted, suspended, resumed in commit order")
    func statusStream() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let f = try await Fixture.make(dir, TestClock(), nil)
        defer { try? f.store.close() }
        let stream = f.push.statusChanges()
        let s = try await f.push.subscribe(Self.subscription(.distinct, trigger: "${last_price} == \"7\""), device: f.device).subscriptionID ?? ""
        try await f.appendAsync(7)
        _ = try await f.push.modify(s, triggerExpression: nil, notificationFormat: #"{"q":1}"#)
        try await f.push.suspend(device: f.device)
        try await f.push.suspend(device: f.device)                     // already suspended: no change
        _ = try await f.push.register(PushStateTests.apple)
        try await f.push.unsubscribe(s)
        let d = f.device
        let expected: [PushStatusChange] = [
            .subscribed(subscriptionID: s, deviceID: d), .triggered(subscriptionID: s, deviceID: d),
            .modified(subscriptionID: s, deviceID: d), .suspended(deviceID: d), .resumed(deviceID: d),
            .deleted(subscriptionID: s, deviceID: d),
        ]
        var got: [PushStatusChange] = []
        for try await change in stream {
            got.append(change)
            if got.count == expected.count { break }
        }
        #expect(got == expected)
    }

    @Test("a suspended device's waiting updates wait until it registers again; setting a trigger drops them; coalescing keeps the newest")
    func suspendModifyCoalesce() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let f = try Fixture(dir, clock, Self.subscription(.distinct, frequency: 1))
        defer { try? f.store.close() }
        try f.append(1)
        clock.advance(1); try f.append(2)
        try f.push.suspend(device: f.device)
        clock.advance(2_000)
        #expect(try f.take() == ["1"])
        _ = try f.push.register(PushStateTests.apple)
        #expect(try f.take() == ["2"])
        for p in 3...5 { try f.append(p) }                       // 2 counts as sent at 1000: 3 goes now, 4 and 5 wait
        let sub = Self.subscription(.distinct, buffer: .limited(1), frequency: 1)
        #expect(try f.push.subscribe(sub, device: f.device, coalescing: true).subscriptionID == f.subscriptionID)
        clock.advance(1_000)
        #expect(try f.take() == ["3", "5"], "the new buffer of 1 kept the newest")
        try f.append(6)                                          // waits
        _ = try f.push.modify(f.subscriptionID, triggerExpression: "true", notificationFormat: nil)
        clock.advance(5_000)
        #expect(try f.take() == [], "a trigger sends at once: the waiting update was dropped")
        try f.append(7)
        #expect(try f.take() == ["7"])
    }

    @Test("a frequency or buffer that is not positive is refused; limited values are accepted and read back")
    func validation() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let f = try Fixture(dir, TestClock(), nil)
        defer { try? f.store.close() }
        for bad in [Self.subscription(.merge, buffer: .limited(0)), Self.subscription(.merge, frequency: 0),
                    Self.subscription(.merge, frequency: -1), Self.subscription(.merge, frequency: .infinity)] {
            #expect(throws: StrataError.self) { try f.push.subscribe(bad, device: f.device) }
        }
        let s = try f.push.subscribe(Self.subscription(.distinct, buffer: .limited(3), frequency: 0.5), device: f.device)
        #expect(s.requestedBufferSize == .limited(3) && s.requestedMaxFrequency == .limited(0.5))
        #expect(Self.subscription(.merge, frequency: 3).frequencyInterval == 334)
        #expect(Self.subscription(.merge, frequency: 5_000).frequencyInterval == 1)
        #expect(Self.subscription(.merge, frequency: 1e-300).frequencyInterval == 1_000_000_000_000_000)
    }

    @Test("a release the timer cannot make (no notification number left) is retried at each wake-up, counted as damage and logged once; the update keeps waiting")
    func timerFailureIsDamage() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        do {
            let f = try Fixture(dir, clock, Self.subscription(.distinct, frequency: 1))
            try f.store.close()
        }
        // One notification number is left.
        var counters = PushModel()
        counters.nextNotification = CounterLimit.max
        try Hardening.writeRaw(dir, [(PushLayout.countersKey, PushRecords.counters(counters))])

        let (logger, record) = CapturingLogHandler.logger(level: .error)
        var options = StoreOptions(durability: .buffered)
        options.clock = { clock.now }
        options.logger = logger
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let prices = try store.timeSeries("prices/AAPL", of: JSON.self)
        try prices.append(["last_price": .int(1)])                   // takes the last number
        clock.advance(10)
        try prices.append(["last_price": .int(2)])                   // waits for the frequency limit
        let stream = push.notifications()                        // starts the timer
        clock.advance(1_000)                                     // 2 is due: releasing it needs a number
        let deadline = Date().addingTimeInterval(20)
        while (store.statistics.damageByComponent[.pushTimer] ?? 0) < 3 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let stats = store.statistics
        #expect((stats.damageByComponent[.pushTimer] ?? 0) >= 3, "each wake-up counts: \(stats.damageByComponent)")
        let last = try #require(stats.lastDamage)
        #expect(last.component == .pushTimer)
        guard case .invalidArgument("notificationID", let message) = last.error else {
            Issue.record("expected the counter limit, got \(last.error)")
            return
        }
        #expect(message.contains("no notification number is left"), "\(message)")
        #expect(stats.writeError == nil, "the store goes on")
        #expect(push.state.image.model.withLock { m in m.subscriptions.values.contains { $0.timing.values.contains { !$0.waiting.isEmpty } } },
                "the update still waits")
        try store.close()
        _ = stream
        let errors = record.at(.error)
        #expect(errors.count == 1, "once a minute at most: \(record.all)")
        #expect(errors.first?.metadata["component"] == "push timer")
    }
}
