// The order-preserving tuple key encoding (see FORMAT.md, "Key encoding").
//
// Every key in Strata is a tuple of elements encoded so that comparing two encodings byte by byte
// as unsigned bytes (memcmp order) gives the same result as comparing the tuples logically.
//
//   element            type byte                     body
//   bytes              0x01                          bytes, each 0x00 written 0x00 0xFF, then 0x00
//   string (UTF-8)     0x02                          UTF-8, escaped and terminated like bytes
//   nested tuple       0x05                          the encoded elements, then 0x00
//   unsigned integer   0x10 + n      (n = 0...8)     n minimal bytes, big-endian
//   signed integer     0x28 + n (v > 0), 0x28 (0),   v > 0: n minimal bytes of v, big-endian;
//                      0x28 - n (v < 0)              v < 0: n minimal bytes of |v|, each inverted
//
// The type bytes are normative and never change; a retired one stays reserved.

/// One element of a tuple key.
///
/// Elements of different kinds order by kind — bytes < string < tuple < unsigned < signed — and
/// elements of one kind by value: bytes and strings lexicographically by unsigned byte (for strings
/// that is UTF-8 code unit order, which equals Unicode scalar order), integers numerically, tuples
/// element by element with a proper prefix first.
///
/// Equality and hashing are byte-exact: two elements are equal exactly when their encodings are.
/// Strings therefore compare by UTF-8 code units, not by Swift's canonical equivalence — the
/// precomposed `"é"` and `"e\u{301}"` are different keys.
package enum TupleElement: Hashable, Sendable, CustomStringConvertible {
    case bytes([UInt8])
    case string(String)
    case tuple([TupleElement])
    case uint(UInt64)
    case int(Int64)

    package static func == (lhs: TupleElement, rhs: TupleElement) -> Bool {
        switch (lhs, rhs) {
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.string(a), .string(b)): return a.utf8.elementsEqual(b.utf8)
        case let (.tuple(a), .tuple(b)): return a == b
        case let (.uint(a), .uint(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        default: return false
        }
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .bytes(let value):
            hasher.combine(TupleKey.TypeCode.bytes)
            hasher.combine(value)
        case .string(let value):
            hasher.combine(TupleKey.TypeCode.string)
            var contiguous = value  // withUTF8 may need to make a bridged string contiguous
            hasher.combine(contiguous.utf8.count)
            contiguous.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        case .tuple(let value):
            hasher.combine(TupleKey.TypeCode.tuple)
            hasher.combine(value)
        case .uint(let value):
            hasher.combine(TupleKey.TypeCode.uintZero)
            hasher.combine(value)
        case .int(let value):
            hasher.combine(TupleKey.TypeCode.intZero)
            hasher.combine(value)
        }
    }

    /// The element rendered the way ``TupleKey/describe(_:)`` renders it.
    package var description: String {
        var out = ""
        TupleKey.render(self, into: &out)
        return out
    }
}

