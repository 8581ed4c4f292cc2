import Testing
@testable import Strata

/// The due-time heap of waiting updates.
@Suite struct PushDueIndexTests {
    @Test("pops in (due, subscription, item) order, whatever the order of inserts", arguments: [1, 2, 3])
    func order(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var heap = PushDueIndex()
        var reference: [PushDueIndex.Entry] = []
        for _ in 0..<5_000 {
            if rng.below(3) == 0, let top = heap.popMin() {
                reference.sort()
                #expect(top == reference.removeFirst())
            } else {
                let e = PushDueIndex.Entry(due: Int64(rng.below(1_000)) - 500, subscription: UInt64(rng.below(50)), item: rng.below(3))
                heap.insert(e)
                reference.append(e)
            }
            #expect(heap.count == reference.count)
            #expect(heap.min == reference.min())
        }
        var rest: [PushDueIndex.Entry] = []
        while let e = heap.popMin() { rest.append(e) }
        #expect(rest == reference.sorted())
    }
}

/// The due-time index in a store: what polls and the timer consult instead of every subscription.
@Suite struct PushDueIndexStoreTests {
    typealias TestClock = PushStateTests.TestClock

    @Test("a throttled item among 2,000 other subscriptions: every update comes due in order, across a reopen, and the index stays small")
    func indexStaysSmall() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        var store = try PushStateTests.open(dir, clock)
        var push = try store.pushNotifications()
        let device = try push.register(PushStateTests.apple).id
        for i in 0..<2_000 {
            var other = PushTimingTests.subscription(.merge)
            other.items = ["other/\(i)"]
            _ = try push.subscribe(other, device: device)
        }
        _ = try push.subscribe(PushTimingTests.subscription(.distinct, frequency: 10), device: device)   // 100 ms apart
        let prices = try store.timeSeries("prices/AAPL", of: JSON.self)
        var sent: [String] = []
        for p in 0..<1_500 {
            try prices.append(["last_price": .int(Int64(p))])
            if p % 3 != 0 { clock.advance(100) }   // one release per 100 ms: a backlog of up to ~500 waits
            if p % 50 == 0 {
                let pending = try push.pendingNotifications(limit: 1_000)
                sent += pending.map(\.payload)
                try push.acknowledge(pending)
                let (entries, live) = push.state.image.model.withLock { m in (m.due.count, m.subscriptions.count) }
                #expect(entries <= max(1_024, 2 * live), "stale entries are compacted away")
            }
        }
        clock.advance(1_000_000)   // every waiting update is due
        try store.close()
        store = try PushStateTests.open(dir, clock)
        defer { try? store.close() }
        push = try store.pushNotifications()
        sent += try push.pendingNotifications(limit: 10_000).map(\.payload)
        let values = sent.map { Int($0.dropFirst(6).dropLast(2))! }
        #expect(values == Array(0..<1_500), "every update, in order (DISTINCT, at most 1,000 waiting: none dropped here)")
        #expect(push.state.image.model.withLock { $0.due.count } == 0, "nothing waits any more")
    }
}
