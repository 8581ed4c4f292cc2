import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

private func roundTrip(_ values: [Int64]) throws -> [Int64] {
    let bytes = try IntegerColumn.encode(values)
    var decoded: [Int64] = [99] // decoding appends to what the caller holds
    try IntegerColumn.decode(bytes, into: &decoded)
    #expect(decoded.first == 99)
    return Array(decoded.dropFirst())
}

@Suite struct IntegerColumnTests {
    @Test func randomRoundTrips() throws {
        var rng = SplitMix64(seed: 0x1C01)
        for _ in 0..<200 {
            let count = rng.below(600)
            let shift = Int64(rng.below(64))
            let sorted = rng.chance(500)
            var values = (0..<count).map { _ in Int64(bitPattern: rng.next()) >> shift }
            if sorted { values.sort() }
            #expect(try roundTrip(values) == values)
        }
    }

    @Test func edgeValuesAndShapes() throws {
        for values in [[], [0], [.min], [.max], ColumnTestData.edgeIntegers, [Int64](repeating: 7, count: 500),
                       (0..<1000).map { Int64($0) }, (0..<1000).map { Int64.max - Int64($0) * 3 }] {
            #expect(try roundTrip(values) == values)
        }
        // A constant column packs to zero bits a value; a counter to zero bits a delta.
        #expect(try IntegerColumn.encode([Int64](repeating: -5, count: 1000)).count < 8)
        #expect(try IntegerColumn.encode((0..<1000).map { Int64($0) * 10 }).count < 8)
    }

    @Test func tooManyValuesIsAnInvalidArgument() {
        #expect(throws: StrataError.self) {
            _ = try IntegerColumn.encode([Int64](repeating: 0, count: ColumnHeader.maximumCount + 1))
        }
    }

    @Test func truncatedInputThrowsCorrupted() throws {
        var rng = SplitMix64(seed: 0x1C02)
        for values in [ColumnTestData.edgeIntegers, (0..<300).map { _ in Int64(rng.below(1000)) }] {
            for prefix in ColumnTestData.prefixes(try IntegerColumn.encode(values)) {
                var out: [Int64] = []
                #expect(ColumnTestData.throwsCorrupted { try IntegerColumn.decode(prefix, into: &out) })
            }
        }
    }

    @Test func mutatedInputNeverTraps() throws {
        var rng = SplitMix64(seed: 0x1C03)
        let bytes = try IntegerColumn.encode((0..<300).map { _ in Int64(rng.below(100_000)) })
        for mutated in ColumnTestData.mutations(bytes, count: 3_000, seed: 0x1C04) {
            var out: [Int64] = []
            #expect(ColumnTestData.returnsOrThrowsCorrupted { try IntegerColumn.decode(mutated, into: &out) })
            #expect(out.count <= ColumnHeader.maximumCount)
        }
    }

    @Test func craftedHeadersThrowCorrupted() {
        let column = ColumnTestData.column
        let cases: [[UInt8]] = [
            [],
            [0x09, 0x01], // unknown encoding
            [ColumnEncoding.doubleXOR.rawValue, 0x01], // another column's encoding
            column { $0.write(1, bits: 8); $0.writeVarint(UInt64(ColumnHeader.maximumCount) + 1) },
            column { $0.write(1, bits: 8); $0.writeVarint(3); $0.write(bit: false); $0.writeSignedVarint(0); $0.write(65, bits: 7) },
            column { $0.write(1, bits: 8); $0.writeVarint(1000); $0.write(bit: false); $0.writeSignedVarint(0); $0.write(64, bits: 7) },
        ]
        for bytes in cases {
            var out: [Int64] = []
            #expect(ColumnTestData.throwsCorrupted { try IntegerColumn.decode(bytes, into: &out) })
        }
        // The largest count with zero-width values is valid and bounded.
        let widest = column {
            $0.write(1, bits: 8); $0.writeVarint(UInt64(ColumnHeader.maximumCount))
            $0.write(bit: false); $0.writeSignedVarint(3); $0.write(0, bits: 7)
        }
        var out: [Int64] = []
        #expect(throws: Never.self) { try IntegerColumn.decode(widest, into: &out) }
        #expect(out == [Int64](repeating: 3, count: ColumnHeader.maximumCount))
    }
}
