import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

private func roundTrip(_ values: [Double]) throws -> [Double] {
    let bytes = try DoubleColumn.encode(values)
    var decoded: [Double] = []
    try DoubleColumn.decode(bytes, into: &decoded)
    return decoded
}

private func sameBits(_ a: [Double], _ b: [Double]) -> Bool {
    a.map(\.bitPattern) == b.map(\.bitPattern)
}

private func encoding(_ values: [Double]) throws -> ColumnEncoding? {
    ColumnEncoding(rawValue: try DoubleColumn.encode(values)[0])
}

@Suite struct DoubleColumnTests {
    @Test func walkAndSensorRoundTripAsALP() throws {
        for seed in UInt64(1)...20 {
            let count = 1 + Int(seed) * 50
            for values in [ColumnTestData.walk(count, seed: seed), ColumnTestData.sensor(count, seed: seed)] {
                #expect(sameBits(try roundTrip(values), values))
                #expect(try encoding(values) == .doubleALP)
            }
        }
    }

    @Test func randomDataRoundTripsBitForBit() throws {
        for seed in UInt64(1)...20 {
            let count = Int(seed) * 40
            for values in [ColumnTestData.randomBits(count, seed: seed), ColumnTestData.uniform(count, seed: seed)] {
                #expect(sameBits(try roundTrip(values), values))
            }
        }
        #expect(try encoding(ColumnTestData.randomBits(500, seed: 3)) == .doubleXOR)
    }

    @Test func edgeValuesRoundTripBitForBit() throws {
        let edges = ColumnTestData.edgeDoubles
        var rng = SplitMix64(seed: 0xD0E)
        let cases: [[Double]] = [
            [], [0], [-0.0], [.nan], edges, edges.reversed(), [Double](repeating: -0.0, count: 300),
            [Double](repeating: .nan, count: 10),
            // Mostly decimals with edge values sprinkled in: ALP with exceptions.
            ColumnTestData.walk(500, seed: 4).map { rng.chance(30) ? edges[rng.below(edges.count)] : $0 },
        ]
        for values in cases { #expect(sameBits(try roundTrip(values), values)) }
        let sprinkled = cases[cases.count - 1]
        #expect(try encoding(sprinkled) == .doubleALP)
    }

    @Test func alpFindsTheDecimals() {
        let prices = ColumnTestData.walk(200, seed: 1)
        let (e, f) = DoubleColumn.chooseExponents(prices)
        #expect(prices.allSatisfy { DoubleColumn.alpEncode($0, e: e, f: f) != nil })
        #expect(DoubleColumn.alpEncode(-0.0, e: e, f: f) == nil)
        #expect(DoubleColumn.alpEncode(.nan, e: e, f: f) == nil)
        #expect(DoubleColumn.alpEncode(.infinity, e: 0, f: 0) == nil)
        #expect(DoubleColumn.alpEncode(1e300, e: 0, f: 0) == nil)
    }

    @Test func truncatedInputThrowsCorrupted() throws {
        for values in [ColumnTestData.edgeDoubles, ColumnTestData.walk(200, seed: 5), ColumnTestData.randomBits(50, seed: 6)] {
            for prefix in ColumnTestData.prefixes(try DoubleColumn.encode(values)) {
                var out: [Double] = []
                #expect(ColumnTestData.throwsCorrupted { try DoubleColumn.decode(prefix, into: &out) })
            }
        }
    }

    @Test func mutatedInputNeverTraps() throws {
        for values in [ColumnTestData.edgeDoubles + ColumnTestData.sensor(200, seed: 7), ColumnTestData.uniform(200, seed: 8)] {
            let bytes = try DoubleColumn.encode(values)
            for mutated in ColumnTestData.mutations(bytes, count: 2_000, seed: 0xD0F) {
                var out: [Double] = []
                #expect(ColumnTestData.returnsOrThrowsCorrupted { try DoubleColumn.decode(mutated, into: &out) })
                #expect(out.count <= ColumnHeader.maximumCount)
            }
        }
    }

    @Test func craftedHeadersThrowCorrupted() {
        let column = ColumnTestData.column
        let alp = UInt64(ColumnEncoding.doubleALP.rawValue), xor = UInt64(ColumnEncoding.doubleXOR.rawValue)
        let constantInts: (inout BitWriter) -> Void = { $0.write(bit: false); $0.writeSignedVarint(1); $0.write(0, bits: 7) }
        let cases: [[UInt8]] = [
            // Exponent over 18; factor over exponent.
            column { $0.write(alp, bits: 8); $0.writeVarint(2); $0.write(19, bits: 5); $0.write(0, bits: 5); $0.writeVarint(0); constantInts(&$0) },
            column { $0.write(alp, bits: 8); $0.writeVarint(2); $0.write(2, bits: 5); $0.write(3, bits: 5); $0.writeVarint(0); constantInts(&$0) },
            // More exceptions than values; exceptions out of order or range.
            column { $0.write(alp, bits: 8); $0.writeVarint(2); $0.write(2, bits: 5); $0.write(0, bits: 5); $0.writeVarint(3); constantInts(&$0) },
            column { $0.write(alp, bits: 8); $0.writeVarint(4); $0.write(2, bits: 5); $0.write(0, bits: 5); $0.writeVarint(2); constantInts(&$0)
                $0.write(2, bits: 2); $0.write(0, bits: 64); $0.write(1, bits: 2); $0.write(0, bits: 64) },
            column { $0.write(alp, bits: 8); $0.writeVarint(3); $0.write(2, bits: 5); $0.write(0, bits: 5); $0.writeVarint(1); constantInts(&$0)
                $0.write(3, bits: 2); $0.write(0, bits: 64) },
            // XOR: a window reused before any was set; a window over 64 bits; a count above the bits.
            column { $0.write(xor, bits: 8); $0.writeVarint(2); $0.write(0, bits: 64); $0.write(0b10, bits: 2); $0.write(0, bits: 62) },
            column { $0.write(xor, bits: 8); $0.writeVarint(2); $0.write(0, bits: 64); $0.write(0b11, bits: 2); $0.write(31, bits: 5)
                $0.write(63, bits: 6); $0.write(0, bits: 64) },
            column { $0.write(xor, bits: 8); $0.writeVarint(60_000); $0.write(0, bits: 64 + 64) },
        ]
        for bytes in cases {
            var out: [Double] = []
            #expect(ColumnTestData.throwsCorrupted { try DoubleColumn.decode(bytes, into: &out) })
        }
    }
}
