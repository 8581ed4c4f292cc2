/// LEB128 variable-length unsigned integers: seven bits a byte, least significant group first,
/// the high bit set on every byte but the last. A `UInt64` takes 1…10 bytes.
@_spi(Layers) public enum Varint {
    /// The largest encoded size of a `UInt64`.
    package static let maxLength = 10

    @inlinable @inline(__always)
    package static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inlinable @inline(__always)
    package static func append(_ value: Int, to bytes: inout [UInt8]) {
        append(UInt64(value), to: &bytes)
    }

    /// Appends a string as the varint length of its UTF-8 form followed by that UTF-8.
    @inlinable @inline(__always)
    package static func appendLengthPrefixed(_ string: String, to bytes: inout [UInt8]) {
        var s = string
        s.withUTF8 { utf8 in
            append(utf8.count, to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    /// The number of bytes `value` takes.
    package static func length(of value: UInt64) -> Int {
        var v = value, n = 1
        while v >= 0x80 { v >>= 7; n += 1 }
        return n
    }

    /// Decodes a varint at `offset` in `buffer`, advancing `offset`. Returns nil when the buffer ends
    /// inside the varint or the encoding is longer than ten bytes or overflows 64 bits.
    @inlinable @inline(__always)
    package static func read(_ buffer: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var i = offset
        while i < buffer.count {
            let byte = buffer[i]
            i += 1
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                offset = i
                return result
            }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    /// Like ``read(_:at:)`` but for lengths and counts that must fit in an `Int` no larger than `limit`.
    @inlinable @inline(__always)
    package static func readLength(_ buffer: UnsafeRawBufferPointer, at offset: inout Int, limit: Int) -> Int? {
        guard let v = read(buffer, at: &offset), v <= UInt64(limit) else { return nil }
        return Int(v)
    }
}

/// Fixed-width little-endian integers, the width of every stored field that is not a varint.
@_spi(Layers) public enum LittleEndian {
    @inlinable @inline(__always)
    package static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable @inline(__always)
    package static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Reads a `UInt32` at `offset`; the caller has checked `offset + 4 <= buffer.count`.
    @inlinable @inline(__always)
    package static func uint32(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Reads a `UInt64` at `offset`; the caller has checked `offset + 8 <= buffer.count`.
    @inlinable @inline(__always)
    package static func uint64(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}
