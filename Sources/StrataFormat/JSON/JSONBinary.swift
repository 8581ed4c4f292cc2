import Foundation

// The stored form of a JSON value (FORMAT.md §13.1). One type byte, then a body:
//
//   type  value    body
//   0x00  null     —
//   0x01  false    —
//   0x02  true     —
//   0x03  int      zigzag varint
//   0x04  double   u64 LE, the IEEE 754 bit pattern
//   0x05  string   varint byte length, UTF-8
//   0x06  date     u64 LE, the bit pattern of a Double: seconds since 2001-01-01T00:00:00Z
//   0x07  array    varint count, varint size, elements                 (size = bytes after it)
//   0x08  object   varint count, varint size, [u8 width, count × offset (width bytes LE)],
//                  entries: varint key length, key UTF-8, value — sorted by key bytes, no duplicates
//
// An object's offsets point from the start of the entries to each entry, so a reader finds one
// member by binary search without decoding the others. The type bytes never change.

/// The type bytes of the binary JSON form. Stored on disk: never change them.
package enum JSONBinaryType {
    package static let null: UInt8 = 0x00
    package static let `false`: UInt8 = 0x01
    package static let `true`: UInt8 = 0x02
    package static let int: UInt8 = 0x03
    package static let double: UInt8 = 0x04
    package static let string: UInt8 = 0x05
    package static let date: UInt8 = 0x06
    package static let array: UInt8 = 0x07
    package static let object: UInt8 = 0x08
}

extension JSON {
    /// Appends the binary form of the value (FORMAT.md §13.1) to `out`.
    package func appendBinary(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(JSONBinaryType.null)
        case .bool(let b): out.append(b ? JSONBinaryType.true : JSONBinaryType.false)
        case .int(let i):
            out.append(JSONBinaryType.int)
            Varint.append(UInt64(bitPattern: (i << 1) ^ (i >> 63)), to: &out)
        case .double(let d):
            out.append(JSONBinaryType.double)
            LittleEndian.append(d.bitPattern, to: &out)
        case .string(let s):
            out.append(JSONBinaryType.string)
            JSONBinaryWriter.appendString(s, to: &out)
        case .date(let d):
            out.append(JSONBinaryType.date)
            LittleEndian.append(d.timeIntervalSinceReferenceDate.bitPattern, to: &out)
        case .array(let elements):
            let bodyStart = out.count
            for element in elements { element.appendBinary(to: &out) }
            JSONBinaryWriter.insertHeader(type: JSONBinaryType.array, count: elements.count,
                                          directory: UnsafeBufferPointer(start: nil, count: 0), at: bodyStart, in: &out)
        case .object(let members):
            let sorted = members.sorted { JSONTextWriter.codePointLess($0.key, $1.key) }
            let bodyStart = out.count
            // The directory on the stack: an object's encoding allocates only its sorted members.
            withUnsafeTemporaryAllocation(of: Int.self, capacity: sorted.count) { offsets in
                for (i, (key, value)) in sorted.enumerated() {
                    offsets[i] = out.count - bodyStart
                    JSONBinaryWriter.appendString(key, to: &out)
                    value.appendBinary(to: &out)
                }
                JSONBinaryWriter.insertHeader(type: JSONBinaryType.object, count: sorted.count,
                                              directory: UnsafeBufferPointer(offsets), at: bodyStart, in: &out)
            }
        }
    }

    /// The binary form of the value (FORMAT.md §13.1).
    package var binaryEncoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        appendBinary(to: &out)
        return out
    }

    /// Decodes the binary form of one value that fills `binary` exactly.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` with file `"value"` and the offset
    ///   in `binary` of the first byte that cannot be right (an unknown type byte, a length past the
    ///   end, invalid UTF-8, unsorted or duplicate keys, a directory that disagrees with the
    ///   entries, nesting deeper than ``maximumNestingDepth``, bytes after the value).
    package init(binary: UnsafeRawBufferPointer) throws {
        let reader = JSONBinaryReader(buffer: binary)
        var offset = 0
        self = try reader.value(at: &offset, end: binary.count, depth: 0)
        if offset != binary.count { throw reader.corrupted(offset, "\(binary.count - offset) bytes after the value") }
    }

    /// Checks that `binary` is exactly one well-formed value, as ``init(binary:)-(UnsafeRawBufferPointer)``
    /// would find it, without building the value.
    ///
    /// - Throws: the ``StrataError/corrupted(file:offset:reason:)`` that `init(binary:)` throws.
    package static func validateBinary(_ binary: UnsafeRawBufferPointer) throws {
        let reader = JSONBinaryReader(buffer: binary)
        var offset = 0
        try reader.validate(at: &offset, end: binary.count, depth: 0)
        if offset != binary.count { throw reader.corrupted(offset, "\(binary.count - offset) bytes after the value") }
    }

    /// Decodes the binary form of one value that fills `binary` exactly.
    package init(binary: [UInt8]) throws {
        self = try binary.withUnsafeBytes { try JSON(binary: $0) }
    }
}

