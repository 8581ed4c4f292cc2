/// Reads the bits a ``BitWriter`` wrote, most significant bit first. It never reads past its
/// buffer: every read returns nil when fewer bits remain than asked for, and leaves the position
/// unchanged then.
package struct BitReader: BitFieldReader {
    private let bytes: [UInt8]
    /// The position in bits from the start of the buffer (set back only to a position it was
    /// at, by ``BitFieldReader/readVarint()``).
    package var position: Int
    /// One past the last readable bit.
    package let end: Int

    /// A reader over `bytes` starting at byte `byteOffset` (clamped to the buffer).
    package init(_ bytes: [UInt8], byteOffset: Int = 0) {
        self.bytes = bytes
        end = bytes.count &* 8
        position = min(max(0, byteOffset), bytes.count) &* 8
    }

    /// Bits left to read.
    package var remainingBits: Int { end - position }

    /// Runs `body` on a ``ColumnReader`` over the same bytes from this position (the columns'
    /// decoders read through one), then continues after what it read.
    package mutating func withColumnReader<R>(_ body: (inout ColumnReader) throws -> R) rethrows -> R {
        let bytes = self.bytes
        let start = position
        var after = start
        defer { position = after }
        return try bytes.withUnsafeBytes { b in
            var reader = ColumnReader(b, position: start)
            defer { after = reader.position }
            return try body(&reader)
        }
    }

    /// Decodes a column of `count` values with one of the columns' fast decoders (which reads
    /// the column's header too), appending them to `values`; on a throw `values` is as it was.
    package mutating func appendColumn<T>(count: Int, zero: T, to values: inout [T],
                                  _ decode: (inout ColumnReader, UnsafeMutablePointer<T>) throws -> Void) throws {
        let start = values.count
        values.append(contentsOf: repeatElement(zero, count: count))
        do {
            try withColumnReader { r in
                if count == 0 {
                    var none = zero
                    try withUnsafeMutablePointer(to: &none) { try decode(&r, $0) }
                    return
                }
                try values.withUnsafeMutableBufferPointer { out in
                    guard let base = out.baseAddress else { return }
                    try decode(&r, base + start)
                }
            }
        } catch {
            values.removeSubrange(start...)
            throw error
        }
    }

    /// The column header at the current position, without moving (what a decoder sizes its
    /// output by).
    package func peekHeader(what: String, expected: ColumnEncoding, or alternative: ColumnEncoding? = nil) throws -> ColumnHeader {
        var copy = self
        return try ColumnHeader.read(from: &copy, what: what, expected: expected, or: alternative)
    }

    /// The byte holding the next bit (for error messages and for callers that resume byte-wise).
    package var byteOffset: Int { position >> 3 }

    /// Reads `bits` bits (0…64) as the low bits of the result; nil if the buffer holds fewer.
    @inlinable @inline(__always)
    package mutating func read(bits: Int) -> UInt64? {
        guard bits >= 0, bits <= 64, bits <= remainingBits else { return nil }
        let byte = position >> 3
        if bits <= 56, byte &+ 8 <= bytes.count {
            // Fast path: one unaligned big-endian word holds the bit offset within the byte plus
            // the bits asked for.
            let word = UInt64(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: byte, as: UInt64.self) })
            let shift = UInt64(position & 7)
            position += bits
            return bits == 0 ? 0 : (word << shift) >> UInt64(64 - bits)
        }
        var result: UInt64 = 0
        var need = bits
        var at = position
        while need > 0 {
            let used = at & 7
            let available = 8 - used
            let take = min(available, need)
            let byte = UInt64(bytes[at >> 3])
            let chunk = (byte >> UInt64(available - take)) & ((1 << UInt64(take)) &- 1)
            result = (result << UInt64(take)) | chunk
            at += take
            need -= take
        }
        position = at
        return result
    }

    /// Reads one bit; nil at the end of the buffer.
    @inlinable @inline(__always)
    package mutating func readBit() -> Bool? {
        guard position < end else { return nil }
        let bit = (bytes[position >> 3] >> UInt8(7 - (position & 7))) & 1
        position += 1
        return bit == 1
    }
}
