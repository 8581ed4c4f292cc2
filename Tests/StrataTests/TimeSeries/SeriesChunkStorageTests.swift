import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Settled events stored as chunks (FORMAT.md §14.6): every reader answers the same before and
/// after flushes and compactions rewrite the events, across reopen, with edits and retention.
@Suite("Time-series chunks in the store")
struct SeriesChunkStorageTests {
    static func stored<V>(_ s: TimeSeries<V>) throws -> SeriesStoredForm {
        try s.state.reader().0.storedForm()
    }

    /// Every event as (sequence, ms, author, original sequence, value) through the three views.
    static func everything<V: Equatable>(_ s: TimeSeries<V>) throws -> [[String]] {
        try [RangeQuery.values, .edits(.all), .edits(.latest)].map { q in
            try s.query(q).events.map { e in
                "\(e.sequence) \(SeriesTime.milliseconds(e.timestamp) ?? 0) \(e.author) \(e.originalEvent?.sequence ?? 0) \(e.value)"
            }
        }
    }

    @Test("Double, Int64 and String series: the same answers from event records and from chunks, before and after reopen")
    func sameAnswers() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        var store = try openStore(dir, clock: clock)
        var r = SplitMix64(seed: 7)
        var doubles = try store.timeSeries("d", of: Double.self)
        var integers = try store.timeSeries("i", of: Int64.self)
        var strings = try store.timeSeries("s", of: String.self)
        var price = 100.0
        for i in 0..<3_000 {
            clock.advance(Int64(r.below(3)))
            price = (price + Double(r.below(200)) / 100 - 1).rounded(toPlaces: 2)
            let author = i % 7 == 0 ? "bob" : "tester"
            try doubles.append(price, timestamp: clock.now, author: author)
            try integers.append(Int64(r.below(1_000_000)) - 500_000, timestamp: clock.now, author: author)
            try strings.append(String(repeating: "x", count: r.below(40)), timestamp: clock.now, author: author)
            if i % 500 == 499 {
                try doubles.edit(originalSequence: UInt64(r.below(i)), value: -1.5)
                try integers.edit(originalSequence: UInt64(r.below(i)), value: Int64.min)
                try strings.edit(originalSequence: UInt64(r.below(i)), value: "é")
            }
        }
        // A NaN with a payload and a negative zero keep their bits.
        try doubles.append(Double(nan: 0x1234, signaling: false))
        try doubles.append(-0.0)
        try doubles.append(.infinity)
        let before = try (Self.everything(doubles), Self.everything(integers), Self.everything(strings))
        #expect(try Self.stored(doubles).chunks == 0)

        try store.compact()
        for (name, form, total) in try [("d", Self.stored(doubles), 3_009), ("i", Self.stored(integers), 3_006),
                                         ("s", Self.stored(strings), 3_006)] {
            #expect(form.chunks >= 6, "\(name): \(form)")
            #expect(form.eventRecords <= 1, "\(name): \(form)")
            #expect(form.chunkedEvents + form.eventRecords == UInt64(total), "\(name): \(form)")
            #expect(form.edits == 6, "\(name): \(form)")
        }
        #expect(try (Self.everything(doubles), Self.everything(integers), Self.everything(strings)) == before)
        let last = try #require(try doubles.latest())
        #expect(last.value == .infinity && last.sequence == 3_008)
        let nan = try doubles.query(.values.from(sequence: 3_006).next(0)).events
        #expect(nan.first?.value.bitPattern == Double(nan: 0x1234, signaling: false).bitPattern)
        #expect(try doubles.query(.values.from(sequence: 3_007).next(0)).events.first?.value.bitPattern == (-0.0).bitPattern)