/// UTF-8 validation that is fast on the common, valid path.
package enum UTF8Text {
    /// The string of `bytes` when they are valid UTF-8; nil otherwise.
    ///
    /// `String(decoding:as:)` is fast but repairs invalid input with U+FFFD; the repaired string's
    /// UTF-8 differs from the input exactly when the input was invalid, so comparing the two
    /// validates (about ten times faster than `String(validating:as:)`).
    @inlinable @inline(__always)
    package static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        var s = String(decoding: bytes, as: UTF8.self)
        let valid = s.withUTF8 { utf8 -> Bool in
            guard utf8.count == bytes.count else { return false }
            guard let a = utf8.baseAddress, let b = bytes.baseAddress else { return true }
            return ByteComparison.compareMemory(a, b, count: bytes.count) == 0
        }
        return valid ? s : nil
    }

    /// The string of `bytes` when they are valid UTF-8; nil otherwise.
    @inlinable @inline(__always)
    package static func string(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { string($0) }
    }
}

/// Helpers of the binary writer.
package enum JSONBinaryWriter {
    @inlinable @inline(__always)
    package static func appendString(_ s: String, to out: inout [UInt8]) {
        Varint.appendLengthPrefixed(s, to: &out)
    }

    /// Inserts the header of an array or object before its already written body at `bodyStart`;
    /// `directory` holds an object's entry offsets (empty for an array, or an object without
    /// members). The header is built on the stack.
    package static func insertHeader(type: UInt8, count: Int, directory: UnsafeBufferPointer<Int>, at bodyStart: Int,
                                     in out: inout [UInt8]) {
        let entriesSize = out.count - bodyStart
        var size = entriesSize
        var width = 0
        if let largest = directory.last {
            width = largest <= 0xFF ? 1 : (largest <= 0xFFFF ? 2 : 4)
            size += 1 + width * directory.count
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21 + (width == 0 ? 0 : 1 + width * directory.count)) { header in
            var n = 0
            @inline(__always) func put(_ byte: UInt8) {
                header[n] = byte
                n += 1
            }
            @inline(__always) func putVarint(_ value: Int) {
                var v = UInt64(value)
                while v >= 0x80 {
                    put(UInt8(truncatingIfNeeded: v) | 0x80)
                    v >>= 7
                }
                put(UInt8(v))
            }
            put(type)
            putVarint(count)
            putVarint(size)
            if width > 0 {
                put(UInt8(width))
                for offset in directory {
                    var v = UInt32(truncatingIfNeeded: offset)
                    for _ in 0..<width {
                        put(UInt8(truncatingIfNeeded: v))
                        v >>= 8
                    }
                }
            }
            out.insert(contentsOf: UnsafeBufferPointer(rebasing: header[0..<n]), at: bodyStart)
        }
    }
}

