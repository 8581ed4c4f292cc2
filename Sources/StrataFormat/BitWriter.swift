/// Appends values of 0…64 bits to a byte array, most significant bit first: the first bit written
/// is bit 7 of byte 0. ``finish()`` pads the last byte with zero bits. The columnar codecs
/// (``TimestampColumn``, ``DoubleColumn``, ``IntegerColumn``) write through it.
package struct BitWriter {
    /// The completed bytes (the bits still pending in the accumulator are not in it yet).
    package private(set) var bytes: [UInt8]
    /// Pending bits, right-aligned; only the low `pendingBits` bits are meaningful.
    private var accumulator: UInt64 = 0
    /// Always < 8 between calls.
    private var pendingBits = 0

    /// A writer whose buffer has room for `capacity` bytes before it grows.
    package init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(max(0, capacity))
    }

    /// The number of bits written so far.
    package var bitCount: Int { bytes.count &* 8 &+ pendingBits }

    /// Appends the low `bits` bits of `value` (0…64; other widths are clamped into that range).
    @inlinable @inline(__always)
    package mutating func write(_ value: UInt64, bits: Int) {
        if bits > 32 {
            let width = min(bits, 64)
            write(value >> UInt64(32), bits: width - 32)
            write(value & 0xFFFF_FFFF, bits: 32)
            return
        }
        guard bits > 0 else { return }
        let mask: UInt64 = (1 << UInt64(bits)) &- 1
        accumulator = (accumulator << UInt64(bits)) | (value & mask)
        pendingBits += bits
        while pendingBits >= 8 {
            pendingBits -= 8
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(pendingBits)))
        }
    }

    /// Appends one bit.
    @inlinable @inline(__always)
    package mutating func write(bit: Bool) {
        write(bit ? 1 : 0, bits: 1)
    }

    /// Appends `value` as LEB128 (seven bits a group, least significant group first, the high bit
    /// of each 8-bit group set when another follows), not necessarily byte-aligned.
    package mutating func writeVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            write((v & 0x7F) | 0x80, bits: 8)
            v >>= 7
        }
        write(v, bits: 8)
    }

    /// Appends a signed value as the varint of its zigzag form.
    package mutating func writeSignedVarint(_ value: Int64) {
        writeVarint(ZigZag.encode(value))
    }

    /// Appends every bit `other` holds.
    package mutating func append(_ other: BitWriter) {
        for byte in other.bytes { write(UInt64(byte), bits: 8) }
        if other.pendingBits > 0 { write(other.accumulator, bits: other.pendingBits) }
    }

    /// Pads to a whole byte with zero bits and returns the bytes.
    package mutating func finish() -> [UInt8] {
        if pendingBits > 0 { write(0, bits: 8 - pendingBits) }
        return bytes
    }
}

/// Zigzag mapping of signed integers onto unsigned ones so that small magnitudes of either sign
/// become small numbers: 0 → 0, -1 → 1, 1 → 2, -2 → 3, … (Int64.min → UInt64.max).
@usableFromInline package enum ZigZag {
    @inlinable @inline(__always)
    package static func encode(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    @inlinable @inline(__always)
    package static func decode(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}

/// Two's-complement helpers for values stored in fewer than 64 bits.
package enum SignedBits {
    /// The fewest bits that hold `value` in two's complement: 0 for 0 (a zero-width field holds
    /// only 0), 1 for -1, 2 for 1 and -2, …, 64 for Int64.min and Int64.max.
    @inlinable @inline(__always)
    package static func width(of value: Int64) -> Int {
        if value == 0 { return 0 }
        let magnitude = value < 0 ? ~value : value
        return 65 - magnitude.leadingZeroBitCount
    }

    /// Sign-extends the low `bits` bits (0…64) of `raw`.
    @inlinable @inline(__always)
    package static func extend(_ raw: UInt64, bits: Int) -> Int64 {
        guard bits > 0 else { return 0 }
        guard bits < 64 else { return Int64(bitPattern: raw) }
        let shift = UInt64(64 - bits)
        return Int64(bitPattern: raw << shift) >> Int64(shift)
    }
}