        try store.close()
        store = try openStore(dir, clock: clock)
        defer { try? store.close() }
        doubles = try store.timeSeries("d", of: Double.self)
        integers = try store.timeSeries("i", of: Int64.self)
        strings = try store.timeSeries("s", of: String.self)
        #expect(try (Self.everything(doubles), Self.everything(integers), Self.everything(strings)) == before)
        #expect(try doubles.latest()?.sequence == 3_008)
        #expect(try doubles.bounds().next == 3_009)
        // Appends and an edit of a chunked original continue where they were.
        let m = try doubles.edit(originalSequence: 10, value: 42)
        #expect(m.sequence == 3_009)
        #expect(try doubles.query(.values.from(sequence: 10).next(0)).events.first?.value == 42)
        #expect(try doubles.query(.values.from(sequence: 10).next(0)).events.first?.originalEvent?.sequence == 10)
        try doubles.append(1)
        try store.compact()
        #expect(try doubles.query(.values.from(sequence: 10).next(0)).events.first?.value == 42)
        #expect(try doubles.latest()?.sequence == 3_010)
    }

    @Test("events stored one record each, as earlier versions stored them, read the same and are chunked by the next compaction")
    func earlierStores() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var store = try openStore(dir)
        var s = try store.timeSeries("old", of: Double.self)
        try s.append(contentsOf: (0..<2_000).map { (Double($0) / 4, Date(timeIntervalSince1970: 1_700_000_000)) })
        try s.edit(originalSequence: 7, value: -1)
        // No transform: the events reach segments as records, as before chunks existed.
        store.engine.setRecordTransform(keyspace: Keyspace.timeSeriesEvents.id, nil)
        try store.compact()
        #expect(try Self.stored(s).chunks == 0 && Self.stored(s).eventRecords == 2_001)
        let before = try Self.everything(s)
        try store.close()
        store = try openStore(dir)
        defer { try? store.close() }
        s = try store.timeSeries("old", of: Double.self)
        #expect(try Self.everything(s) == before)
        try store.compact()
        let form = try Self.stored(s)
        #expect(form.chunks == 4 && form.eventRecords == 0, "\(form)")
        #expect(try Self.everything(s) == before)
    }

    @Test("flushes of a small memtable make partial chunks; compaction joins them into full ones")
    func partialChunksJoin() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir, small: true)
        defer { try? store.close() }
        let s = try store.timeSeries("walk", of: Double.self)
        var values: [Double] = []
        for i in 0..<20 {
            let batch = (0..<400).map { Double(i * 400 + $0) / 4 }
            values += batch
            try s.append(contentsOf: batch.map { ($0, Date(timeIntervalSince1970: 1_700_000_000)) })
        }
        try store.compact()
        let form = try Self.stored(s)
        #expect(form.chunkedEvents == 8_000 && form.eventRecords == 0)
        // 8,000 events in chunks of at most 512: 16 chunks when the runs were joined.
        #expect(form.chunks == 16, "\(form)")
        #expect(try s.query(.values).events.map(\.value) == values)
        #expect(try s.query(.values.from(sequence: 3_333).next(1_000)).events.map(\.value) == Array(values[3_333...4_333]))
        #expect(try s.query(.values.fromLast(700)).events.map(\.value) == Array(values.suffix(700)))
        #expect(try s.query(.values.fromLast(700)).events.map(\.value) == Array(values.suffix(700)))
        #expect(try s.query(.values.from(sequence: 100).to(sequence: 90)).events.map(\.value) == Array(values[90...100]))
    }

    @Test("time queries over chunks: binary search by timestamp lands inside chunks and between them")
    func timeQueries() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("t", of: Int64.self)
        let base: Int64 = 1_700_000_000_000
        // Runs of equal timestamps, some spanning chunk boundaries.
        let times = (0..<5_000).map { base + Int64($0 / 7) * 3 }
        try s.append(contentsOf: times.enumerated().map { (Int64($0.offset), SeriesTime.date($0.element)) })
        var expected: [[UInt64]] = []
        let probes = stride(from: base - 5, to: base + 2_200, by: 37).map { $0 }
        for t in probes {
            expected.append(try s.query(.values.from(SeriesTime.date(t)).next(3)).events.map(\.sequence))
        }
        try store.compact()
        #expect(try Self.stored(s).chunks >= 9)
        for (t, e) in zip(probes, expected) {
            let got = try s.query(.values.from(SeriesTime.date(t)).next(3)).events.map(\.sequence)
            #expect(got == e, "at \(t)")
            let first = times.firstIndex { $0 >= t }.map(UInt64.init)
            #expect(got.first == first, "at \(t)")
        }
        let recent = try s.query(.values.fromLast(.milliseconds(10))).events.map(\.sequence)
        #expect(recent == Array(4_977...4_999))
    }

    @Test("retention over chunks: count and time limits discard whole chunks, keep the one straddling the cutoff, and survive reopen")
    func retention() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        var store = try openStore(dir, clock: clock)
        var counted = try store.timeSeries("count", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(1_000)))
        var timed = try store.timeSeries("time", of: Double.self, options: TimeSeriesOptions(retainedRange: .last(.milliseconds(2_000))))
        for i in 0..<6_000 {
            clock.advance(1)
            try counted.append(Double(i))
            try timed.append(Double(i))
            if i % 1_500 == 1_499 { try store.compact() }
        }
        try store.compact()
        #expect(try counted.bounds().firstRetained == 5_000)
        #expect(try timed.bounds().firstRetained == 3_999)
        #expect(try counted.query(.values).events.map(\.value) == (5_000..<6_000).map(Double.init))
        #expect(try timed.query(.values).events.map(\.value) == (3_999..<6_000).map(Double.init))
        // Whole chunks below the cutoff are gone; at most one straddles it.
        let form = try Self.stored(counted)
        #expect(form.chunkedEvents + form.eventRecords < 1_000 + 512, "\(form)")
        try store.close()
        store = try openStore(dir, clock: clock)
        defer { try? store.close() }
        counted = try store.timeSeries("count", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(1_000)))
        timed = try store.timeSeries("time", of: Double.self, options: TimeSeriesOptions(retainedRange: .last(.milliseconds(2_000))))
        #expect(try counted.bounds().firstRetained == 5_000)
        #expect(try timed.bounds().firstRetained == 3_999)
        #expect(try counted.query(.values.from(sequence: 4_990).next(20)).events.first?.sequence == 5_000)
        // The time limit advances through chunked events, one walk per write.
        clock.advance(1_000)
        try timed.append(-1)
        #expect(try timed.bounds().firstRetained == 4_999)
        #expect(try timed.query(.values).events.count == 1_002)
    }

    @Test("a subscription's initial range comes from chunks")
    func subscriptionRange() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try await store.timeSeries("sub", of: Double.self,
                                           options: TimeSeriesOptions(subscriptionRange: .limit(600)))
        try await s.append(contentsOf: (0..<2_000).map { (Double($0), Date(timeIntervalSince1970: 1_700_000_000)) })
        try await store.compact()
        #expect(try Self.stored(s).chunks > 0)
        var seen: [Double] = []
        for try await e in s.subscribe() {
            seen.append(e.value)
            if seen.count == 600 { break }
        }
        #expect(seen == (1_400..<2_000).map(Double.init))
    }

    @Test("a crafted chunk whose key disagrees with its events, or that does not decode, is a corruption error naming the series")
    func craftedChunks() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("bad", of: Double.self)
        try s.append(contentsOf: (0..<40).map { (Double($0), Date(timeIntervalSince1970: 1_700_000_000)) })
        let id = s.state.id
        // Events 10…14 as a chunk, but put where event 20 was; garbage where event 30 was.
        let chunk = SeriesChunk(firstSequence: 10, timestamps: Array(repeating: 0, count: 5), authors: Array(repeating: 0, count: 5),
                                originals: Array(repeating: nil, count: 5), values: .doubles([1, 2, 3, 4, 5]))
        var batch = CommitBatch()
        batch.records.putRaw(EventRecord.key(series: id, sequence: 20), try chunk.encode())
        batch.records.putRaw(EventRecord.key(series: id, sequence: 30), [SeriesChunk.marker, 1, 0xFF])
        try store.engine.commit(batch)
        let reader = try s.state.reader().0
        var c = try reader.events(from: 0, through: 25)
        var seen = 0
        do {
            while try c.next() { seen += 1 }
            Issue.record("no error")
        } catch let StrataError.corrupted(file, _, reason) {
            #expect(file == "time series \"bad\"")
            #expect(reason.contains("chunk ending at 20 holds 10…14"), "\(reason)")
        }
        #expect(seen == 20)
        // Walks that end before a damaged entry do not read it.
        var before = try reader.events(from: 0, through: 19)
        seen = 0
        while try before.next() { seen += 1 }
        #expect(seen == 20)
        var d = try reader.events(from: 25, through: 35)
        #expect(throws: StrataError.self) { while try d.next() {} }
        #expect(throws: StrataError.self) { _ = try reader.storedForm() }
        #expect(throws: StrataError.self) { _ = try s.query(.values) }
        #expect(throws: StrataError.self) { _ = try s.query(.values.from(sequence: 30).next(0)) }
        #expect(try s.query(.values.from(sequence: 5).next(4)).events.map(\.value) == [5, 6, 7, 8, 9])
        // A chunk claiming sequences above Int64.max under an ordinary key: an error, not a trap.
        let huge = SeriesChunk(firstSequence: UInt64.max - 4, timestamps: Array(repeating: 0, count: 5),
                               authors: Array(repeating: 0, count: 5), originals: Array(repeating: nil, count: 5),
                               values: .doubles([1, 2, 3, 4, 5]))
        var crafted = CommitBatch()
        crafted.records.putRaw(EventRecord.key(series: id, sequence: 3), try huge.encode())
        try store.engine.commit(crafted)
        #expect(throws: StrataError.self) { _ = try s.query(.values.from(sequence: 3).next(0)) }
        #expect(throws: StrataError.self) { _ = try s.query(.values.from(sequence: 2).next(2)) }
    }

    @Test("an undecodable chunk met by a flush and a compaction is kept byte for byte, counted in statistics and logged once with its key")
    func undecodableChunkIsKeptAndCounted() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (logger, record) = CapturingLogHandler.logger(level: .error)
        var options = StoreOptions(durability: .buffered)
        options.logger = logger
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let s = try store.timeSeries("d", of: Double.self)
        for i in 0..<10 { try s.append(Double(i)) }
        try store.compact()
        let key = EventRecord.key(series: s.state.id, sequence: 9)
        var chunk = try #require(try store.engine.get(key))
        #expect(chunk.withUnsafeBytes { SeriesChunk.isChunk($0) }, "events 0...9 are one chunk")
        chunk.removeLast(3)  // its last column cut short: it no longer decodes
        var batch = WriteBatch()
        batch.putRaw(key, chunk)
        try store.engine.write(batch)
        #expect(store.statistics.damage == 0)

        try store.compact()
        #expect(try store.engine.get(key) == chunk, "the damaged chunk is copied through, never dropped")
        let stats = store.statistics
        #expect(stats.damage >= 2, "met by the flush, then by the compaction")
        #expect(stats.damageByComponent == [.recordTransform(keyspace: Keyspace.timeSeriesEvents.id): stats.damage])
        let last = try #require(stats.lastDamage)
        #expect(last.component == .recordTransform(keyspace: 2))
        #expect(last.subject == TupleKey.describe(key))
        guard case .corrupted = last.error else {
            Issue.record("expected a corruption, got \(last.error)")
            return
        }
        #expect(stats.backgroundFailures == 0 && stats.writeError == nil, "the flush and the compaction succeeded")
        try store.close()
        let errors = record.at(.error)
        #expect(errors.count == 1, "logged once a minute at most: \(record.all)")
        #expect(errors.first?.metadata["component"] == "record transform of keyspace 2")
        #expect(errors.first?.metadata["subject"] == TupleKey.describe(key))
    }
}

private extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let f = pow(10, Double(places))
        return (self * f).rounded() / f
    }
}