/// A bounds-checked reader of the binary form.
package struct JSONBinaryReader {
    package let buffer: UnsafeRawBufferPointer

    package func corrupted(_ offset: Int, _ reason: String) -> StrataError {
        .corrupted(file: "value", offset: offset, reason: reason)
    }

    @inlinable @inline(__always)
    package func varint(at offset: inout Int, end: Int, what: String) throws -> UInt64 {
        let start = offset
        guard let v = Varint.read(UnsafeRawBufferPointer(rebasing: buffer[0..<end]), at: &offset) else {
            throw corrupted(start, "bad varint (\(what))")
        }
        return v
    }

    /// Reads a length that must fit in the bytes left before `end`.
    @inlinable @inline(__always)
    package func length(at offset: inout Int, end: Int, what: String) throws -> Int {
        let start = offset
        let v = try varint(at: &offset, end: end, what: what)
        guard v <= UInt64(end - offset) else { throw corrupted(start, "\(what) \(v) runs past the end (\(end - offset) bytes left)") }
        return Int(v)
    }

    package func string(at offset: inout Int, end: Int, what: String) throws -> String {
        let start = offset
        let n = try length(at: &offset, end: end, what: what)
        guard let s = UTF8Text.string(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n])) else {
            throw corrupted(start, "invalid UTF-8 in \(what)")
        }
        offset += n
        return s
    }

    /// The header of an array or object whose type byte is at `offset - 1`.
    package struct ContainerHeader {
        package var count: Int
        package var end: Int
        package var width: Int
        package var directory: Int
        package var entries: Int

    package init(count: Int, end: Int, width: Int, directory: Int, entries: Int) {
        self.count = count
        self.end = end
        self.width = width
        self.directory = directory
        self.entries = entries
    }
}

    package func containerHeader(at offset: inout Int, end: Int, isObject: Bool) throws -> ContainerHeader {
        let countOffset = offset
        let count = try length(at: &offset, end: end, what: "element count")
        let size = try length(at: &offset, end: end, what: "container size")
        let containerEnd = offset + size
        // Every element takes at least one byte.
        guard count <= size else { throw corrupted(countOffset, "count \(count) larger than the container's \(size) bytes") }
        var width = 0
        let directory = offset
        if isObject && count > 0 {
            width = Int(buffer[offset])
            guard width == 1 || width == 2 || width == 4 else { throw corrupted(offset, "bad offset width \(width)") }
            offset += 1
            guard count * width <= containerEnd - offset else { throw corrupted(offset, "key directory runs past the object") }
            offset += count * width
        }
        return ContainerHeader(count: count, end: containerEnd, width: width, directory: directory + 1, entries: offset)
    }

    /// Reads the key of member `index` of an object at `offset` — where the key directory must
    /// say it is, after `previous` in byte order — and moves past it to the member's value: the
    /// checks ``value(at:end:depth:)`` and ``validate(at:end:depth:)`` share. Returns the key's
    /// bytes (not yet checked as UTF-8) and the offset it starts at.
    @inline(__always)
    func objectKey(_ header: ContainerHeader, _ index: Int, at offset: inout Int,
                   after previous: UnsafeRawBufferPointer?) throws -> (bytes: UnsafeRawBufferPointer, offset: Int) {
        guard directoryEntry(header, index) == offset - header.entries else {
            throw corrupted(header.directory + index * header.width, "key directory disagrees with the entries")
        }
        let keyOffset = offset
        let keyLength = try length(at: &offset, end: header.end, what: "key length")
        let keyBytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + keyLength])
        if let previous, !previous.lexicographicallyPrecedes(keyBytes) {
            throw corrupted(keyOffset, "object keys not in strictly increasing order")
        }
        offset += keyLength
        return (keyBytes, keyOffset)
    }

    @inlinable @inline(__always)
    package func directoryEntry(_ header: ContainerHeader, _ index: Int) -> Int {
        var v = 0
        let base = header.directory + index * header.width
        for i in stride(from: header.width - 1, through: 0, by: -1) { v = v << 8 | Int(buffer[base + i]) }
        return v
    }

    package func value(at offset: inout Int, end: Int, depth: Int) throws -> JSON {
        guard offset < end else { throw corrupted(offset, "value runs past the end") }
        let typeOffset = offset
        let type = buffer[offset]
        offset += 1
        switch type {
        case JSONBinaryType.null: return .null
        case JSONBinaryType.false: return .bool(false)
        case JSONBinaryType.true: return .bool(true)
        case JSONBinaryType.int:
            let z = try varint(at: &offset, end: end, what: "int")
            return .int(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))))
        case JSONBinaryType.double, JSONBinaryType.date:
            guard end - offset >= 8 else { throw corrupted(typeOffset, "truncated 8-byte number") }
            let bits = LittleEndian.uint64(buffer, at: offset)
            offset += 8
            let d = Double(bitPattern: bits)
            return type == JSONBinaryType.double ? .double(d) : .date(Date(timeIntervalSinceReferenceDate: d))
        case JSONBinaryType.string:
            return .string(try string(at: &offset, end: end, what: "string"))
        case JSONBinaryType.array:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(typeOffset, "nesting deeper than \(JSON.maximumNestingDepth)") }
            let header = try containerHeader(at: &offset, end: end, isObject: false)
            var elements: [JSON] = []
            elements.reserveCapacity(header.count)
            for _ in 0..<header.count {
                elements.append(try value(at: &offset, end: header.end, depth: depth + 1))
            }
            guard offset == header.end else { throw corrupted(offset, "array size disagrees with its elements") }
            return .array(elements)
        case JSONBinaryType.object:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(typeOffset, "nesting deeper than \(JSON.maximumNestingDepth)") }
            let header = try containerHeader(at: &offset, end: end, isObject: true)
            var members: [String: JSON] = [:]
            members.reserveCapacity(header.count)
            var previousKey: UnsafeRawBufferPointer? = nil
            for index in 0..<header.count {
                let (keyBytes, keyOffset) = try objectKey(header, index, at: &offset, after: previousKey)
                guard let key = UTF8Text.string(keyBytes) else { throw corrupted(keyOffset, "invalid UTF-8 in key") }
                previousKey = keyBytes
                members[key] = try value(at: &offset, end: header.end, depth: depth + 1)
            }
            guard offset == header.end else { throw corrupted(offset, "object size disagrees with its members") }
            return .object(members)
        default:
            throw corrupted(typeOffset, "unknown type byte 0x\(String(type, radix: 16))")
        }
    }

    /// Checks the value at `offset` as ``value(at:end:depth:)`` does, and moves past it, without
    /// building it: the same errors at the same offsets, and no allocation for a value whose
    /// strings and keys are ASCII or at most 15 bytes.
    package func validate(at offset: inout Int, end: Int, depth: Int) throws {
        guard offset < end else { throw corrupted(offset, "value runs past the end") }
        let typeOffset = offset
        let type = buffer[offset]
        offset += 1
        switch type {
        case JSONBinaryType.null, JSONBinaryType.false, JSONBinaryType.true: return
        case JSONBinaryType.int:
            _ = try varint(at: &offset, end: end, what: "int")
        case JSONBinaryType.double, JSONBinaryType.date:
            guard end - offset >= 8 else { throw corrupted(typeOffset, "truncated 8-byte number") }
            offset += 8
        case JSONBinaryType.string:
            try validateText(at: &offset, end: end, what: "string")
        case JSONBinaryType.array:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(typeOffset, "nesting deeper than \(JSON.maximumNestingDepth)") }
            let header = try containerHeader(at: &offset, end: end, isObject: false)
            for _ in 0..<header.count { try validate(at: &offset, end: header.end, depth: depth + 1) }
            guard offset == header.end else { throw corrupted(offset, "array size disagrees with its elements") }
        case JSONBinaryType.object:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(typeOffset, "nesting deeper than \(JSON.maximumNestingDepth)") }
            let header = try containerHeader(at: &offset, end: end, isObject: true)
            var previousKey: UnsafeRawBufferPointer? = nil
            for index in 0..<header.count {
                let (keyBytes, keyOffset) = try objectKey(header, index, at: &offset, after: previousKey)
                guard Self.isValidText(keyBytes) else { throw corrupted(keyOffset, "invalid UTF-8 in key") }
                previousKey = keyBytes
                try validate(at: &offset, end: header.end, depth: depth + 1)
            }
            guard offset == header.end else { throw corrupted(offset, "object size disagrees with its members") }
        default:
            throw corrupted(typeOffset, "unknown type byte 0x\(String(type, radix: 16))")
        }
    }

    /// Checks a length-prefixed UTF-8 string as ``string(at:end:what:)`` does, without keeping it.
    private func validateText(at offset: inout Int, end: Int, what: String) throws {
        let start = offset
        let n = try length(at: &offset, end: end, what: what)
        guard Self.isValidText(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n])) else {
            throw corrupted(start, "invalid UTF-8 in \(what)")
        }
        offset += n
    }

    /// Whether `bytes` are valid UTF-8: ASCII at once, anything else through ``UTF8Text``.
    @inline(__always)
    private static func isValidText(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var any: UInt8 = 0
        for b in bytes { any |= b }
        return any < 0x80 || UTF8Text.string(bytes) != nil
    }

    package init(buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }
}