/// Appends encoded tuple elements to a byte buffer.
///
/// This is the fast path for building keys on hot paths: the typed `append` methods write straight
/// into ``bytes`` without building ``TupleElement`` values, and allocate nothing beyond the
/// buffer's own growth.
///
/// ```swift
/// var key = TupleKeyEncoder()
/// key.append(3 as UInt64)
/// key.append("prices/AAPL")
/// key.append(42 as UInt64)
/// // key.bytes == [0x11, 0x03, 0x02, 0x70, …, 0x4C, 0x00, 0x11, 0x2A]
/// ```
package struct TupleKeyEncoder: Sendable {
    /// The encoding so far: the concatenation of the appended elements.
    package var bytes: [UInt8]

    package init(reservingCapacity capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends an unsigned integer: `0x10 + n`, then the `n` significant bytes big-endian.
    package mutating func append(_ value: UInt64) {
        TupleKey.appendUInt(value, to: &bytes)
    }

    /// Appends a signed integer.
    ///
    /// Positive values are `0x28 + n` and `n` bytes big-endian; zero is `0x28` alone; negative
    /// values are `0x28 - n` and the `n` bytes of the magnitude inverted, so that a larger
    /// magnitude sorts first and more bytes (a smaller type byte) sorts before fewer.
    package mutating func append(signed value: Int64) {
        if value >= 0 {
            let magnitude = UInt64(truncatingIfNeeded: value)
            let count = TupleKey.significantByteCount(magnitude)
            bytes.append(TupleKey.TypeCode.intZero &+ UInt8(truncatingIfNeeded: count))
            appendBigEndian(magnitude, count: count)
        } else {
            let magnitude = value.magnitude  // Int64.min has magnitude 2^63: 8 bytes
            let count = TupleKey.significantByteCount(magnitude)
            bytes.append(TupleKey.TypeCode.intZero &- UInt8(truncatingIfNeeded: count))
            // The low `count` bytes of ~magnitude are the one's complement of the magnitude's bytes.
            appendBigEndian(~magnitude, count: count)
        }
    }

    /// Appends a string: `0x02`, its UTF-8 with each 0x00 escaped as 0x00 0xFF, then 0x00.
    package mutating func append(_ string: String) {
        bytes.append(TupleKey.TypeCode.string)
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { appendEscapedBody($0) }
        if done == nil { appendEscapedBody(sequence: string.utf8) }
    }

    /// Appends a byte string: `0x01`, the bytes with each 0x00 escaped as 0x00 0xFF, then 0x00.
    package mutating func append(bytes value: some Sequence<UInt8>) {
        bytes.append(TupleKey.TypeCode.bytes)
        let done: Void? = value.withContiguousStorageIfAvailable { appendEscapedBody($0) }
        if done == nil { appendEscapedBody(sequence: value) }
    }

    /// Appends a byte string read from raw memory; the same encoding as ``append(bytes:)``.
    package mutating func append(bytes value: UnsafeRawBufferPointer) {
        bytes.append(TupleKey.TypeCode.bytes)
        value.withMemoryRebound(to: UInt8.self) { appendEscapedBody($0) }
    }

    /// Appends one element of any kind.
    package mutating func append(_ element: TupleElement) {
        switch element {
        case .bytes(let value): append(bytes: value)
        case .string(let value): append(value)
        case .tuple(let value): appendTuple(value)
        case .uint(let value): append(value)
        case .int(let value): append(signed: value)
        }
    }

    /// Appends a nested tuple: `0x05`, the encoded elements, then 0x00.
    ///
    /// Every element begins with a type byte of at least 0x01, so the closing 0x00 is unambiguous
    /// and sorts a tuple before every longer tuple it is a prefix of.
    package mutating func appendTuple(_ elements: [TupleElement]) {
        bytes.append(TupleKey.TypeCode.tuple)
        for element in elements { append(element) }
        bytes.append(TupleKey.terminator)
    }

    private mutating func appendBigEndian(_ value: UInt64, count: Int) {
        var index = count
        while index > 0 {
            index -= 1
            bytes.append(UInt8(truncatingIfNeeded: value &>> UInt64(index &* 8)))
        }
    }

    /// Writes an escaped body and its terminator, copying runs without 0x00 in one go.
    private mutating func appendEscapedBody(_ body: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var index = 0
        let count = body.count
        while index < count {
            if body[index] == 0x00 {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: body[runStart...index]))
                bytes.append(TupleKey.escape)
                runStart = index + 1
            }
            index += 1
        }
        if runStart < count {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: body[runStart..<count]))
        }
        bytes.append(TupleKey.terminator)
    }

    private mutating func appendEscapedBody(sequence: some Sequence<UInt8>) {
        for byte in sequence {
            bytes.append(byte)
            if byte == 0x00 { bytes.append(TupleKey.escape) }
        }
        bytes.append(TupleKey.terminator)
    }
}

