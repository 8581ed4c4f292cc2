import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Randomized sequences of updates, clock steps, polls, acknowledgements and reopens, checked
/// against a brute-force reference of API.md's timing rules.
@Suite struct PushTimingModelTests {
    typealias TestClock = PushStateTests.TestClock

    /// The reference: each subscription and item on its own, written from API.md's sentences.
    struct Reference {
        struct Sub {
            var mode: PushSubscription.Mode
            var items: [String]
            var buffer: Int                 // waiting updates kept (a requested size, else 1 MERGE / unlimited DISTINCT)
            var interval: Int64?            // ms between notifications; nil: no frequency limit
        }
        struct Item {
            var merged = ["", ""]
            var lastSent: Int64?
            var waiting: [[String]] = []
        }

        var subs: [Sub] = []
        var items: [[String: Item]] = []
        /// The outbox, per subscription and item: payloads not yet acknowledged, in order.
        var outbox: [String: [String]] = [:]

        static func payload(_ v: [String]) -> String { #"{"v":"\#(v[0])","w":"\#(v[1])"}"# }

        mutating func emit(_ s: Int, _ item: String, _ values: [String]) {
            outbox["S\(s + 1)/\(item)", default: []].append(Self.payload(values))
        }

        /// The waiting updates the timer would have released by `now`: each due an interval after
        /// the notification before it (a released one counts as sent when it became due).
        mutating func tick(_ s: Int, _ item: String, now: Int64) {
            guard let interval = subs[s].interval else { return }
            var state = items[s][item] ?? Item()
            while let first = state.waiting.first, let last = state.lastSent, last + interval <= now {
                state.waiting.removeFirst()
                state.lastSent = last + interval
                emit(s, item, first)
            }
            items[s][item] = state
        }

        mutating func update(_ item: String, v: String?, w: String?, now: Int64) {
            for s in subs.indices where subs[s].items.contains(item) {
                tick(s, item, now: now)
                var state = items[s][item] ?? Item()
                let values: [String]
                if subs[s].mode == .merge {
                    if let v { state.merged[0] = v }
                    if let w { state.merged[1] = w }
                    values = state.merged
                } else {
                    values = [v ?? "", w ?? ""]
                }
                if let interval = subs[s].interval {
                    if state.waiting.isEmpty && (state.lastSent.map { $0 + interval <= now } ?? true) {
                        state.lastSent = now
                        emit(s, item, values)
                    } else {
                        // MERGE keeps the latest state; a full DISTINCT buffer drops the oldest.
                        if state.waiting.count == subs[s].buffer {
                            if subs[s].mode == .merge { state.waiting.removeLast() } else { state.waiting.removeFirst() }
                        }
                        state.waiting.append(values)
                    }
                } else {
                    emit(s, item, values)
                }
                items[s][item] = state
            }
        }

        mutating func poll(now: Int64) {
            for s in subs.indices { for item in subs[s].items { tick(s, item, now: now) } }
        }
    }

    static func check(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        var store = try PushStateTests.open(dir, clock)
        defer { try? store.close() }
        var push = try store.pushNotifications()
        let device = try push.register(PushStateTests.apple).id
        var ref = Reference()
        let allItems = ["a", "b"]
        for s in 0..<Int.random(in: 1...4, using: &rng) {
            let mode: PushSubscription.Mode = Bool.random(using: &rng) ? .merge : .distinct
            var sub = PushSubscription(mode: mode, items: Bool.random(using: &rng) ? allItems : [allItems[s % 2]], fields: ["v", "w"])
            sub.notificationFormat = #"{"v":"${v}","w":"${w}"}"#
            let buffer = [nil, 1, 2, 3, -1].randomElement(using: &rng)!
            sub.requestedBufferSize = buffer.map { $0 < 0 ? .unlimited : .limited($0) }
            let frequency = [nil, 0.5, 1, 2, 4, 3].randomElement(using: &rng)!
            sub.requestedMaxFrequency = frequency.map { .limited($0) }
            let id = try push.subscribe(sub, device: device).subscriptionID
            #expect(id == "S\(s + 1)")
            let size = buffer.map { $0 < 0 ? PushSubscription.maxWaiting : $0 } ?? (mode == .merge ? 1 : PushSubscription.maxWaiting)
            ref.subs.append(.init(mode: mode, items: sub.items, buffer: size,
                                  interval: frequency.map { Int64((1_000 / $0).rounded(.up)) }))
            ref.items.append([:])
        }
        var next = 0
        for step in 0..<200 {
            let now = SeriesTime.milliseconds(clock.now)!
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<45:
                let item = allItems.randomElement(using: &rng)!
                next += 1
                var value: [String: JSON] = [:]
                let (hasV, hasW) = [(true, true), (true, false), (false, true)].randomElement(using: &rng)!
                if hasV { value["v"] = .int(Int64(next)) }
                if hasW { value["w"] = .int(Int64(-next)) }
                try store.timeSeries(item, of: JSON.self).append(.object(value))
                ref.update(item, v: hasV ? "\(next)" : nil, w: hasW ? "\(-next)" : nil, now: now)
            case 45..<75:
                clock.advance(Int64.random(in: 0...1_200, using: &rng))
            case 75..<90:
                let pending = try push.pendingNotifications(limit: 10_000)
                ref.poll(now: now)
                var got: [String: [String]] = [:]
                for n in pending { got["\(n.subscriptionID)/\(n.item)", default: []].append(n.payload) }
                #expect(got == ref.outbox.filter { !$0.value.isEmpty }, "seed \(seed), step \(step)")
                #expect(pending.map(\.id) == pending.map(\.id).sorted())
                if Bool.random(using: &rng) {
                    for n in pending { try push.acknowledge(n) }
                    ref.outbox = [:]
                }
            default:
                try store.close()
                store = try PushStateTests.open(dir, clock)
                push = try store.pushNotifications()
            }
        }
        let pending = try push.pendingNotifications(limit: 10_000)
        ref.poll(now: SeriesTime.milliseconds(clock.now)!)
        var got: [String: [String]] = [:]
        for n in pending { got["\(n.subscriptionID)/\(n.item)", default: []].append(n.payload) }
        #expect(got == ref.outbox.filter { !$0.value.isEmpty }, "seed \(seed), at the end")
    }

    @Test("random updates, clock steps, polls, acknowledgements and reopens match the reference", arguments: 0..<24)
    func randomized(seed: UInt64) throws {
        try Self.check(seed: seed)
    }
}
