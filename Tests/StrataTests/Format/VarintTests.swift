import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

/// Decodes one varint from `bytes` starting at `offset`; returns the value and the offset after it
/// (the offset is left alone on failure, which the tests check too).
private func decode(_ bytes: [UInt8], at start: Int = 0) -> (value: UInt64?, offset: Int) {
    var offset = start
    let value = bytes.withUnsafeBytes { Varint.read($0, at: &offset) }
    return (value, offset)
}

private func encode(_ value: UInt64) -> [UInt8] {
    var out: [UInt8] = []
    Varint.append(value, to: &out)
    return out
}

/// The values where the encoded length changes, plus the ends of the range.
private let boundaryValues: [UInt64] = {
    var values: [UInt64] = [0, 1, 127, 128, (1 << 14) - 1, 1 << 14, 1 << 63, UInt64.max, UInt64.max - 1]
    for k in stride(from: 7, through: 63, by: 7) {
        let power = UInt64(1) << UInt64(k)
        values += [power - 1, power, power + 1]
    }
    return values
}()

@Suite struct VarintTests {
    @Test func knownEncodings() {
        // LEB128: seven bits a byte, least significant group first.
        #expect(encode(0) == [0x00])
        #expect(encode(1) == [0x01])
        #expect(encode(127) == [0x7F])
        #expect(encode(128) == [0x80, 0x01])
        #expect(encode(300) == [0xAC, 0x02])
        #expect(encode((1 << 14) - 1) == [0xFF, 0x7F])
        #expect(encode(1 << 14) == [0x80, 0x80, 0x01])
        #expect(encode(1 << 63) == [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])
        #expect(encode(UInt64.max) == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
    }

    @Test func boundaryValuesRoundTrip() {
        for v in boundaryValues {
            let bytes = encode(v)
            #expect(bytes.count == Varint.length(of: v), "length(of: \(v))")
            #expect(bytes.count <= Varint.maxLength)
            let (decoded, offset) = decode(bytes)
            #expect(decoded == v, "round trip of \(v)")
            #expect(offset == bytes.count, "offset after \(v)")
            // Every byte but the last has the continuation bit.
            #expect(bytes.dropLast().allSatisfy { $0 & 0x80 != 0 })
            #expect(bytes.last! & 0x80 == 0)
        }
    }

    @Test func randomValuesRoundTripConcatenated() {
        var rng = SplitMix64(seed: 0x5EED_0001)
        var values: [UInt64] = []
        var stream: [UInt8] = [0xEE, 0xEE, 0xEE]  // decoding starts at a non-zero offset
        for _ in 0..<20_000 {
            // Spread over every length: shift a random word right by 0…63 bits.
            let v = rng.next() >> (rng.next() % 64)
            values.append(v)
            Varint.append(v, to: &stream)
        }
        var offset = 3
        stream.withUnsafeBytes { buffer in
            for (i, v) in values.enumerated() {
                let before = offset
                let decoded = Varint.read(buffer, at: &offset)
                #expect(decoded == v, "value \(i)")
                #expect(offset - before == Varint.length(of: v), "length of value \(i)")
                if decoded != v { break }
            }
        }
        #expect(offset == stream.count)
    }

    @Test func appendInt() {
        for v in [0, 1, 127, 128, 1 << 20, Int.max] {
            var a: [UInt8] = []
            Varint.append(v, to: &a)
            #expect(a == encode(UInt64(v)))
        }
    }

    @Test func lengthOfEveryBitWidth() {
        #expect(Varint.length(of: 0) == 1)
        for bits in 1...64 {
            let v = bits == 64 ? UInt64.max : (UInt64(1) << UInt64(bits)) - 1
            #expect(Varint.length(of: v) == (bits + 6) / 7, "\(bits) bits")
            #expect(Varint.length(of: UInt64(1) << UInt64(bits - 1)) == (bits + 6) / 7, "top bit \(bits)")
        }
    }

    @Test func truncatedInputReturnsNilAndKeepsOffset() {
        for v in boundaryValues {
            let bytes = encode(v)
            for cut in 0..<bytes.count {
                let prefix = Array(bytes[0..<cut])
                let (decoded, offset) = decode(prefix)
                #expect(decoded == nil, "\(v) cut to \(cut) bytes")
                #expect(offset == 0)
            }
        }
        // Reading at the very end of a buffer.
        let (decoded, offset) = decode([0x05], at: 1)
        #expect(decoded == nil)
        #expect(offset == 1)
    }

    @Test func overlongAndOverflowingEncodingsReturnNil() {
        // Eleven bytes: ten continuation bytes, then a terminator.
        let eleven = [UInt8](repeating: 0x80, count: 10) + [0x00]
        #expect(decode(eleven).value == nil)
        #expect(decode(eleven).offset == 0)
        // Ten bytes whose last one carries more than the single remaining bit.
        for last: UInt8 in [0x02, 0x03, 0x40, 0x7F] {
            let overflow = [UInt8](repeating: 0xFF, count: 9) + [last]
            #expect(decode(overflow).value == nil, "tenth byte \(last)")
        }
        // A tenth byte with the continuation bit set.
        #expect(decode([UInt8](repeating: 0xFF, count: 9) + [0x81, 0x00]).value == nil)
        #expect(decode([UInt8](repeating: 0x80, count: 9) + [0x80, 0x00]).value == nil)
        // The largest legal ten-byte encodings still decode.
        #expect(decode([UInt8](repeating: 0xFF, count: 9) + [0x01]).value == UInt64.max)
        #expect(decode([UInt8](repeating: 0x80, count: 9) + [0x01]).value == 1 << 63)
        #expect(decode([UInt8](repeating: 0x80, count: 9) + [0x00]).value == 0)
    }

    @Test func readLengthRespectsLimit() {
        func readLength(_ bytes: [UInt8], limit: Int) -> (Int?, Int) {
            var offset = 0
            let v = bytes.withUnsafeBytes { Varint.readLength($0, at: &offset, limit: limit) }
            return (v, offset)
        }
        #expect(readLength(encode(100), limit: 100).0 == 100)
        #expect(readLength(encode(100), limit: 1000).0 == 100)
        #expect(readLength(encode(101), limit: 100).0 == nil)
        #expect(readLength(encode(0), limit: 0).0 == 0)
        #expect(readLength(encode(1), limit: 0).0 == nil)
        #expect(readLength(encode(UInt64(Int.max)), limit: Int.max).0 == Int.max)
        #expect(readLength(encode(UInt64(Int.max) + 1), limit: Int.max).0 == nil)
        #expect(readLength(encode(UInt64.max), limit: Int.max).0 == nil)
        #expect(readLength([0x80], limit: 1000).0 == nil)
        // A successful read advances past the varint.
        #expect(readLength(encode(300) + [0x01], limit: 1000).1 == 2)
    }
}
