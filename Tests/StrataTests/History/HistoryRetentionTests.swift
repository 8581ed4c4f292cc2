import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Channel options: retention (messages older than a duration are gone) and limit (the newest n
// are kept) — at once for every read, for good (a clock going back, a reopen or new options do not
// bring messages back), and physically after compaction.

@Suite struct HistoryRetentionTests {
    private static let second: UInt64 = 10_000_000

    /// The records of a channel physically in the engine (what compaction left), deleted ones aside.
    private func physicalRecords(_ channel: Channel<some Codable & Sendable>, _ store: Store) throws -> Int {
        let keys = channel.state.keys
        let cursor = try store.engine.snapshot().cursor(lower: keys.prefix, upper: keys.end)
        var n = 0
        while try cursor.next() { n += 1 }
        return n
    }

    @Test func retention() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = HistoryTestClock()
        let options = HistoryTestStore.options(clock: clock, small: true)
        var store = try Store.open(at: dir.url, options: options)
        var room = try store.channel("room", of: String.self, options: ChannelOptions(retention: .seconds(10)))
        let t0 = clock.now
        var tts: [Timetoken] = []
        for i in 0..<20 {
            tts += try room.publish(contentsOf: (0..<50).map { "message \(i)/\($0) " + String(repeating: "x", count: 100) })
            clock.advance(Self.second)
        }
        // now = t0 + 20 s: messages before t0 + 10 s are gone.
        #expect(clock.now == t0 + 20 * Self.second)
        let visible = tts.filter { $0.rawValue >= t0 + 10 * Self.second }
        #expect(visible.count == 500)
        #expect(try room.messageCount(since: .zero) == 500)
        #expect(try room.history(limit: 100, reverse: true).messages.first?.timetoken == visible.first)
        #expect(try room.history(start: visible.first!, limit: 100).messages.isEmpty)
        #expect(try store.fetchHistory(channels: ["room"], limit: 1)["room"]?.hasMore == true)

        // The clock going back does not bring them back.
        clock.back(5 * Self.second)
        #expect(try room.messageCount(since: .zero) == 500)

        // Nor does a reopen with a longer retention. (Expiry seen only by reads is not persisted:
        // a clock that is back across a reopen could show messages again until the next publish.)
        clock.advance(5 * Self.second)
        try store.close()
        store = try Store.open(at: dir.url, options: options)
        room = try store.channel("room", of: String.self, options: ChannelOptions(retention: .seconds(1000)))
        #expect(try room.messageCount(since: .zero) == 500)
        #expect(room.options.retention == .seconds(1000))

        // Compaction gives the space back.
        try store.close()
        store = try Store.open(at: dir.url, options: options)
        room = try store.channel("room", of: String.self)
        #expect(room.options == ChannelOptions(retention: .seconds(1000)), "options persist")
        let before = store.statistics.segmentBytes
        #expect(try physicalRecords(room, store) == 1000)
        try store.compact()
        #expect(try physicalRecords(room, store) == 500)
        #expect(store.statistics.segmentBytes < before * 3 / 4, "\(store.statistics.segmentBytes) of \(before) bytes")
        #expect(try room.messageCount(since: .zero) == 500)
        try store.close()
    }

    @Test func limit() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let options = HistoryTestStore.options(small: true)
        var store = try Store.open(at: dir.url, options: options)
        var room = try store.channel("room", of: Int64.self, options: ChannelOptions(limit: 5))
        var tts: [Timetoken] = []
        for i in 0..<12 { tts.append(try room.publish(Int64(i))) }
        #expect(try room.history().messages.map(\.message) == [7, 8, 9, 10, 11])
        #expect(try room.messageCount(since: .zero) == 5)
        tts += try room.publish(contentsOf: (12..<15).map { Int64($0) })
        #expect(try room.history().messages.map(\.message) == [10, 11, 12, 13, 14])
        tts += try room.publish(contentsOf: (15..<23).map { Int64($0) })  // a batch larger than the limit
        #expect(try room.history().messages.map(\.message) == [18, 19, 20, 21, 22])

        // Deleting the newest does not bring older ones back; new ones fill up to the limit.
        try room.deleteMessages(end: tts[21])
        #expect(try room.history().messages.map(\.message) == [18, 19, 20])
        try room.publish(23)
        #expect(try room.history().messages.map(\.message) == [18, 19, 20, 23])
        try room.publish(contentsOf: [24, 25])
        #expect(try room.history().messages.map(\.message) == [19, 20, 23, 24, 25])

        // Reopen: the same, and the count goes on from there.
        try store.close()
        store = try Store.open(at: dir.url, options: options)
        room = try store.channel("room", of: Int64.self)
        #expect(try room.history().messages.map(\.message) == [19, 20, 23, 24, 25])
        try room.publish(26)
        #expect(try room.history().messages.map(\.message) == [20, 23, 24, 25, 26])

        // A smaller limit applies at once; removing the limit keeps what it removed.
        room = try store.channel("room", of: Int64.self, options: ChannelOptions(limit: 2))
        #expect(try room.history().messages.map(\.message) == [25, 26])
        room = try store.channel("room", of: Int64.self, options: ChannelOptions())
        #expect(try room.history().messages.map(\.message) == [25, 26])
        try room.publish(contentsOf: [27, 28, 29])
        #expect(try room.history().messages.map(\.message) == [25, 26, 27, 28, 29])

        try store.compact()
        #expect(try physicalRecords(room, store) == 5)
        try store.close()
    }

    /// Random publishes, deletions, clock moves, reopens and compactions on channels with a limit,
    /// a retention or both, against a reference that keeps the newest `limit` of the messages not
    /// deleted and shows those younger than the retention.
    @Test(arguments: [UInt64(0x7E7E_0001), 0x7E7E_0002])
    func randomizedAgainstReference(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = HistoryTestClock()
        let options = HistoryTestStore.options(clock: clock, small: true)
        var store = try Store.open(at: dir.url, options: options)
        let configurations: [(String, ChannelOptions)] = [
            ("limit", ChannelOptions(limit: 7)),
            ("retention", ChannelOptions(retention: .microseconds(500))),   // 5,000 units
            ("both", ChannelOptions(retention: .microseconds(300), limit: 4)),
            ("big", ChannelOptions(limit: 60)),
        ]
        var kept: [String: [UInt64]] = [:]   // not deleted and within the limit
        var now: UInt64 = 0                  // the store's "now": the largest clock reading or timetoken
        for step in 0..<1200 {
            let (name, channelOptions) = configurations[random.below(configurations.count)]
            let channel = try store.channel(name, of: Int64.self, options: channelOptions)
            var list = kept[name] ?? []
            switch random.below(20) {
            case 0..<8:
                if random.chance(200) { clock.back(UInt64(random.below(3000))) } else { clock.advance(UInt64(random.below(400))) }
                let count = random.chance(300) ? 1 + random.below(12) : 1
                let tts = try channel.publish(contentsOf: (0..<count).map { _ in Int64(step) })
                list += tts.map(\.rawValue)
                now = max(now, tts.last?.rawValue ?? 0)
                if let limit = channelOptions.limit, list.count > limit { list.removeFirst(list.count - limit) }
            case 8:
                if !list.isEmpty {
                    let tt = list[random.below(list.count)]
                    let width = UInt64(random.below(2000))
                    try channel.deleteMessages(start: Timetoken(tt) - 1, end: Timetoken(tt + width))
                    list.removeAll { $0 >= tt && $0 <= tt + width }
                }
            case 9:
                try store.close()
                store = try Store.open(at: dir.url, options: options)
                continue
            case 10:
                try store.compact()
            default:
                break
            }
            now = max(now, clock.now)
            var visible = list
            if let retention = channelOptions.retentionUnits {
                visible = list.filter { $0 >= (now > retention ? now - retention : 0) }
            }
            let page = try channel.history(limit: 100)
            let got = page.messages.map(\.timetoken.rawValue)
            if got != Array(visible.suffix(100)) {
                Issue.record("\(name) at step \(step): got \(got.count) from \(got.first ?? 0), expected \(min(100, visible.count)) from \(visible.suffix(100).first ?? 0)")
                break
            }
            #expect(try channel.messageCount(since: .zero) == visible.count)
            kept[name] = list
        }
        try store.close()
    }
}
