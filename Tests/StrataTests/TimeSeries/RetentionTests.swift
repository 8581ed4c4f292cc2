import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("TimeSeries retained range")
struct RetentionTests {
    static let base: Int64 = 1_700_000_000_000

    func segmentBytes(_ dir: TemporaryDirectory) -> Int {
        dir.list().filter { $0.hasSuffix(".seg") }.reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: dir.file(name))[.size] as? Int) ?? 0)
        }
    }

    @Test("count limit: exact from the append that exceeds it; latest and bounds follow")
    func countLimit() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("c", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(10)))
        for i in 0..<10 { try s.append(Int64(i)) }
        #expect(try s.query(.values).events.map(\.value) == Array(0..<10))
        try s.append(10)
        #expect(try s.query(.values).events.map(\.value) == Array(1...10))
        try s.append(contentsOf: (11..<1000).map { Int64($0) })
        let r = try s.query(.edits(.all))
        #expect(r.events.map(\.sequence) == Array(990..<1000))
        #expect(r.selectedCount == 10)
        #expect(try s.bounds() == SeriesBounds(count: 10, firstRetained: 990, next: 1000))
        #expect(try s.latest()?.value == 999)
        #expect(try s.query(.values.from(sequence: 5).next(3)).events.map(\.sequence) == [990, 991, 992])
        #expect(try s.query(.values.from(sequence: 5).previous(3)).events.isEmpty)
    }

    @Test("time limit: measured back from the latest event's timestamp")
    func timeLimit() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("t", of: Int64.self,
                                     options: TimeSeriesOptions(retainedRange: .last(.milliseconds(100))))
        for i in 0..<50 { try s.append(Int64(i), timestamp: SeriesTime.date(Self.base + Int64(i) * 10)) }
        // Latest at +490: kept are timestamps >= 390, i.e. 39…49.
        #expect(try s.query(.values).events.map(\.value) == Array(39..<50))
        // A jump far ahead discards everything but the new event.
        try s.append(99, timestamp: SeriesTime.date(Self.base + 100_000))
        #expect(try s.query(.values).events.map(\.value) == [99])
        #expect(try s.latest()?.value == 99)
        // Both limits: the stricter one wins.
        let b = try store.timeSeries("b", of: Int64.self,
                                     options: TimeSeriesOptions(retainedRange: .limit(5, last: .milliseconds(1_000))))
        for i in 0..<20 { try b.append(Int64(i), timestamp: SeriesTime.date(Self.base + Int64(i) * 400)) }
        #expect(try b.query(.values).events.map(\.value) == [17, 18, 19])
        try b.append(contentsOf: (20..<30).map { (value: Int64($0), timestamp: SeriesTime.date(Self.base + 7_600)) })
        #expect(try b.query(.values).events.map(\.value) == [25, 26, 27, 28, 29])
    }

    @Test("edits whose original was discarded: in edit views only; the original can no longer be edited")
    func editsOfDiscardedOriginals() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("d", of: String.self, options: TimeSeriesOptions(retainedRange: .limit(5)))
        try s.append(contentsOf: ["a", "b", "c", "d", "e"])
        try s.edit(originalSequence: 0, value: "A")   // seq 5: discards 0
        try s.edit(originalSequence: 1, value: "B")   // seq 6: discards 1
        #expect(try s.query(.values).events.map(\.value) == ["c", "d", "e"])
        #expect(try s.query(.edits(.all)).events.map(\.sequence) == [2, 3, 4, 5, 6])
        #expect(try s.query(.edits(.latest)).events.map(\.sequence) == [2, 3, 4, 5, 6])
        #expect(try s.query(.edits(.all)).events[3].originalEvent?.sequence == 0)
        #expect(throws: StrataError.self) { try s.edit(originalSequence: 0, value: "x") }
        try s.edit(originalSequence: 4, value: "E")    // seq 7: discards 2
        try s.edit(originalSequence: 4, value: "EE")   // seq 8: discards 3
        #expect(try s.query(.values).events.map(\.value) == ["EE"])
        #expect(try s.query(.values).events.map(\.sequence) == [8])
        #expect(try s.query(.edits(.all)).events.map(\.sequence) == [4, 5, 6, 7, 8])
        #expect(try s.query(.edits(.latest)).events.map(\.sequence) == [4, 5, 6, 8])
    }

    @Test("reopen: discarded events stay discarded; a new range applies at once")
    func reopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try openStore(dir)
            let s = try store.timeSeries("r", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(10)))
            try s.append(contentsOf: (0..<100).map { Int64($0) })
            try store.close()
        }
        do {
            let store = try openStore(dir)
            // Options given replace the stored ones: `.all` from now on. (Opened without options,
            // the series would keep `.limit(10)`: TimeSeriesTests.openingWithoutOptionsKeepsThem.)
            let s = try store.timeSeries("r", of: Int64.self, options: TimeSeriesOptions(retainedRange: .all))
            #expect(try s.query(.values).events.map(\.value) == Array(90..<100))
            try s.append(contentsOf: (100..<120).map { Int64($0) })
            #expect(try s.query(.values).events.count == 30)
            try store.close()
        }
        do {
            let store = try openStore(dir)
            let s = try store.timeSeries("r", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(3)))
            #expect(try s.query(.values).events.map(\.value) == [117, 118, 119])
            #expect(s.options.retainedRange == .limit(3))
            // Reopening in the same store with other options applies them to the shared state.
            let again = try store.timeSeries("r", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(2)))
            #expect(try s.query(.values).events.map(\.value) == [118, 119])
            #expect(try again.bounds().firstRetained == 118)
            try store.close()
        }
        do {
            let store = try openStore(dir)
            let s = try store.timeSeries("r", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(2)))
            #expect(try s.query(.values).events.map(\.value) == [118, 119])
            #expect(try s.bounds().next == 120)
            try store.close()
        }
    }

    @Test("compaction frees the space of discarded events; the cost of 'the last 10' does not grow")
    func compactionFreesBytes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir, small: true)
        defer { try? store.close() }
        let s = try store.timeSeries("big", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(10)))
        for chunk in 0..<40 { try s.append(contentsOf: (0..<1_000).map { Double(chunk * 1_000 + $0) }) }
        try store.sync()
        try store.compact()
        let before = segmentBytes(dir)
        for chunk in 40..<80 { try s.append(contentsOf: (0..<1_000).map { Double(chunk * 1_000 + $0) }) }
        try store.compact()
        let after = segmentBytes(dir)
        #expect(after < 16 * 1024, "segments hold \(after) bytes for 10 retained events")
        #expect(after <= before + 4096)
        #expect(try s.query(.values).events.map(\.value) == (79_990..<80_000).map(Double.init))
        // The records are really gone from the engine, not just hidden.
        let snapshot = try store.engine.snapshot()
        let prefix = EventRecord.seriesPrefix(s.state.id)
        let c = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var present = 0
        while try c.next() { present += 1 }
        // Settled events are chunks (FORMAT.md §14.6): the last 10 lie in at most two records,
        // and a chunk straddling the cutoff is kept whole.
        #expect(present >= 1 && present <= 2)
        var events = try SeriesEventCursor(snapshot: snapshot, prefix: prefix, from: 0, through: Int64.max - 1,
                                           reverse: false, path: "big")
        var stored = 0
        while try events.next() { stored += 1 }
        #expect(stored >= 10 && stored <= 2 * SeriesChunkBuilder.Limits.default.events)
    }

    @Test("the compaction filter drops nothing retained, also of series not open since the store opened")
    func filterKeepsRetained() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var r = SplitMix64(seed: 42)
        var expected: [String: [Int64]] = [:]
        let limits = [3, 50, 400, 0]   // 0: .all
        do {
            let store = try openStore(dir, small: true)
            var series: [TimeSeries<Int64>] = []
            for (i, n) in limits.enumerated() {
                series.append(try store.timeSeries("f/\(i)", of: Int64.self,
                                                   options: TimeSeriesOptions(retainedRange: n == 0 ? .all : .limit(n))))
            }
            for round in 0..<300 {
                let i = r.below(series.count)
                let k = 1 + r.below(40)
                let values = (0..<k).map { Int64(round * 100 + $0) }
                try series[i].append(contentsOf: values)
                expected["f/\(i)", default: []] += values
                if round % 100 == 99 { try store.compact() }
            }
            for (i, s) in series.enumerated() {
                let all = expected["f/\(i)"] ?? []
                let kept = limits[i] == 0 ? all : Array(all.suffix(limits[i]))
                #expect(try s.query(.values).events.map(\.value) == kept)
            }
            try store.close()
        }
        do {
            // Only series 0 is opened; compaction must keep everything of the others.
            let store = try openStore(dir, small: true)
            let s0 = try store.timeSeries("f/0", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(3)))
            try s0.append(contentsOf: (0..<100).map { Int64($0) })
            expected["f/0", default: []] += (0..<100).map { Int64($0) }
            try store.compact()
            for (i, n) in limits.enumerated() {
                let s = try store.timeSeries("f/\(i)", of: Int64.self,
                                             options: TimeSeriesOptions(retainedRange: n == 0 ? .all : .limit(n)))
                let all = expected["f/\(i)"] ?? []
                #expect(try s.query(.values).events.map(\.value) == (n == 0 ? all : Array(all.suffix(n))))
            }
            try store.close()
        }
    }

    @Test("a retention read that fails after a commit keeps the write and is reported in statistics")
    func failedRetentionReadIsReported() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("t", of: Int64.self,
                                     options: TimeSeriesOptions(retainedRange: .last(.milliseconds(100))))
        try s.append(0, timestamp: SeriesTime.date(Self.base))
        // Damage the stored event 0: the next append reads its timestamp to move the cutoff.
        var damage = WriteBatch()
        damage.putRaw(EventRecord.key(series: s.state.id, sequence: 0), [0xFF])
        try store.engine.write(damage)
        #expect(store.statistics.backgroundFailures == 0)
        let appended = try s.append(1, timestamp: SeriesTime.date(Self.base + 10))
        #expect(appended.sequence == 1, "the write committed and is acknowledged")
        let stats = store.statistics
        #expect(stats.backgroundFailures == 1)
        guard case .corrupted(let file, _, _)? = stats.lastBackgroundError else {
            Issue.record("expected a corrupted error, got \(String(describing: stats.lastBackgroundError))")
            return
        }
        #expect(file == "time series \"t\"")
        #expect(stats.writeError == nil, "a post-commit read does not fail the store")
        #expect(try s.bounds().next == 2)
    }
}
