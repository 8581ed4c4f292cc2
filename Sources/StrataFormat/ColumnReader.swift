/// Reads the bits a ``BitWriter`` wrote (most significant bit first) out of borrowed bytes, for
/// the columns' fast decoders (``SeriesChunk/decodeColumns(_:base:timestamps:authors:edits:doubles:)``).
///
/// Unlike ``BitReader`` it does not own its bytes, and its hot-loop primitive ``peek()`` returns
/// the next 57 or more bits as one word without a bounds check of its own: a decoder checks once
/// that a run of fields fits in ``remainingBits``, then takes them out of words. ``peek()`` never
/// touches memory outside the bytes (past their end it reads zero bits), so a wrong length check
/// gives wrong values, never an out-of-bounds read.
package struct ColumnReader: BitFieldReader {
    private let base: UnsafeRawPointer?
    /// The number of bytes.
    package let count: Int
    /// The position in bits from the start of the bytes.
    package var position: Int

    /// A reader over `bytes` from bit `position` (clamped to the bytes).
    package init(_ bytes: UnsafeRawBufferPointer, position: Int = 0) {
        base = bytes.baseAddress
        count = bytes.count
        self.position = min(max(0, position), bytes.count &* 8)
    }

    /// Bits left to read.
    @inlinable @inline(__always)
    package var remainingBits: Int { count &* 8 &- position }

    /// The byte holding the next bit, for error messages.
    package var byteOffset: Int { position >> 3 }

    /// The bits from ``position`` on, the next bit in bit 63. At least the top 57 bits are the
    /// bytes' (when that many remain); bits past the end of the bytes are zero.
    @inlinable @inline(__always)
    package func peek() -> UInt64 { peek(at: position) }

    /// ``peek()`` at bit `position` (≥ 0) instead of ``position``: for loops that keep the
    /// position in a local variable (a copy of the reader whose fields the compiler can keep in
    /// registers, and no store of the position per value).
    @inlinable @inline(__always)
    package func peek(at position: Int) -> UInt64 {
        let byte = position &>> 3
        let word: UInt64
        if byte &+ 8 <= count, let base {
            word = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt64.self))
        } else {
            word = tail(from: byte)
        }
        return word &<< UInt64(position & 7)
    }

    /// Bit positions below this one have their whole 8-byte word within the bytes, for
    /// ``word(at:)``.
    package var wordLimit: Int { base == nil ? 0 : (count &- 7) &* 8 }

    /// How many fields of `width` bits (≥ 1), back to back from bit `position`, start below
    /// ``wordLimit`` — the fields a loop may take with ``word(at:)``.
    @inlinable @inline(__always)
    package func fieldsInWords(from position: Int, width: Int) -> Int {
        let limit = wordLimit
        return position < limit ? (limit &- 1 &- position) / width &+ 1 : 0
    }

    /// ``peek(at:)`` without the check for the end: `position` MUST be below ``wordLimit``
    /// (the caller counts its fields with ``fieldsInWords(from:width:)``).
    @inlinable @inline(__always)
    package func word(at position: Int) -> UInt64 {
        UInt64(bigEndian: base.unsafelyUnwrapped.loadUnaligned(fromByteOffset: position &>> 3, as: UInt64.self))
            &<< UInt64(position & 7)
    }

    /// The last bytes, fewer than 8, big-endian in a word padded with zero bytes.
    @inline(never)
    private func tail(from byte: Int) -> UInt64 {
        var word: UInt64 = 0
        var i = byte
        while i < byte &+ 8 {
            word &<<= 8
            if i < count, let base { word |= UInt64(base.load(fromByteOffset: i, as: UInt8.self)) }
            i &+= 1
        }
        return word
    }

    /// Reads `bits` bits (0…64) as the low bits of the result; nil (position unchanged) when
    /// fewer remain or `bits` is out of range.
    @inlinable @inline(__always)
    package mutating func read(bits: Int) -> UInt64? {
        guard bits >= 0, bits <= 64, bits <= remainingBits else { return nil }
        return readUnchecked(bits: bits)
    }

    /// Reads `bits` bits (0…64) the caller has checked are there.
    @inlinable @inline(__always)
    package mutating func readUnchecked(bits: Int) -> UInt64 {
        if bits == 0 { return 0 }
        if bits <= 57 {
            let value = peek() &>> UInt64(64 &- bits)
            position &+= bits
            return value
        }
        let high = peek() &>> 32
        position &+= 32
        let low = peek() &>> UInt64(64 &- (bits &- 32))
        position &+= bits &- 32
        return high &<< UInt64(bits &- 32) | low
    }

    /// Reads one bit; nil at the end.
    @inlinable @inline(__always)
    package mutating func readBit() -> Bool? {
        guard position < count &* 8 else { return nil }
        return readUnchecked(bits: 1) == 1
    }
}
