import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Message history against a brute-force reference: random channels, random publishes (single and
// batched, with clock jumps back and forth), random deletions, and thousands of history, count
// and delete calls with bounds around existing timetokens, compared with what the bound rules of
// API.md select.

@Suite struct HistoryModelTests {
    @Test(arguments: [UInt64(0x4157_0001), 0x4157_0002, 0x4157_0003])
    func historyMatchesReference(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = HistoryTestClock()
        let options = HistoryTestStore.options(clock: clock, small: seed % 2 == 1)
        var store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let names = (0..<4).map { "room.\($0)" }
        var model: [String: [UInt64]] = [:]
        var texts: [UInt64: String] = [:]
        var lastAssigned: UInt64 = 0
        var checks = 0

        /// A timetoken near the interesting ones: existing messages ± 1, the extremes, random.
        func bound(_ tts: [UInt64]) -> UInt64? {
            switch random.below(8) {
            case 0: return nil
            case 1: return 0
            case 2: return clock.now + UInt64(random.below(1000))
            default:
                guard !tts.isEmpty else { return UInt64(random.below(100)) }
                let tt = tts[random.below(tts.count)]
                return tt + UInt64(random.below(3)) - 1
            }
        }

        for step in 0..<2500 {
            let name = names[random.below(names.count)]
            let channel = try store.channel(name, of: String.self)
            var tts = model[name] ?? []
            let roll = random.below(100)
            if roll < 30 {
                // Publish one or a batch, the clock moving by a random step (sometimes backwards).
                switch random.below(4) {
                case 0: clock.back(UInt64(random.below(50)))
                case 1: break
                default: clock.advance(UInt64(random.below(200)))
                }
                let count = random.chance(300) ? 1 + random.below(40) : 1
                let messages = (0..<count).map { _ in "m\(random.next() % 1_000_000)" }
                let assigned: [Timetoken]
                if count == 1 && random.chance(500) {
                    assigned = [try channel.publish(messages[0])]
                } else {
                    assigned = try channel.publish(contentsOf: messages)
                }
                for (tt, text) in zip(assigned, messages) {
                    #expect(tt.rawValue > lastAssigned, "timetokens strictly increase")
                    lastAssigned = tt.rawValue
                    tts.append(tt.rawValue)
                    texts[tt.rawValue] = text
                }
            } else if roll < 36 {
                let start = bound(tts)
                let end = bound(tts)
                try channel.deleteMessages(start: start.map { Timetoken($0) }, end: end.map { Timetoken($0) })
                let gone = Set(HistoryReference.selected(tts, start: start, end: end))
                tts.removeAll { gone.contains($0) }
            } else if roll < 46 {
                let since = bound(tts) ?? 0
                #expect(try channel.messageCount(since: Timetoken(since)) == tts.filter { $0 > since }.count,
                        "count since \(since), step \(step)")
                checks += 1
            } else if roll < 47 {
                try store.close()
                store = try Store.open(at: dir.url, options: options)
                continue
            } else if roll < 48 {
                try store.compact()
            } else {
                let start = bound(tts)
                let end = bound(tts)
                let limit = random.chance(200) ? 1 + random.below(100) : 1 + random.below(8)
                let reverse = random.chance(500)
                let page = try channel.history(start: start.map { Timetoken($0) }, end: end.map { Timetoken($0) },
                                               limit: limit, reverse: reverse)
                let expected = HistoryReference.page(tts, start: start, end: end, limit: limit, reverse: reverse)
                let got = page.messages.map(\.timetoken.rawValue)
                #expect(got == expected.timetokens,
                        "step \(step): history(start: \(String(describing: start)), end: \(String(describing: end)), limit: \(limit), reverse: \(reverse))")
                #expect(page.hasMore == expected.hasMore, "hasMore at step \(step)")
                #expect(page.start?.rawValue == expected.timetokens.first)
                #expect(page.end?.rawValue == expected.timetokens.last)
                for m in page.messages { #expect(m.message == texts[m.timetoken.rawValue]) }
                checks += 1
            }
            model[name] = tts
        }
        #expect(checks > 1400)
    }

    /// Paging backward with `start: page.start` and forward with `end: page.end + 1, reverse:
    /// true` both visit every message exactly once, whatever the page size.
    @Test func pagingCoversEveryMessageOnce() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options(small: true))
        defer { try? store.close() }
        let room = try store.channel("room", of: Int64.self)
        var all: [Timetoken] = []
        for i in 0..<23 { all += try room.publish(contentsOf: (0..<(1 + i % 17)).map { Int64(i * 100 + $0) }) }
        try room.deleteMessages(start: all[40], end: all[60])  // a hole: (40, 60]
        let expected = all.enumerated().filter { !(41...60).contains($0.offset) }.map(\.element)
        for limit in [1, 2, 7, 25, 100] {
            var seen: [Timetoken] = []
            var page = try room.history(limit: limit)
            while true {
                seen.insert(contentsOf: page.messages.map(\.timetoken), at: 0)
                guard page.hasMore, let oldest = page.start else { break }
                page = try room.history(start: oldest, limit: limit)
            }
            #expect(seen == expected, "backward, limit \(limit)")

            seen = []
            page = try room.history(limit: limit, reverse: true)
            while true {
                seen += page.messages.map(\.timetoken)
                guard page.hasMore, let newest = page.end else { break }
                page = try room.history(end: newest + 1, limit: limit, reverse: true)
            }
            #expect(seen == expected, "forward, limit \(limit)")
        }
    }

    @Test func deletingTheRangeAroundOneTimetokenDeletesExactlyIt() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = HistoryTestClock()
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options(clock: clock))
        defer { try? store.close() }
        let room = try store.channel("room", of: String.self)
        // Adjacent timetokens (same clock reading) and spread ones.
        var tts = try room.publish(contentsOf: ["a", "b", "c", "d"])
        clock.advance(1000)
        tts += [try room.publish("e")]
        for tt in [tts[2], tts[4], tts[0]] {
            let before = try room.history().messages.map(\.timetoken)
            try room.deleteMessages(start: tt - 1, end: tt)
            let after = try room.history().messages.map(\.timetoken)
            #expect(after == before.filter { $0 != tt })
        }
        #expect(try room.history().messages.map(\.message) == ["b", "d"])
        try room.deleteMessages()
        #expect(try room.history().messages.isEmpty)
        #expect(try room.messageCount(since: .zero) == 0)
    }

    @Test func reverseIsIgnoredWhenBothBoundsAreGiven() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let room = try store.channel("room", of: Int64.self)
        let tts = try room.publish(contentsOf: (0..<10).map { Int64($0) })
        let newest = try room.history(start: tts[9], end: tts[0], limit: 3, reverse: true)
        #expect(newest.messages.map(\.message) == [6, 7, 8])  // [tts[0], tts[9]) newest 3
        #expect(newest.hasMore)
        let swapped = try room.history(start: tts[0], end: tts[9], limit: 3, reverse: true)
        #expect(swapped.messages.map(\.message) == [7, 8, 9])  // (tts[0], tts[9]]
        let oldest = try room.history(end: tts[2], limit: 3, reverse: true)
        #expect(oldest.messages.map(\.message) == [2, 3, 4])
        let newestEnd = try room.history(end: tts[2], limit: 3)
        #expect(newestEnd.messages.map(\.message) == [7, 8, 9])
        let older = try room.history(start: tts[5], limit: 2, reverse: true)
        #expect(older.messages.map(\.message) == [0, 1])
        #expect(try room.history(start: tts[3], end: tts[3]).messages.isEmpty)
    }
}
