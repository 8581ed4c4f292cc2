import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The fast decoder (`SeriesChunk.decodeColumns`) against the reference one (`SeriesChunk.decode`):
/// the same events from every chunk, and the same verdict on every damaged one.
@Suite struct SeriesChunkColumnsTests {
    /// The arrays decodeColumns appends to, with something already in them.
    struct Output: Equatable {
        var timestamps: [Int64] = [7]
        var authors: [UInt64] = [8]
        var edits: [SeriesChunk.Edit] = [.init(index: 9, original: .init(sequence: 1, timestamp: 2, author: 3))]
        var doubles: [Double] = [1.5]
        var integers: [Int64] = [-1]
        var ranges: [Range<Int>] = [3..<4]
    }

    /// Decodes `bytes` with the fast decoder of `kind` into `out` and rebuilds the chunk.
    static func fastDecode(_ bytes: [UInt8], kind: UInt8, base: Int64, into out: inout Output) throws -> SeriesChunk {
        let before = out
        let header: SeriesChunk.Header
        do {
            header = try bytes.withUnsafeBytes { p in
                switch kind {
                case 1: try SeriesChunk.decodeColumns(p, base: base, timestamps: &out.timestamps, authors: &out.authors,
                                                      edits: &out.edits, doubles: &out.doubles)
                case 2: try SeriesChunk.decodeColumns(p, base: base, timestamps: &out.timestamps, authors: &out.authors,
                                                      edits: &out.edits, integers: &out.integers)
                default: try SeriesChunk.decodeColumns(p, base: base, timestamps: &out.timestamps, authors: &out.authors,
                                                       edits: &out.edits, values: &out.ranges)
                }
            }
        } catch {
            #expect(out == before, "a failed decode leaves the arrays as they were")
            throw error
        }
        #expect(try bytes.withUnsafeBytes { try SeriesChunk.header($0) } == header)
        let n = header.count
        var originals = [SeriesChunk.Original?](repeating: nil, count: n)
        for edit in out.edits.dropFirst(before.edits.count) { originals[edit.index] = edit.original }
        let values: SeriesChunk.Values
        switch kind {
        case 1: values = .doubles(Array(out.doubles.suffix(n)))
        case 2: values = .integers(Array(out.integers.suffix(n)))
        default: values = .bytes(out.ranges.suffix(n).map { Array(bytes[$0]) })
        }
        return SeriesChunk(firstSequence: header.firstSequence,
                           timestamps: out.timestamps.suffix(n).map { UInt64(bitPattern: $0 &- base) },
                           authors: Array(out.authors.suffix(n)), originals: originals, values: values)
    }

    /// Both decoders on `bytes`: equal chunks (bit for bit for doubles) or both `.corrupted`.
    static func agree(_ bytes: [UInt8], kind: UInt8) -> Bool {
        var out = Output()
        let reference = Result { try SeriesChunk.decode(bytes) }
        let fast = Result { try fastDecode(bytes, kind: kind, base: -3, into: &out) }
        switch (reference, fast) {
        case (.success(let a), .success(let b)):
            return a.encodedForComparison == b.encodedForComparison
        case (.failure(let a), .failure(let b)):
            guard case .corrupted = a as? StrataError, case .corrupted = b as? StrataError else { return false }
            return true
        case (.success(let a), .failure):
            // The fast decoder refuses a chunk of another kind than asked for.
            return a.values.kind != kind
        default:
            return false
        }
    }

    @Test("random chunks of every kind decode as decode(_:) decodes them, appended after earlier output")
    func matchesReference() throws {
        for seed in 0..<60 as Range<UInt64> {
            let n = [1, 2, 3, 17, 256, 1_000][Int(seed) % 6]
            let first: UInt64 = [0, 1, 1 << 40, UInt64.max - UInt64(n) + 1][Int(seed / 6) % 4]
            let chunk = SeriesChunkTests.chunk(n, first: first, kind: Int(seed % 3), seed: seed)
            let bytes = try chunk.encode()
            var out = Output()
            let decoded = try Self.fastDecode(bytes, kind: chunk.values.kind, base: 1_700_000_000_000, into: &out)
            #expect(decoded == chunk, "seed \(seed)")
            #expect(out.timestamps.first == 7 && out.authors.first == 8 && out.edits.first?.index == 9)
        }
    }