/// A malformed tuple key: where in the key (a byte offset from its start) and what is wrong.
package struct TupleKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The offset of the offending byte, or the key's length when more bytes were expected.
    package let offset: Int
    package let reason: String

    package var description: String { "malformed tuple key at offset \(offset): \(reason)" }

    package init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
}

/// Reads the elements of an encoded tuple key back, one at a time.
///
/// Decoding accepts exactly the encodings ``TupleKeyEncoder`` produces — integers must use the
/// minimal length, strings must be well-formed UTF-8 — so a key that decodes re-encodes to the
/// same bytes. Anything else throws a ``TupleKeyError``; no input traps or reads out of bounds.
/// A call that throws leaves the decoder where it was.
package struct TupleKeyDecoder: Sendable {
    private let bytes: ArraySlice<UInt8>
    /// The index into `bytes` of the next element.
    private var position: Int

    package init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    /// Decodes a slice; error offsets count from the slice's first byte.
    package init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    /// Whether every element has been read.
    package var isAtEnd: Bool { position >= bytes.endIndex }

    /// The offset of the next element from the start of the key.
    package var offset: Int { position - bytes.startIndex }

    /// Reads the next element, whatever its kind.
    package mutating func next() throws(TupleKeyError) -> TupleElement {
        let start = position
        do throws(TupleKeyError) {
            return try element(depth: 0)
        } catch {
            position = start
            throw error
        }
    }

    /// Reads the next element, which must be an unsigned integer.
    package mutating func nextUInt() throws(TupleKeyError) -> UInt64 {
        try expect(TupleKey.TypeCode.uintZero...TupleKey.TypeCode.uintZero + 8, "an unsigned integer")
        return try readUInt()
    }

    /// Reads the next element, which must be a signed integer.
    package mutating func nextInt() throws(TupleKeyError) -> Int64 {
        try expect(TupleKey.TypeCode.intZero - 8...TupleKey.TypeCode.intZero + 8, "a signed integer")
        return try readInt()
    }

    /// Reads the next element, which must be a string.
    package mutating func nextString() throws(TupleKeyError) -> String {
        try expect(TupleKey.TypeCode.string...TupleKey.TypeCode.string, "a string")
        return try readString()
    }

    /// Reads the next element, which must be a byte string.
    package mutating func nextBytes() throws(TupleKeyError) -> [UInt8] {
        try expect(TupleKey.TypeCode.bytes...TupleKey.TypeCode.bytes, "bytes")
        return try readBytes()
    }

    // MARK: - Element bodies (each advances `position` only on success)

    private func expect(_ types: ClosedRange<UInt8>, _ what: String) throws(TupleKeyError) {
        guard position < bytes.endIndex else {
            throw failure(at: position, "expected \(what) but the key ends")
        }
        let type = bytes[position]
        guard types.contains(type) else {
            throw failure(at: position, "expected \(what), found \(TupleKey.kindName(type))")
        }
    }

    private mutating func element(depth: Int) throws(TupleKeyError) -> TupleElement {
        guard position < bytes.endIndex else {
            throw failure(at: position, "expected an element but the key ends")
        }
        let type = bytes[position]
        switch type {
        case TupleKey.TypeCode.bytes:
            return .bytes(try readBytes())
        case TupleKey.TypeCode.string:
            return .string(try readString())
        case TupleKey.TypeCode.tuple:
            guard depth < TupleKey.maxNestingDepth else {
                throw failure(at: position, "tuples nested deeper than \(TupleKey.maxNestingDepth) levels")
            }
            let start = position
            position += 1
            var elements: [TupleElement] = []
            while true {
                guard position < bytes.endIndex else {
                    throw failure(at: position, "nested tuple at offset \(start - bytes.startIndex) has no 0x00 terminator")
                }
                if bytes[position] == TupleKey.terminator {
                    position += 1
                    return .tuple(elements)
                }
                elements.append(try element(depth: depth + 1))
            }
        case 0x10...0x18:
            return .uint(try readUInt())
        case 0x20...0x30:
            return .int(try readInt())
        case 0x19...0x1F, 0x31...0x37:
            throw failure(at: position, "integer type byte \(TupleKey.hexByte(type)) means a length over 8 bytes")
        default:
            throw failure(at: position, "unknown type byte \(TupleKey.hexByte(type))")
        }
    }

    private mutating func readUInt() throws(TupleKeyError) -> UInt64 {
        let start = position
        let count = Int(bytes[start] &- TupleKey.TypeCode.uintZero)
        let value = try readBigEndian(count: count, elementStart: start, what: "unsigned integer")
        if count > 0 && bytes[start + 1] == 0x00 {
            throw failure(at: start + 1, "unsigned integer is not in its shortest form")
        }
        position = start + 1 + count
        return value
    }

    private mutating func readInt() throws(TupleKeyError) -> Int64 {
        let start = position
        let type = bytes[start]
        let zero = TupleKey.TypeCode.intZero
        let negative = type < zero
        let count = Int(negative ? zero &- type : type &- zero)
        let raw = try readBigEndian(count: count, elementStart: start, what: "signed integer")
        let value: Int64
        if count == 0 {
            value = 0
        } else if !negative {
            if bytes[start + 1] == 0x00 {
                throw failure(at: start + 1, "signed integer is not in its shortest form")
            }
            guard raw <= UInt64(Int64.max) else {
                throw failure(at: start + 1, "positive signed integer exceeds Int64.max")
            }
            value = Int64(truncatingIfNeeded: raw)
        } else {
            // An inverted leading 0xFF is a leading zero byte of the magnitude.
            if bytes[start + 1] == 0xFF {
                throw failure(at: start + 1, "signed integer is not in its shortest form")
            }
            let mask: UInt64 = count == 8 ? .max : (1 &<< UInt64(count &* 8)) &- 1
            let magnitude = ~raw & mask
            guard magnitude <= Int64.min.magnitude else {
                throw failure(at: start + 1, "negative signed integer is below Int64.min")
            }
            value = 0 &- Int64(truncatingIfNeeded: magnitude)  // 2^63 wraps to Int64.min
        }
        position = start + 1 + count
        return value
    }

    /// The `count` (0...8) big-endian bytes after the type byte at `elementStart`.
    private func readBigEndian(count: Int, elementStart: Int, what: String) throws(TupleKeyError) -> UInt64 {
        let first = elementStart + 1
        guard bytes.endIndex - first >= count else {
            throw failure(at: bytes.endIndex,
                          "\(what) at offset \(elementStart - bytes.startIndex) needs \(count) bytes, "
                          + "only \(bytes.endIndex - first) remain")
        }
        var value: UInt64 = 0
        var index = first
        while index < first + count {
            value = (value &<< 8) | UInt64(bytes[index])
            index += 1
        }
        return value
    }

    private mutating func readBytes() throws(TupleKeyError) -> [UInt8] {
        let body = try scanEscapedBody(what: "bytes")
        position = body.next
        return body.escaped ? unescape(body.range) : Array(bytes[body.range])
    }

    private mutating func readString() throws(TupleKeyError) -> String {
        let body = try scanEscapedBody(what: "string")
        if let bad = firstInvalidUTF8(in: body.range) {
            throw failure(at: bad, "string is not valid UTF-8")
        }
        position = body.next
        // Validated above, so decoding cannot substitute replacement characters.
        return body.escaped
            ? String(decoding: unescape(body.range), as: UTF8.self)
            : String(decoding: bytes[body.range], as: UTF8.self)
    }

    /// Finds the raw body of the bytes or string element at `position` — the bytes between the
    /// type byte and the terminator, escapes included — and the index after the terminator.
    /// A 0x00 followed by 0xFF is an escaped zero byte; any other 0x00 is the terminator.
    private func scanEscapedBody(what: String) throws(TupleKeyError) -> (range: Range<Int>, escaped: Bool, next: Int) {
        let bodyStart = position + 1
        let end = bytes.endIndex
        var escaped = false
        var index = bodyStart
        while index < end {
            if bytes[index] == TupleKey.terminator {
                if index + 1 < end && bytes[index + 1] == TupleKey.escape {
                    escaped = true
                    index += 2
                    continue
                }
                return (bodyStart..<index, escaped, index + 1)
            }
            index += 1
        }
        throw failure(at: end, "\(what) at offset \(position - bytes.startIndex) has no 0x00 terminator")
    }

    /// The body with every 0x00 0xFF pair turned back into 0x00.
    private func unescape(_ range: Range<Int>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            out.append(byte)
            index += byte == 0x00 ? 2 : 1  // skip the 0xFF of an escape
        }
        return out
    }

    /// The index of the first byte of an ill-formed UTF-8 sequence in a raw (still escaped)
    /// string body, or nil. Strict: no overlong forms, surrogates or values above U+10FFFF.
    private func firstInvalidUTF8(in range: Range<Int>) -> Int? {
        var index = range.lowerBound
        let end = range.upperBound
        while index < end {
            let lead = bytes[index]
            if lead < 0x80 {
                index += lead == 0x00 ? 2 : 1  // an escaped 0x00 is followed by its 0xFF
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return index
            }
            guard end - index >= length else { return index }
            let second = bytes[index + 1]
            guard second >= low && second <= high else { return index }
            var continuation = index + 2
            while continuation < index + length {
                guard bytes[continuation] & 0xC0 == 0x80 else { return index }
                continuation += 1
            }
            index += length
        }
        return nil
    }

    private func failure(at index: Int, _ reason: String) -> TupleKeyError {
        TupleKeyError(offset: index - bytes.startIndex, reason: reason)
    }
}

