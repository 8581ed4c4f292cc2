import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite struct BitWriterTests {
    @Test func randomWidthsRoundTrip() {
        var rng = SplitMix64(seed: 0xB175)
        var writer = BitWriter()
        var written: [(UInt64, Int)] = []
        for _ in 0..<5_000 {
            let width = rng.below(65)
            let value = width == 64 ? rng.next() : rng.next() & ((1 << UInt64(width)) - 1)
            writer.write(value, bits: width)
            written.append((value, width))
        }
        let total = writer.bitCount
        let bytes = writer.finish()
        #expect(bytes.count == (total + 7) / 8)
        var reader = BitReader(bytes)
        for (value, width) in written {
            #expect(reader.read(bits: width) == value)
        }
        #expect(reader.remainingBits == bytes.count * 8 - total)
    }

    @Test func mostSignificantBitFirst() {
        var writer = BitWriter()
        writer.write(0b1, bits: 1)
        writer.write(0b0110, bits: 4)
        writer.write(0xFFFF, bits: 0)
        writer.write(0b101, bits: 3)
        writer.write(0xABC, bits: 12)
        #expect(writer.finish() == [0b1011_0101, 0xAB, 0xC0])
    }

    @Test func readerNeverReadsPastTheEnd() {
        var reader = BitReader([0xFF, 0x00])
        #expect(reader.read(bits: 65) == nil)
        #expect(reader.read(bits: -1) == nil)
        #expect(reader.read(bits: 17) == nil)
        #expect(reader.position == 0)
        #expect(reader.read(bits: 12) == 0xFF0)
        #expect(reader.read(bits: 5) == nil)
        #expect(reader.position == 12)
        #expect(reader.read(bits: 4) == 0)
        #expect(reader.readBit() == nil)
        #expect(reader.read(bits: 0) == 0)
        #expect(BitReader([1, 2], byteOffset: 5).remainingBits == 0)
        #expect(BitReader([1, 2], byteOffset: -3).remainingBits == 16)
    }

    @Test func varintsAndZigZag() {
        var writer = BitWriter()
        writer.write(1, bits: 3) // unaligned on purpose
        let values: [Int64] = [0, -1, 1, 63, -64, 64, .max, .min, 1 << 40, -(1 << 40)]
        for value in values { writer.writeSignedVarint(value) }
        writer.writeVarint(.max)
        let bytes = writer.finish()
        var reader = BitReader(bytes)
        #expect(reader.read(bits: 3) == 1)
        for value in values { #expect(reader.readSignedVarint() == value) }
        #expect(reader.readVarint() == .max)
        #expect(ZigZag.encode(-1) == 1 && ZigZag.encode(1) == 2 && ZigZag.encode(.min) == .max)

        // Truncated, overlong (eleven groups) and overflowing varints are rejected in place.
        var truncated = BitReader([0x80, 0x80])
        #expect(truncated.readVarint() == nil && truncated.position == 0)
        var overlong = BitReader([UInt8](repeating: 0x80, count: 10) + [0x00])
        #expect(overlong.readVarint() == nil)
        var overflow = BitReader([UInt8](repeating: 0xFF, count: 9) + [0x02])
        #expect(overflow.readVarint() == nil)
    }

    @Test func signedWidths() {
        #expect(SignedBits.width(of: 0) == 0)
        #expect(SignedBits.width(of: -1) == 1)
        #expect(SignedBits.width(of: 1) == 2)
        #expect(SignedBits.width(of: -2) == 2)
        #expect(SignedBits.width(of: 63) == 7 && SignedBits.width(of: -64) == 7 && SignedBits.width(of: 64) == 8)
        #expect(SignedBits.width(of: .max) == 64 && SignedBits.width(of: .min) == 64)
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let value = Int64(bitPattern: rng.next()) >> Int64(rng.below(64))
            let width = SignedBits.width(of: value)
            #expect(SignedBits.extend(UInt64(bitPattern: value) & (width == 64 ? .max : (1 << UInt64(width)) - 1),
                                      bits: width) == value)
        }
    }
}