    @Test("edge values: every kind of Double, Int64 extremes, timestamps far apart, wide columns")
    func edges() throws {
        let n = ColumnTestData.edgeDoubles.count
        let doubles = SeriesChunk(firstSequence: 5, timestamps: (0..<UInt64(n)).map { $0 * 1_000_000_007 },
                                  authors: Array(repeating: 3, count: n), originals: Array(repeating: nil, count: n),
                                  values: .doubles(ColumnTestData.edgeDoubles))
        var out = Output()
        let back = try Self.fastDecode(try doubles.encode(), kind: 1, base: 0, into: &out)
        #expect(back.encodedForComparison == doubles.encodedForComparison)
        let m = ColumnTestData.edgeIntegers.count
        let ints = SeriesChunk(firstSequence: 0, timestamps: (0..<m).map { $0 % 2 == 0 ? UInt64.max : 0 },
                               authors: (0..<UInt64(m)).map { $0 == 0 ? UInt64.max : $0 }, originals: Array(repeating: nil, count: m),
                               values: .integers(ColumnTestData.edgeIntegers))
        #expect(try Self.fastDecode(try ints.encode(), kind: 2, base: 0, into: &out) == ints)
        for values in [ColumnTestData.randomBits(300, seed: 4), ColumnTestData.uniform(300, seed: 5), ColumnTestData.sensor(300, seed: 6)] {
            let chunk = SeriesChunk(firstSequence: 1, timestamps: ColumnTestData.timestamps(300, seed: 7).map { UInt64($0) },
                                    authors: Array(repeating: 0, count: 300), originals: Array(repeating: nil, count: 300),
                                    values: .doubles(values))
            let back = try Self.fastDecode(try chunk.encode(), kind: 1, base: 0, into: &out)
            #expect(back.encodedForComparison == chunk.encodedForComparison)
        }
    }

    @Test("every truncation and every changed byte gets the reference decoder's verdict")
    func damage() throws {
        for seed in 0..<12 as Range<UInt64> {
            let kind = Int(seed % 3)
            let bytes = try SeriesChunkTests.chunk(40, first: 100, kind: kind, seed: seed).encode()
            for prefix in ColumnTestData.prefixes(bytes) {
                #expect(Self.agree(prefix, kind: UInt8(kind)), "seed \(seed), \(prefix.count) bytes")
            }
            for (i, damaged) in ColumnTestData.mutations(bytes, count: 400, seed: seed).enumerated() {
                #expect(Self.agree(damaged, kind: UInt8(kind)), "seed \(seed), mutation \(i)")
            }
            #expect(Self.agree(bytes + [0], kind: UInt8(kind)))
            for other in 0..<3 where other != kind {
                #expect(Self.agree(bytes, kind: UInt8(other)), "a chunk of kind \(kind) asked for as \(other)")
            }
        }
    }

    @Test("decodeTimestamps reads the header and timestamps alone, and refuses a damaged timestamp column")
    func timestampsAlone() throws {
        for seed in 0..<12 as Range<UInt64> {
            let chunk = SeriesChunkTests.chunk([1, 5, 300][Int(seed % 3)], first: seed * 1_000, kind: Int(seed % 3), seed: seed)
            let bytes = try chunk.encode()
            var times: [Int64] = [42]
            let header = try bytes.withUnsafeBytes { try SeriesChunk.decodeTimestamps($0, base: 7, into: &times) }
            #expect(header == SeriesChunk.Header(kind: chunk.values.kind, firstSequence: chunk.firstSequence, count: chunk.count))
            #expect(times == [42] + chunk.timestamps.map { Int64(bitPattern: $0) &+ 7 })
            // Cut inside the timestamp column: refused, the array as it was.
            let cut = Array(bytes.prefix(6))
            #expect(ColumnTestData.throwsCorrupted { _ = try cut.withUnsafeBytes { try SeriesChunk.decodeTimestamps($0, into: &times) } })
            #expect(times.count == chunk.count + 1)
        }
    }

