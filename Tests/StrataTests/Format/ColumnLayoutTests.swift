import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Reads encoded columns field by field as the layouts in the doc comments describe them, so a
/// change of layout cannot go unnoticed (and FORMAT.md can later quote these examples).
@Suite struct ColumnLayoutTests {
    @Test func integerColumnLayout() throws {
        // Deltas 1, 1, 2 pack narrower than the values 100…104: delta mode, base 1, width 1.
        let bytes = try IntegerColumn.encode([100, 101, 102, 104])
        var reader = BitReader(bytes)
        #expect(reader.read(bits: 8) == UInt64(ColumnEncoding.integerPacked.rawValue))
        #expect(reader.readVarint() == 4)
        #expect(reader.readBit() == true)
        #expect(reader.readSignedVarint() == 100)
        #expect(reader.readSignedVarint() == 1)
        #expect(reader.read(bits: 7) == 1)
        #expect(reader.read(bits: 3) == 0b001)
        #expect(reader.remainingBits < 8)
        // 1 | 0xC8 0x01 (zigzag 100 = 200) | 0x02 (zigzag 1) | 0000001 | 001, padded.
        #expect(bytes == [0x01, 0x04, 0xE4, 0x00, 0x81, 0x01, 0x20])
    }

    @Test func timestampColumnLayout() throws {
        // Spacing 1000 with one late sample: base 1000, delta mode wins (residuals 0, 0, 5, -5
        // under delta-of-delta against 0, 0, 5, 0 from the base).
        let bytes = try TimestampColumn.encode([0, 1000, 2000, 3005, 4005])
        var reader = BitReader(bytes)
        #expect(reader.read(bits: 8) == UInt64(ColumnEncoding.timestampBuckets.rawValue))
        #expect(reader.readVarint() == 5)
        #expect(reader.readSignedVarint() == 0)
        #expect(reader.readBit() == true)
        #expect(reader.readSignedVarint() == 1000)
        let w0 = reader.read(bits: 6), w1 = reader.read(bits: 6)
        _ = reader.read(bits: 6)
        #expect(w0 == 0 && w1 == 4) // 0 as '0'; 5 as '10' + 4 bits
        for _ in 0..<2 { #expect(reader.read(bits: 1) == 0) }
        #expect(reader.read(bits: 2) == 0b10)
        #expect(reader.read(bits: 4) == 5)
        #expect(reader.read(bits: 1) == 0)
        #expect(reader.remainingBits < 8)
    }

    @Test func alpColumnLayout() throws {
        // Written directly: on four values the encoder prefers XOR to ALP with an exception.
        let values = [1.5, 2.25, -0.0, 3.0]
        let (e0, f0) = DoubleColumn.chooseExponents(values)
        #expect(e0 == 2 && f0 == 0)
        var writer = BitWriter()
        #expect(DoubleColumn.writeALP(values, e: e0, f: f0, to: &writer) == 1)
        let bytes = writer.finish()
        var decoded: [Double] = []
        try DoubleColumn.decode(bytes, into: &decoded)
        #expect(decoded.map(\.bitPattern) == values.map(\.bitPattern))
        var reader = BitReader(bytes)
        #expect(reader.read(bits: 8) == UInt64(ColumnEncoding.doubleALP.rawValue))
        #expect(reader.readVarint() == 4)
        let e = reader.read(bits: 5), f = reader.read(bits: 5)
        #expect(e == 2 && f == 0) // 150, 225, (fill 225), 300
        #expect(reader.readVarint() == 1)
        var integers: [Int64] = []
        try reader.withColumnReader { r in
            try PackedIntegers.unpack(count: 4, from: &r, what: "test") { _, v in integers.append(v) }
        }
        #expect(integers == [150, 225, 225, 300])
        // -0.0 is 2^63 away from 0.0's bits: no slot of its own, a wide correction of 2.25's bits.
        let correction = Int64(bitPattern: (-0.0).bitPattern &- 2.25.bitPattern)
        let width = SignedBits.width(of: correction)
        #expect(width == 63)
        #expect(reader.read(bits: 7) == UInt64(width))
        #expect(reader.read(bits: 2) == 2)
        #expect(reader.read(bits: width).map { SignedBits.extend($0, bits: width) } == correction)
        #expect(reader.remainingBits < 8)
    }

    @Test func xorColumnLayout() throws {
        let values = ColumnTestData.randomBits(3, seed: 1)
        var writer = BitWriter()
        DoubleColumn.writeXOR(values, to: &writer)
        let bytes = writer.finish()
        var reader = BitReader(bytes)
        #expect(reader.read(bits: 8) == UInt64(ColumnEncoding.doubleXOR.rawValue))
        #expect(reader.readVarint() == 3)
        #expect(reader.read(bits: 64) == values[0].bitPattern)
        let x = values[1].bitPattern ^ values[0].bitPattern
        #expect(reader.read(bits: 2) == 0b11)
        let leading = Int(reader.read(bits: 5) ?? 99), meaningful = Int(reader.read(bits: 6) ?? 99) + 1
        #expect(leading == min(x.leadingZeroBitCount, 31))
        #expect(meaningful == 64 - leading - x.trailingZeroBitCount)
        #expect(reader.read(bits: min(meaningful, 64)) == x >> UInt64(x.trailingZeroBitCount))
    }
}
