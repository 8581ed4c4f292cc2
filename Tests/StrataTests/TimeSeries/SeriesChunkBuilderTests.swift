import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The rewriter of keyspace 2 on its own (FORMAT.md §14.6): what it chunks, what it passes
/// through, and the order of what it emits.
@Suite("SeriesChunkBuilder")
struct SeriesChunkBuilderTests {
    typealias Record = (key: [UInt8], value: [UInt8])

    static func event(_ id: UInt64, _ s: UInt64, ts: UInt64 = 0, author: UInt64 = 0,
                      original: (UInt64, UInt64, UInt64)? = nil, value: [UInt8]) -> Record {
        var v: [UInt8] = []
        EventRecord.appendHeader(timestampDelta: ts, author: author,
                                 original: original.map { (sequence: $0.0, timestampDelta: $0.1, author: $0.2) }, to: &v)
        return (EventRecord.key(series: id, sequence: s), v + value)
    }

    static func double(_ x: Double) -> [UInt8] { withUnsafeBytes(of: x.bitPattern.littleEndian) { Array($0) } }

    /// Runs `records` through a builder (as the engine does) and returns what it emitted.
    static func run(_ records: [Record], kinds: [UInt64: UInt8], limits: SeriesChunkBuilder.Limits = .default,
                    damage: DamageRecorder = DamageRecorder(log: .silent)) throws -> [Record] {
        let b = SeriesChunkBuilder(limits: limits, kinds: kinds, damage: damage.reporter(for: .recordTransform(keyspace: 2)))
        var out: [Record] = []
        let emit: RecordRewriter.Emit = { k, v in out.append((Array(k), Array(v))) }
        for r in records {
            try r.key.withUnsafeBytes { k in try r.value.withUnsafeBytes { try b.add(key: k, value: $0, emit: emit) } }
            // The order invariant: nothing emitted beyond what was added.
            if let last = out.last { #expect(last.key.lexicographicallyPrecedes(r.key) || last.key == r.key) }
        }
        try b.finish(emit: emit)
        for (a, b) in zip(out, out.dropFirst()) { #expect(a.key.lexicographicallyPrecedes(b.key)) }
        return out
    }

    /// The events the records hold, expanded as readers expand them.
    static func expand(_ records: [Record]) throws -> [[UInt8]] {
        var events: [[UInt8]] = []
        for r in records {
            if r.value.first == SeriesChunk.marker {
                let c = try SeriesChunk.decode(r.value)
                for i in 0..<c.count { events.append(c.eventRecord(i)) }
            } else {
                events.append(r.value)
            }
        }
        return events
    }

    @Test("consecutive events of a known series become chunks keyed by their last sequence; limits split them")
    func chunksAndLimits() throws {
        let input: [Record] = (0..<1_300).map { (i: Int) -> Record in
            let s = UInt64(i)
            return Self.event(5, s, ts: s / 3, author: s % 2, value: Self.double(Double(i) / 8))
        }
        let out = try Self.run(input, kinds: [5: 1])
        #expect(out.count == 3)
        #expect(out.map { $0.key } == [511, 1_023, 1_299].map { EventRecord.key(series: 5, sequence: $0) })
        #expect(try Self.expand(out) == input.map { $0.value })
        let small = try Self.run(input, kinds: [5: 1], limits: .init(events: 100, valueBytes: 16 * 1024))
        #expect(small.count == 13)
        let bytes = try Self.run(input, kinds: [5: 1], limits: .init(events: 512, valueBytes: 80))
        #expect(bytes.count == 130)
        #expect(try Self.expand(bytes) == input.map { $0.value })
    }

    @Test("gaps, another series, an unknown series and malformed records end a run; what cannot be chunked passes through unchanged")
    func passThrough() throws {
        var input: [Record] = []
        input += (0..<10).map { Self.event(1, UInt64($0), value: Self.double(1)) }
        input += (12..<20).map { Self.event(1, UInt64($0), value: Self.double(2)) }  // a gap
        input.append(Self.event(1, 20, value: [1, 2, 3]))  // wrong size for a Double
        input += (21..<25).map { Self.event(1, UInt64($0), value: Self.double(3)) }
        input.append((EventRecord.key(series: 1, sequence: 25), [0x40]))  // unknown flags
        input += (0..<5).map { Self.event(2, UInt64($0), value: Self.double(4)) }  // unknown type
        input += (0..<5).map { Self.event(3, UInt64($0), value: Array("abc".utf8)) }  // bytes
        input.append((EventRecord.key(series: 3, sequence: 5) + [9], Self.double(0)))  // malformed key
        let damage = DamageRecorder(log: .silent)
        let out = try Self.run(input, kinds: [1: 1, 3: 0], damage: damage)
        let keys: [[UInt8]] = out.map { $0.key }
        var expected: [[UInt8]] = [9, 19, 20, 24, 25].map { EventRecord.key(series: 1, sequence: $0) }
        for s in 0..<5 as Range<UInt64> { expected.append(EventRecord.key(series: 2, sequence: s)) }
        expected.append(EventRecord.key(series: 3, sequence: 4))
        expected.append(EventRecord.key(series: 3, sequence: 5) + [9])
        #expect(keys == expected)
        #expect(out[2].value == input[18].value && out[4].value == input[23].value)
        #expect(try Self.expand(out) == input.map { $0.value })
        // The damaged ones (not the events of a series of unknown type) are reported with their keys.
        let reported = damage.counts
        #expect(reported.total == 3)
        #expect(reported.byComponent == [.recordTransform(keyspace: 2): 3])
        #expect(reported.recent.map(\.subject) == [input[18], input[23], input[34]].map { TupleKey.describe($0.key) })
    }

    @Test("edits keep their originals; an edit naming a later original passes through")
    func edits() throws {
        let input = [
            Self.event(1, 0, value: Self.double(1)),
            Self.event(1, 1, ts: 4, author: 1, value: Self.double(2)),
            Self.event(1, 2, ts: 5, author: 2, original: (0, 0, 0), value: Self.double(3)),
            Self.event(1, 3, ts: 5, original: (9, 0, 0), value: Self.double(4)),
            Self.event(1, 4, ts: 6, value: Self.double(5)),
        ]
        let damage = DamageRecorder(log: .silent)
        let out = try Self.run(input, kinds: [1: 1], damage: damage)
        #expect(out.count == 3)
        #expect(try Self.expand(out) == input.map { $0.value })
        #expect(damage.counts.recent.map(\.subject) == [TupleKey.describe(input[3].key)])
    }

    @Test("chunks met again: full ones pass through untouched, partial consecutive ones are joined")
    func rechunking() throws {
        let input = (0..<700).map { Self.event(1, UInt64($0), ts: UInt64($0), value: Self.double(Double($0))) }
        let first = try Self.run(Array(input[0..<300]), kinds: [1: 1])
        let second = try Self.run(Array(input[300..<700]), kinds: [1: 1])
        #expect(first.count == 1 && second.count == 1)
        let joined = try Self.run(first + second, kinds: [1: 1])
        #expect(joined.count == 2 && joined[0].key == EventRecord.key(series: 1, sequence: 511))
        #expect(try Self.expand(joined) == input.map { $0.value })
        let again = try Self.run(joined, kinds: [1: 1])
        #expect(again[0].value == joined[0].value)
        #expect(try Self.expand(again) == input.map { $0.value })
        // A chunk of the wrong kind for its series, or whose key disagrees with it, passes through.
        let damage = DamageRecorder(log: .silent)
        let mismatched = try Self.run(first, kinds: [1: 2], damage: damage)
        #expect(mismatched[0].value == first[0].value)
        let moved = try Self.run([(EventRecord.key(series: 1, sequence: 400), first[0].value)], kinds: [1: 1], damage: damage)
        #expect(moved[0].value == first[0].value)
        #expect(damage.counts.total == 2)
        #expect(damage.counts.recent.map(\.subject) == [first[0].key, EventRecord.key(series: 1, sequence: 400)].map(TupleKey.describe))
    }

    @Test("a chunk that does not decode passes through unchanged between its neighbours' runs, reported with its key")
    func undecodableChunk() throws {
        let good = try Self.run((0..<4).map { Self.event(1, UInt64($0), value: Self.double(Double($0))) }, kinds: [1: 1])
        var broken = good[0].value
        broken.removeLast(3)  // a column cut short
        #expect(throws: (any Error).self) { try SeriesChunk.decode(broken) }
        let brokenKey = EventRecord.key(series: 1, sequence: 9)
        let input = (4..<9).map { Self.event(1, UInt64($0), value: Self.double(1)) } + [(brokenKey, broken)]
            + (10..<12).map { Self.event(1, UInt64($0), value: Self.double(2)) }
        let damage = DamageRecorder(log: .silent)
        let out = try Self.run(input, kinds: [1: 1], damage: damage)
        #expect(out.map { $0.key } == [8, 9, 11].map { EventRecord.key(series: 1, sequence: $0) })
        #expect(out[1].value == broken)
        #expect(damage.counts.total == 1)
        let reported = try #require(damage.counts.recent.last)
        #expect(reported.component == .recordTransform(keyspace: 2))
        #expect(reported.subject == TupleKey.describe(brokenKey))
        guard case .corrupted = reported.error else {
            Issue.record("expected a corruption, got \(reported.error)")
            return
        }
    }

    @Test("sequences near UInt64.max in keys and chunks: runs end there without overflow, nothing is lost")
    func extremeSequences() throws {
        let top = UInt64.max
        var input: [Record] = (0..<3).map { Self.event(1, top - 2 + UInt64($0), value: Self.double(Double($0))) }
        input.append(Self.event(2, 0, value: Self.double(9)))
        let out = try Self.run(input, kinds: [1: 1, 2: 1])
        #expect(out.count == 2 && out[0].key == EventRecord.key(series: 1, sequence: top))
        #expect(try Self.expand(out) == input.map { $0.value })
        // A chunk ending just below UInt64.max, then the event at UInt64.max: joined.
        let chunk = try Self.run(Array(input[0..<2]), kinds: [1: 1])
        let after = try Self.run(chunk + [input[2], input[3]], kinds: [1: 1, 2: 1])
        #expect(after.count == 2 && after[0].key == EventRecord.key(series: 1, sequence: top))
        #expect(try Self.expand(after) == input.map { $0.value })
    }
}