/// Whole-key operations on the tuple encoding.
package enum TupleKey {
    /// The type bytes. Normative: they never change, and a retired one stays reserved.
    package enum TypeCode {
        package static let bytes: UInt8 = 0x01
        package static let string: UInt8 = 0x02
        package static let tuple: UInt8 = 0x05
        /// Unsigned integers use 0x10 + n for n = 0...8 body bytes.
        package static let uintZero: UInt8 = 0x10
        /// Signed integers use 0x28 + n (positive), 0x28 (zero), 0x28 - n (negative), n = 1...8.
        package static let intZero: UInt8 = 0x28
    }

    /// Ends a bytes, string or nested tuple body.
    package static let terminator: UInt8 = 0x00
    /// Follows a 0x00 inside a bytes or string body to mark it as data, not the terminator.
    package static let escape: UInt8 = 0xFF

    /// The decoder rejects tuples nested deeper than this, so hostile input cannot exhaust the stack.
    package static let maxNestingDepth = 64

    package static func encode(_ elements: [TupleElement]) -> [UInt8] {
        var encoder = TupleKeyEncoder()
        for element in elements { encoder.append(element) }
        return encoder.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws(TupleKeyError) -> [TupleElement] {
        var decoder = TupleKeyDecoder(bytes)
        var elements: [TupleElement] = []
        while !decoder.isAtEnd {
            elements.append(try decoder.next())
        }
        return elements
    }

    /// The smallest byte string greater than every key that starts with `prefix` (for prefix range
    /// scans): drop trailing 0xFF bytes and increment the last byte; nil if the prefix is empty or
    /// all 0xFF, when no such bound exists.
    package static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
        guard let last = prefix.lastIndex(where: { $0 != 0xFF }) else { return nil }
        var successor = Array(prefix[...last])
        successor[last] += 1  // cannot overflow: the byte is not 0xFF
        return successor
    }

    /// Renders a key for people, e.g. `(3, "prices/AAPL", 42)`.
    ///
    /// Unsigned integers print as plain numbers and signed ones always with a sign (`+7`, `-7`,
    /// `+0`), so the two kinds stay distinguishable; strings print as Swift string literals, bytes
    /// in hex like `x'00ff'`, nested tuples in parentheses. A key that does not decode prints as
    /// the hex of all its bytes, without parentheses.
    package static func describe(_ key: [UInt8]) -> String {
        guard let elements = try? decode(key) else { return hex(key) }
        var out = ""
        renderTuple(elements, into: &out)
        return out
    }

    // MARK: - Unsigned integers on hot paths

    /// Appends the encoding of one unsigned integer element to `out` — the bytes
    /// `TupleKeyEncoder.append(_: UInt64)` writes — for hot paths that reuse a buffer of their
    /// own (keys of time-series events and history messages). Allocates nothing beyond the
    /// buffer's growth.
    @inlinable @inline(__always)
    package static func appendUInt(_ value: UInt64, to out: inout [UInt8]) {
        let count = significantByteCount(value)
        out.append(TypeCode.uintZero &+ UInt8(truncatingIfNeeded: count))
        var shift = count &* 8
        while shift > 0 {
            shift &-= 8
            out.append(UInt8(truncatingIfNeeded: value &>> UInt64(shift)))
        }
    }

    /// Reads the unsigned integer element at `offset` of `bytes` and moves `offset` past it; nil,
    /// with `offset` unchanged, when the bytes there are not one.
    ///
    /// Accepts exactly what ``TupleKeyDecoder/nextUInt()`` accepts — the type byte `0x10...0x18`,
    /// all its body bytes present, the shortest form (no leading 0x00) — without throwing or
    /// allocating, for decoding keys in cursors.
    @inlinable @inline(__always)
    package static func readUInt(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        guard offset >= 0, offset < bytes.count else { return nil }
        let type = bytes[offset]
        guard type >= TypeCode.uintZero, type <= TypeCode.uintZero &+ 8 else { return nil }
        let count = Int(type &- TypeCode.uintZero)
        guard bytes.count &- offset &- 1 >= count else { return nil }
        if count > 0 && bytes[offset &+ 1] == 0x00 { return nil }  // not the shortest form
        var value: UInt64 = 0
        var index = offset &+ 1
        let end = index &+ count
        while index < end {
            value = (value &<< 8) | UInt64(bytes[index])
            index &+= 1
        }
        offset = end
        return value
    }

    // MARK: - Helpers

    /// The number of bytes (0...8) needed to hold `value` without leading zero bytes.
    package static func significantByteCount(_ value: UInt64) -> Int {
        (64 - value.leadingZeroBitCount + 7) / 8
    }

    package static func render(_ element: TupleElement, into out: inout String) {
        switch element {
        case .bytes(let value): out += hex(value)
        case .string(let value): out += value.debugDescription
        case .tuple(let value): renderTuple(value, into: &out)
        case .uint(let value): out += String(value)
        case .int(let value): out += value >= 0 ? "+" + String(value) : String(value)
        }
    }

    private static func renderTuple(_ elements: [TupleElement], into out: inout String) {
        out += "("
        for (index, element) in elements.enumerated() {
            if index > 0 { out += ", " }
            render(element, into: &out)
        }
        out += ")"
    }

    private static let hexDigits: [Character] = Array("0123456789abcdef")

    package static func hex(_ bytes: [UInt8]) -> String {
        var out = "x'"
        out.reserveCapacity(bytes.count * 2 + 3)
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
        out += "'"
        return out
    }

    package static func hexByte(_ byte: UInt8) -> String {
        "0x" + String(hexDigits[Int(byte >> 4)]) + String(hexDigits[Int(byte & 0x0F)])
    }

    /// What a type byte introduces, for error messages.
    package static func kindName(_ type: UInt8) -> String {
        switch type {
        case TypeCode.bytes: return "bytes"
        case TypeCode.string: return "a string"
        case TypeCode.tuple: return "a nested tuple"
        case 0x10...0x18: return "an unsigned integer"
        case 0x20...0x30: return "a signed integer"
        default: return "type byte \(hexByte(type))"
        }
    }
}
