import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

private func roundTrip(_ values: [Int64]) throws -> [Int64] {
    let bytes = try TimestampColumn.encode(values)
    var decoded: [Int64] = []
    try TimestampColumn.decode(bytes, into: &decoded)
    return decoded
}

@Suite struct TimestampColumnTests {
    @Test func jitteredSeriesRoundTrip() throws {
        for seed in UInt64(1)...20 {
            let values = ColumnTestData.timestamps(1 + Int(seed) * 37, seed: seed)
            #expect(try roundTrip(values) == values)
        }
    }

    @Test func randomRoundTrips() throws {
        var rng = SplitMix64(seed: 0x7C01)
        for _ in 0..<200 {
            let count = rng.below(500)
            let shift = Int64(rng.below(64))
            var values = (0..<count).map { _ in Int64(bitPattern: rng.next()) >> shift }
            if rng.chance(300) { values.sort() }
            // Regular spacing with gaps and bursts.
            if rng.chance(300) {
                var t: Int64 = Int64(bitPattern: rng.next()) >> 8
                values = (0..<count).map { _ in
                    t &+= rng.chance(50) ? Int64(rng.below(1_000_000)) : 10_000
                    return t
                }
            }
            #expect(try roundTrip(values) == values)
        }
    }

    @Test func edgeValuesAndOverflowingDeltas() throws {
        let cases: [[Int64]] = [
            [], [0], [.min], [.max], [.min, .max], [.max, .min, .max, .min], ColumnTestData.edgeIntegers,
            [0, .max, -1, .min, 1, 0], [Int64](repeating: .min, count: 100),
            (0..<100).map { Int64.max - Int64($0) }, (0..<100).map { Int64.min &+ Int64($0) &* (1 << 60) },
        ]
        for values in cases { #expect(try roundTrip(values) == values) }
    }

    @Test func regularSeriesTakeAboutOneBitEach() throws {
        let regular = (0..<1000).map { 1_700_000_000_000 + Int64($0) * 15_000 }
        let bytes = try TimestampColumn.encode(regular)
        #expect(bytes.count * 8 <= 999 + 128) // one bit a timestamp plus the header
        #expect(try roundTrip(regular) == regular)
    }

    @Test func truncatedInputThrowsCorrupted() throws {
        for values in [ColumnTestData.edgeIntegers, ColumnTestData.timestamps(300, seed: 9)] {
            for prefix in ColumnTestData.prefixes(try TimestampColumn.encode(values)) {
                var out: [Int64] = []
                #expect(ColumnTestData.throwsCorrupted { try TimestampColumn.decode(prefix, into: &out) })
            }
        }
    }

    @Test func mutatedInputNeverTraps() throws {
        for values in [ColumnTestData.edgeIntegers, ColumnTestData.timestamps(300, seed: 10)] {
            let bytes = try TimestampColumn.encode(values)
            for mutated in ColumnTestData.mutations(bytes, count: 2_000, seed: 0x7C02) {
                var out: [Int64] = []
                #expect(ColumnTestData.returnsOrThrowsCorrupted { try TimestampColumn.decode(mutated, into: &out) })
                #expect(out.count <= ColumnHeader.maximumCount)
            }
        }
    }

    @Test func craftedHeadersThrowCorrupted() {
        let column = ColumnTestData.column
        let tag = UInt64(ColumnEncoding.timestampBuckets.rawValue)
        let cases: [[UInt8]] = [
            [UInt8(tag)],
            [ColumnEncoding.integerPacked.rawValue, 0],
            // A count far above the bits that follow (each residual takes at least one).
            column { $0.write(tag, bits: 8); $0.writeVarint(60_000); $0.writeSignedVarint(0); $0.write(bit: false)
                $0.writeSignedVarint(0); $0.write(0, bits: 18) },
            // Residuals that escape to 64 bits with too few bits left.
            column { $0.write(tag, bits: 8); $0.writeVarint(3); $0.writeSignedVarint(0); $0.write(bit: false)
                $0.writeSignedVarint(0); $0.write(0, bits: 18); $0.write(0b111, bits: 3); $0.write(0, bits: 30) },
        ]
        for bytes in cases {
            var out: [Int64] = []
            #expect(ColumnTestData.throwsCorrupted { try TimestampColumn.decode(bytes, into: &out) })
        }
    }
}
