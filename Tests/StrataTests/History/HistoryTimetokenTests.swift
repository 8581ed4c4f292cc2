import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Timetokens: the value type, and the store's guarantee that the timetokens it assigns are unique
// and strictly increasing across all channels — when the clock goes back, when publishes land in
// the same 100 ns, across a reopen, and with publishers on several threads.

@Suite struct HistoryTimetokenTests {
    @Test func valueType() throws {
        let date = Date(timeIntervalSince1970: 1_721_845_903.616)
        let tt = Timetoken(date: date)
        #expect(tt.rawValue == 17_218_459_036_160_000)
        #expect(abs(tt.date.timeIntervalSince1970 - date.timeIntervalSince1970) < 1e-6)
        #expect(Timetoken(date: Date(timeIntervalSince1970: -5)) == .zero)
        #expect(Timetoken(date: .distantFuture).rawValue > tt.rawValue)
        #expect(Timetoken(5) < Timetoken(6))
        #expect(Timetoken(5) - 1 == Timetoken(4))
        #expect(Timetoken.zero - 1 == .zero)
        #expect(Timetoken(.max) + 1 == Timetoken(.max))
        #expect(tt.description == "17218459036160000")
        let data = try JSONEncoder().encode([tt])
        #expect(String(decoding: data, as: UTF8.self) == "[17218459036160000]")
        #expect(try JSONDecoder().decode([Timetoken].self, from: data) == [tt])
    }

    @Test func strictlyIncreasingWhenTheClockGoesBackAndStandsStill() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = HistoryTestClock()
        let options = HistoryTestStore.options(clock: clock)
        var store = try Store.open(at: dir.url, options: options)
        var a = try store.channel("a", of: String.self)
        var b = try store.channel("b", of: String.self)
        var all: [Timetoken] = []
        let start = clock.now
        all.append(try a.publish("1"))
        #expect(all[0].rawValue == start, "the timetoken is the clock's reading")
        all.append(try b.publish("2"))                     // same 100 ns
        all += try a.publish(contentsOf: ["3", "4", "5"])  // same 100 ns, a batch
        clock.back(10_000_000)                             // one second back
        all.append(try b.publish("6"))
        all += try b.publish(contentsOf: ["7", "8"])
        clock.set(start + 2)                               // forward, still below the last
        all.append(try a.publish("9"))
        #expect(all.map(\.rawValue) == (0..<9).map { start + UInt64($0) })
        clock.advance(1_000)
        all.append(try a.publish("10"))
        #expect(all.last!.rawValue == start + 1_002)

        // Across a reopen with the clock far back, new timetokens stay above every old one,
        // also above a timetoken whose message was deleted.
        try b.deleteMessages()
        try store.close()
        clock.set(start - 50_000_000)
        store = try Store.open(at: dir.url, options: options)
        a = try store.channel("a", of: String.self)
        b = try store.channel("b", of: String.self)
        let next = try b.publish("11")
        #expect(next.rawValue == all.last!.rawValue + 1)
        #expect(try a.publish("12") == next + 1)
        try store.close()
    }

    @Test func uniqueAndOrderedAcrossConcurrentPublishers() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = HistoryTestClock()
        let store = try await Store.open(at: dir.url, options: HistoryTestStore.options(clock: clock))
        defer { try? store.close() }
        let threads = 6
        let perThread = 300
        let channels = try (0..<3).map { try store.channel("c\($0)", of: Int64.self) }
        // Readers of one channel must never see a message appear below one they saw.
        let stop = Atomic<Bool>(false)
        let reader = Task.detached {
            // A page holds every message of [start, end] at its snapshot: a later page must not
            // show one in that range that it did not.
            var previous: (tts: Set<Timetoken>, start: Timetoken, end: Timetoken)?
            var problems = 0
            var pages = 0
            while !stop.load(ordering: .relaxed) {
                let page = try channels[0].history(limit: 100)
                pages += 1
                if let p = previous {
                    for m in page.messages where m.timetoken >= p.start && m.timetoken <= p.end && !p.tts.contains(m.timetoken) {
                        problems += 1
                    }
                }
                if let s = page.start, let e = page.end { previous = (Set(page.messages.map(\.timetoken)), s, e) }
            }
            return (problems, pages)
        }
        let results = await withTaskGroup(of: [(Int, Timetoken)].self) { group in
            for t in 0..<threads {
                group.addTask {
                    var mine: [(Int, Timetoken)] = []
                    for i in 0..<perThread {
                        let c = (t + i) % channels.count
                        if i % 50 == 0 { clock.back(3) } else if i % 7 == 0 { clock.advance(1) }
                        if i % 10 == 0 {
                            for tt in (try? channels[c].publish(contentsOf: [Int64(t), Int64(t)])) ?? [] { mine.append((c, tt)) }
                        } else if let tt = try? channels[c].publish(Int64(t)) {
                            mine.append((c, tt))
                        }
                    }
                    return mine
                }
            }
            var all: [[(Int, Timetoken)]] = []
            for await r in group { all.append(r) }
            return all
        }
        stop.store(true, ordering: .relaxed)
        let (problems, pages) = try await reader.value
        #expect(problems == 0)
        #expect(pages > 0)
        var every: [Timetoken] = []
        for mine in results {
            // Each thread sees its own timetokens increase.
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0.1 < $1.1 })
            every += mine.map(\.1)
        }
        let total = threads * (perThread + perThread / 10)
        #expect(every.count == total)
        #expect(Set(every).count == total, "no timetoken assigned twice")
        // Every message is stored under its timetoken, in its channel.
        for (c, channel) in channels.enumerated() {
            var stored: [Timetoken] = []
            var page = try await channel.history(limit: 100)
            while true {
                stored.insert(contentsOf: page.messages.map(\.timetoken), at: 0)
                guard page.hasMore, let s = page.start else { break }
                page = try await channel.history(start: s, limit: 100)
            }
            let expected = results.flatMap { $0 }.filter { $0.0 == c }.map(\.1).sorted()
            #expect(stored == expected)
        }
    }
}