/// Operations on the binary JSON form that do not decode a whole value.
package enum JSONBinary {
    /// Reads one top-level member of an encoded object without decoding the rest.
    ///
    /// The object's sorted key directory makes this a binary search over the keys, then a decode of
    /// the one value. Returns nil when the member is absent or the value is not an object.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` when the bytes on the path of the
    ///   search are malformed.
    package static func member(_ name: String, in encoded: UnsafeRawBufferPointer) throws -> JSON? {
        let reader = JSONBinaryReader(buffer: encoded)
        guard !encoded.isEmpty else { throw reader.corrupted(0, "empty value") }
        guard encoded[0] == JSONBinaryType.object else { return nil }
        var offset = 1
        let header = try reader.containerHeader(at: &offset, end: encoded.count, isObject: true)
        var name = name
        return try name.withUTF8 { nameBytes -> JSON? in
            let target = UnsafeRawBufferPointer(nameBytes)
            var low = 0, high = header.count
            while low < high {
                let mid = (low + high) / 2
                var entry = header.entries + reader.directoryEntry(header, mid)
                guard entry < header.end else { throw reader.corrupted(header.directory + mid * header.width, "directory offset past the object") }
                let keyLength = try reader.length(at: &entry, end: header.end, what: "key length")
                let key = UnsafeRawBufferPointer(rebasing: encoded[entry..<entry + keyLength])
                let order = JSONBinary.compareBytes(key, target)
                if order == 0 {
                    var valueOffset = entry + keyLength
                    return try reader.value(at: &valueOffset, end: header.end, depth: 1)
                }
                if order < 0 { low = mid + 1 } else { high = mid }
            }
            return nil
        }
    }

    /// Reads one top-level member of an encoded object; see ``member(_:in:)-(_,UnsafeRawBufferPointer)``.
    package static func member(_ name: String, in encoded: [UInt8]) throws -> JSON? {
        try encoded.withUnsafeBytes { try member(name, in: $0) }
    }

    /// memcmp order: negative, zero or positive.
    @inlinable @inline(__always)
    package static func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = Swift.min(a.count, b.count)
        if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let c = ByteComparison.compareMemory(pa, pb, count: n)
            if c != 0 { return Int(c) }
        }
        return a.count - b.count
    }
}
