/// Reads the fields of one stored record out of borrowed bytes, checking every length against the
/// bytes it has: the one reader that record decoders share.
///
/// Every read either returns the field and moves past it, or throws
/// ``StrataError/corrupted(file:offset:reason:)`` naming the record (``file``), the offset of the
/// field and the field; it never traps and never reads outside ``buffer``, whatever the bytes say
/// (a length or count near `UInt64.max` is refused before it is added to an offset). After a throw
/// the position is unspecified: a decoder stops at the first bad field.
///
/// Fixed-width integers are little-endian (``LittleEndian``), varints LEB128 (``Varint``), strings
/// `varint byteCount ‖ UTF-8`.
@_spi(Layers) public struct ByteReader {
    /// The bytes read; valid only as long as the caller keeps them alive.
    @usableFromInline package let buffer: UnsafeRawBufferPointer
    /// The position of the next field, `0 ... buffer.count` (only the reads move it).
    @usableFromInline var position: Int
    /// What the record is (`document`, `change`); empty when ``name`` says it all.
    @usableFromInline let kind: StaticString
    /// The record's name, shown quoted after ``kind`` when there is one.
    @usableFromInline let name: String

    /// A reader over `buffer` from `offset` (clamped to the buffer), whose errors name the record
    /// `file`.
    @inlinable
    package init(_ buffer: UnsafeRawBufferPointer, file: String, offset: Int = 0) {
        self.buffer = buffer
        position = min(max(0, offset), buffer.count)
        kind = ""
        name = file
    }

    /// A reader whose errors name the record `kind "name"` (the description is built only when
    /// an error is thrown).
    @inlinable
    package init(_ buffer: UnsafeRawBufferPointer, kind: StaticString, name: String, offset: Int = 0) {
        self.buffer = buffer
        position = min(max(0, offset), buffer.count)
        self.kind = kind
        self.name = name
    }

    /// Runs `body` with a reader over `bytes` (the reader must not escape it).
    @inlinable
    package static func read<R>(_ bytes: [UInt8], file: String, offset: Int = 0,
                                _ body: (inout ByteReader) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer, file: file, offset: offset)
            return try body(&reader)
        }
    }

    /// The position of the next field, `0 ... buffer.count`.
    @inlinable @inline(__always)
    package var offset: Int { position }

    /// What errors name as the file: ``name``, or `kind "name"`.
    package var file: String {
        kind.utf8CodeUnitCount == 0 ? name : "\(kind) \(name.debugDescription)"
    }

    /// The bytes left to read.
    @inlinable @inline(__always)
    package var remaining: Int { buffer.count &- offset }

    /// Whether every byte has been read.
    @inlinable @inline(__always)
    package var isAtEnd: Bool { offset == buffer.count }

    /// The error for a fault at `offset`.
    @inline(never)
    @usableFromInline package func corrupted(at offset: Int, _ reason: String) -> StrataError {
        .corrupted(file: file, offset: offset, reason: reason)
    }

    /// The error for a fault at the current position.
    package func corrupted(_ reason: String) -> StrataError {
        corrupted(at: offset, reason)
    }

    @inline(never) @usableFromInline
    func endsInside(_ field: String) -> StrataError {
        corrupted(at: offset, "value ends inside \(field)")
    }

    /// Throws unless every byte has been read.
    package func expectEnd(_ what: String = "the record") throws {
        guard isAtEnd else { throw corrupted(at: offset, "\(remaining) bytes after \(what)") }
    }

    // MARK: Fixed width

    /// One byte.
    @inlinable @inline(__always)
    package mutating func uint8(_ field: String) throws -> UInt8 {
        guard offset < buffer.count else { throw endsInside(field) }
        defer { position &+= 1 }
        return buffer[offset]
    }

    /// A little-endian `UInt32`.
    @inlinable @inline(__always)
    package mutating func uint32(_ field: String) throws -> UInt32 {
        guard remaining >= 4 else { throw endsInside(field) }
        defer { position &+= 4 }
        return LittleEndian.uint32(buffer, at: offset)
    }

    /// A little-endian `UInt64`.
    @inlinable @inline(__always)
    package mutating func uint64(_ field: String) throws -> UInt64 {
        guard remaining >= 8 else { throw endsInside(field) }
        defer { position &+= 8 }
        return LittleEndian.uint64(buffer, at: offset)
    }

    /// A `Double` stored as the little-endian `UInt64` of its bit pattern.
    @inlinable @inline(__always)
    package mutating func double(_ field: String) throws -> Double {
        Double(bitPattern: try uint64(field))
    }

    // MARK: Varints

    /// A varint (``Varint/read(_:at:)``).
    @inlinable @inline(__always)
    package mutating func varint(_ field: String) throws -> UInt64 {
        guard let v = Varint.read(buffer, at: &position) else { throw badVarint(field) }
        return v
    }

    @inline(never) @usableFromInline
    func badVarint(_ field: String) -> StrataError {
        corrupted(at: offset, "bad varint (\(field))")
    }

    /// A zigzag varint (``ZigZag``).
    @inlinable @inline(__always)
    package mutating func signedVarint(_ field: String) throws -> Int64 {
        ZigZag.decode(try varint(field))
    }

    /// A varint that must fit in an `Int` no larger than `limit`.
    @inlinable
    package mutating func int(_ field: String, limit: Int = .max) throws -> Int {
        let start = offset
        let v = try varint(field)
        guard v <= UInt64(max(0, limit)) else {
            throw corrupted(at: start, "\(field) \(v) exceeds the limit \(limit)")
        }
        return Int(v)
    }

    /// A count of entries that take at least one byte each (or a length of bytes that follow),
    /// so at most ``remaining`` after it.
    @inlinable
    package mutating func count(_ field: String) throws -> Int {
        let start = offset
        let v = try varint(field)
        guard v <= UInt64(remaining) else {
            throw corrupted(at: start, "\(field) \(v) exceeds the \(remaining) bytes left")
        }
        return Int(v)
    }

    // MARK: Byte strings

    /// The next `count` bytes, a view into ``buffer``.
    @inlinable
    package mutating func bytes(_ count: Int, _ field: String) throws -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw endsInside(field) }
        defer { position &+= count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)])
    }

    /// A `varint byteCount ‖ bytes` string, a view into ``buffer``.
    @inlinable
    package mutating func lengthPrefixedBytes(_ field: String) throws -> UnsafeRawBufferPointer {
        let n = try count(field + " length")
        return try bytes(n, field)
    }

    /// A `varint byteCount ‖ UTF-8` string.
    @inlinable
    package mutating func string(_ field: String) throws -> String {
        let start = offset
        let utf8 = try lengthPrefixedBytes(field)
        guard let s = String(validating: utf8, as: UTF8.self) else {
            throw corrupted(at: start, "\(field) is not UTF-8")
        }
        return s
    }

    /// The bytes left, a view into ``buffer``; the reader is then at its end.
    @inlinable
    package mutating func rest() -> UnsafeRawBufferPointer {
        defer { position = buffer.count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset...])
    }

    /// The bytes left as UTF-8; the reader is then at its end.
    package mutating func restAsString(_ field: String) throws -> String {
        let start = offset
        guard let s = String(validating: rest(), as: UTF8.self) else {
            throw corrupted(at: start, "\(field) is not UTF-8")
        }
        return s
    }

    /// Moves past `count` bytes.
    @inlinable
    package mutating func skip(_ count: Int, _ field: String) throws {
        _ = try bytes(count, field)
    }
}
