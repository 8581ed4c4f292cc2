/// What reading the fields a ``BitWriter`` wrote needs of a reader: a bit position and a checked
/// read of up to 64 bits. ``BitReader`` and ``ColumnReader`` share the varint fields through it.
package protocol BitFieldReader {
    /// The position in bits from the start of the bytes; a reader only ever sets it back to a
    /// position it has been at.
    var position: Int { get set }

    /// Reads `bits` bits (0…64) as the low bits of the result; nil, position unchanged, if fewer
    /// remain.
    mutating func read(bits: Int) -> UInt64?
}

extension BitFieldReader {
    /// Reads a varint written by ``BitWriter/writeVarint(_:)``; nil, position unchanged, when the
    /// bytes end inside it, it is longer than ten groups or it overflows 64 bits.
    @inlinable @inline(__always)
    package mutating func readVarint() -> UInt64? {
        let start = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard let group = read(bits: 8) else { position = start; return nil }
            if shift == 63 && group > 1 { position = start; return nil }
            result |= (group & 0x7F) << shift
            if group < 0x80 { return result }
            shift += 7
            if shift > 63 { position = start; return nil }
        }
    }

    /// Reads a zigzag varint written by ``BitWriter/writeSignedVarint(_:)``.
    @inlinable @inline(__always)
    package mutating func readSignedVarint() -> Int64? {
        readVarint().map(ZigZag.decode)
    }
}
