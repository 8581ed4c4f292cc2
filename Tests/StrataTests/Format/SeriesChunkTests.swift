import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite struct SeriesChunkTests {
    /// A random chunk: n events from `first`, some edits of earlier sequences, a few authors.
    static func chunk(_ n: Int, first: UInt64, kind: Int, seed: UInt64) -> SeriesChunk {
        var rng = SplitMix64(seed: seed)
        let times = ColumnTestData.timestamps(n, seed: seed).map { UInt64($0 - 1_700_000_000_000 + 5) }
        let authorCount = 1 + rng.below(4)
        let authors = (0..<n).map { _ in UInt64(rng.below(authorCount) * 7) }
        let originals: [SeriesChunk.Original?] = (0..<n).map { i in
            let sequence = first + UInt64(i)
            guard sequence > 0, rng.below(5) == 0 else { return nil }
            return SeriesChunk.Original(sequence: UInt64(rng.below(Int(min(sequence, 1_000)))) + (sequence > 1_000 ? sequence - 1_000 : 0),
                                        timestamp: UInt64(rng.below(1 << 20)), author: UInt64(rng.below(3)))
        }
        let values: SeriesChunk.Values
        switch kind {
        case 0: values = .bytes((0..<n).map { i in (0..<rng.below(12)).map { _ in UInt8(truncatingIfNeeded: rng.next()) } + [UInt8(i & 0xff)] })
        case 1: values = .doubles(ColumnTestData.walk(n, seed: seed))
        default: values = .integers((0..<n).map { _ in Int64(bitPattern: rng.next()) >> rng.below(64) })
        }
        return SeriesChunk(firstSequence: first, timestamps: times, authors: authors, originals: originals, values: values)
    }

    @Test("random chunks of every value kind round-trip, with and without edits and several authors")
    func roundTrip() throws {
        for seed in 0..<60 as Range<UInt64> {
            let n = [1, 2, 3, 17, 256, 1_000][Int(seed) % 6]
            let first: UInt64 = [0, 1, 1 << 40, UInt64.max - UInt64(n) + 1][Int(seed / 6) % 4]
            let chunk = Self.chunk(n, first: first, kind: Int(seed % 3), seed: seed)
            let bytes = try chunk.encode()
            #expect(bytes.first == SeriesChunk.marker)
            #expect(bytes.withUnsafeBytes { SeriesChunk.isChunk($0) })
            #expect(try SeriesChunk.decode(bytes) == chunk, "seed \(seed)")
            #expect(chunk.lastSequence == first + UInt64(n - 1))
        }
    }

    @Test("edge values: every Double bit pattern, Int64 extremes, empty byte values, one author, timestamps far apart")
    func edges() throws {
        let n = ColumnTestData.edgeDoubles.count
        let doubles = SeriesChunk(firstSequence: 5, timestamps: (0..<UInt64(n)).map { $0 * 1_000_000_007 },
                                  authors: Array(repeating: 3, count: n), originals: Array(repeating: nil, count: n),
                                  values: .doubles(ColumnTestData.edgeDoubles))
        let decoded = try SeriesChunk.decode(try doubles.encode())
        guard case .doubles(let back) = decoded.values else { Issue.record("kind"); return }
        #expect(back.map(\.bitPattern) == ColumnTestData.edgeDoubles.map(\.bitPattern))
        let m = ColumnTestData.edgeIntegers.count
        let ints = SeriesChunk(firstSequence: 0, timestamps: Array(repeating: UInt64.max, count: m),
                               authors: (0..<UInt64(m)).map { $0 == 0 ? UInt64.max : $0 }, originals: Array(repeating: nil, count: m),
                               values: .integers(ColumnTestData.edgeIntegers))
        #expect(try SeriesChunk.decode(try ints.encode()) == ints)
        let empty = SeriesChunk(firstSequence: 9, timestamps: [0, 0], authors: [0, 0], originals: [nil, .init(sequence: 0, timestamp: .max, author: .max)],
                                values: .bytes([[], []]))
        #expect(try SeriesChunk.decode(try empty.encode()) == empty)
    }

    @Test("a settled walk of 256 Double events takes a few bytes each")
    func size() throws {
        var chunk = Self.chunk(256, first: 1_000, kind: 1, seed: 3)
        chunk.originals = Array(repeating: nil, count: 256)
        chunk.authors = Array(repeating: 0, count: 256)
        let bytes = try chunk.encode()
        #expect(Double(bytes.count) / 256 < 3, "\(bytes.count) bytes")
    }

    @Test("what cannot be a chunk is refused when encoding")
    func invalidChunks() {
        let good = Self.chunk(3, first: 10, kind: 1, seed: 1)
        var bad = good
        bad.authors.removeLast()
        #expect(throws: StrataError.self) { try bad.encode() }
        bad = good
        bad.timestamps = []
        bad.authors = []
        bad.originals = []
        bad.values = .doubles([])
        #expect(throws: StrataError.self) { try bad.encode() }
        bad = good
        bad.firstSequence = .max - 1
        #expect(throws: StrataError.self) { try bad.encode() }
        bad = good
        bad.originals[0] = .init(sequence: 10, timestamp: 0, author: 0)   // edits itself
        #expect(throws: StrataError.self) { try bad.encode() }
        let tooMany = ColumnHeader.maximumCount + 1
        bad = SeriesChunk(firstSequence: 0, timestamps: Array(repeating: 0, count: tooMany), authors: Array(repeating: 0, count: tooMany),
                          originals: Array(repeating: nil, count: tooMany), values: .integers(Array(repeating: 0, count: tooMany)))
        #expect(throws: StrataError.self) { try bad.encode() }
    }

    @Test("every truncation is .corrupted; every byte changed decodes or is .corrupted; never a crash")
    func damage() throws {
        for seed in 0..<9 as Range<UInt64> {
            let bytes = try Self.chunk(40, first: 100, kind: Int(seed % 3), seed: seed).encode()
            for prefix in ColumnTestData.prefixes(bytes) {
                #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(prefix) }, "seed \(seed), \(prefix.count) bytes")
            }
            var rng = SplitMix64(seed: seed)
            for i in 0..<bytes.count {
                var damaged = bytes
                damaged[i] ^= UInt8(1 + rng.below(255))
                #expect(ColumnTestData.returnsOrThrowsCorrupted { _ = try SeriesChunk.decode(damaged) })
            }
            #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(bytes + [0]) }, "a byte after the values")
        }
    }

    @Test("crafted chunks with extreme counts and lengths are .corrupted without allocating them")
    func crafted() {
        func chunk(_ build: (inout BitWriter) -> Void) -> [UInt8] { ColumnTestData.column(build) }
        let huge = chunk { w in
            w.write(0x80, bits: 8); w.write(2, bits: 8); w.writeVarint(UInt64.max); w.writeVarint(0)
        }
        #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(huge) })
        let pastMax = chunk { w in
            w.write(0x80, bits: 8); w.write(2, bits: 8); w.writeVarint(2); w.writeVarint(UInt64.max)
        }
        #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(pastMax) })
        let badKind = chunk { w in w.write(0x80, bits: 8); w.write(3, bits: 8); w.writeVarint(1); w.writeVarint(0) }
        #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(badKind) })
        let event = chunk { w in w.write(0x00, bits: 8); w.write(0, bits: 8) }
        #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(event) })
        // A byte value whose length claims more than the record holds.
        let long = chunk { w in
            w.write(0x80, bits: 8); w.write(0, bits: 8); w.writeVarint(1); w.writeVarint(0)
            try? TimestampColumn.encode([0], to: &w)
            w.writeVarint(1); w.writeVarint(0)      // one author
            w.write(bit: false)                     // no edits
            try? IntegerColumn.encode([Int64.max], to: &w)
        }
        #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(long) })
        // More distinct authors than events.
        let authors = chunk { w in
            w.write(0x80, bits: 8); w.write(2, bits: 8); w.writeVarint(1); w.writeVarint(0)
            try? TimestampColumn.encode([0], to: &w)
            w.writeVarint(UInt64(1 << 40))
        }
        #expect(ColumnTestData.throwsCorrupted { _ = try SeriesChunk.decode(authors) })
    }
}