    @Test("a run of zero residuals longer than a word, and residuals in every bucket")
    func timestampRuns() throws {
        var times: [UInt64] = Array(repeating: 5, count: 200)          // 199 zero deltas
        times += (0..<100).map { 5 + UInt64($0) * 3 }                   // a jump, then regular steps
        times += (0..<100).map { 400 + UInt64($0 * $0) }                // growing deltas
        times += [UInt64.max, 0, 1 << 63, 12]                           // full-width escapes
        let n = times.count
        let chunk = SeriesChunk(firstSequence: 0, timestamps: times, authors: Array(repeating: 0, count: n),
                                originals: Array(repeating: nil, count: n), values: .integers(Array(repeating: 1, count: n)))
        var out = Output()
        #expect(try Self.fastDecode(try chunk.encode(), kind: 2, base: 12_345, into: &out) == chunk)
    }
}

extension SeriesChunk {
    /// The chunk with its doubles as bit patterns, so NaNs compare equal to themselves.
    var encodedForComparison: [UInt64] {
        var out = [firstSequence] + timestamps + authors
        for o in originals { out += o.map { [1, $0.sequence, $0.timestamp, $0.author] } ?? [0] }
        switch values {
        case .doubles(let v): out += [1] + v.map(\.bitPattern)
        case .integers(let v): out += [2] + v.map { UInt64(bitPattern: $0) }
        case .bytes(let v): out += [0] + v.flatMap { [UInt64($0.count)] + $0.map(UInt64.init) }
        }
        return out
    }
}

@Suite struct SeriesChunkColumnsRunTests {
    @Test("a run of 512-event chunks decodes into reserved arrays without reallocating them")
    func runOfChunks() throws {
        let events = 40 * 512
        let values = SeriesChunkBudgetTests.walk(events, seed: 9)
        let times = SeriesChunkBudgetTests.sampledTimestamps(events, seed: 9)
        var records: [[UInt8]] = []
        for start in stride(from: 0, to: events, by: 512) {
            let chunk = SeriesChunk(firstSequence: UInt64(start), timestamps: Array(times[start..<start + 512]),
                                    authors: Array(repeating: 2, count: 512), originals: Array(repeating: nil, count: 512),
                                    values: .doubles(Array(values[start..<start + 512])))
            records.append(try chunk.encode())
        }
        var timestamps: [Int64] = [], authors: [UInt64] = [], edits: [SeriesChunk.Edit] = [], doubles: [Double] = []
        timestamps.reserveCapacity(events)
        // The author list's scratch slots (one per distinct author) sit past the events.
        authors.reserveCapacity(events + 1)
        doubles.reserveCapacity(events)
        let addresses = (timestamps.withUnsafeBufferPointer { $0.baseAddress }, doubles.withUnsafeBufferPointer { $0.baseAddress },
                         authors.withUnsafeBufferPointer { $0.baseAddress })
        var next: UInt64 = 0
        for record in records {
            let header = try record.withUnsafeBytes {
                try SeriesChunk.decodeColumns($0, timestamps: &timestamps, authors: &authors, edits: &edits, doubles: &doubles)
            }
            #expect(header.firstSequence == next)
            next = header.lastSequence + 1
        }
        #expect(timestamps == times.map { Int64($0) })
        #expect(doubles == values)
        #expect(authors == Array(repeating: 2, count: events))
        #expect(edits.isEmpty)
        #expect(timestamps.withUnsafeBufferPointer { $0.baseAddress } == addresses.0)
        #expect(doubles.withUnsafeBufferPointer { $0.baseAddress } == addresses.1)
        #expect(authors.withUnsafeBufferPointer { $0.baseAddress } == addresses.2)
    }
}
