import Foundation

// JSON text (RFC 8259): parsing into a `JSON` tree and writing compact text. This is the form
// documents are exchanged in (`Document(json:)`, `jsonData()`), not the form they are stored in:
// the stored form is the binary encoding of JSONBinary.swift (FORMAT.md §13.1).

extension JSON: CustomStringConvertible {
    /// The value as compact JSON text, object members sorted by key (by Unicode code point).
    ///
    /// ```swift
    /// let value: JSON = ["b": [1, 2.5, nil], "a": "x"]
    /// value.description   // {"a":"x","b":[1,2.5,null]}
    /// ```
    public var description: String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        JSONTextWriter.write(self, to: &out, sortedKeys: true)
        return String(decoding: out, as: UTF8.self)
    }
}

extension JSON {
    /// The deepest nesting of arrays and objects accepted in JSON text and in the binary form.
    ///
    /// Deeper input is rejected (rather than risking the stack): JSON text with an invalid-argument
    /// error, stored bytes with a corruption error.
    public static let maximumNestingDepth = 512

    /// Parses RFC 8259 JSON text (UTF-8).
    ///
    /// Numbers written without a fraction or an exponent that fit in an `Int64` become ``int(_:)``;
    /// every other number becomes ``double(_:)`` (a number beyond the range of `Double` is an
    /// error). Strings stay ``string(_:)`` — a date is never guessed from a string. Duplicate object
    /// members keep the last value. Whitespace around the value is allowed; anything else after it
    /// is an error.
    ///
    /// ```swift
    /// let value = try JSON(parsing: Data(#"{"qty": 2, "price": 9.5, "tags": ["a"]}"#.utf8))
    /// value["qty"]     // .int(2)
    /// value["price"]   // .double(9.5)
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` naming the byte offset of the first error,
    ///   e.g. `invalid JSON text at byte 12: expected ',' or '}'`.
    public init(parsing text: Data) throws {
        self = try text.withUnsafeBytes { try JSONTextParser.parse($0) }
    }

    /// Parses RFC 8259 JSON text; the same rules as ``init(parsing:)-(Data)``.
    public init(parsing text: String) throws {
        var text = text
        self = try text.withUTF8 { try JSONTextParser.parse(UnsafeRawBufferPointer($0)) }
    }

    /// The value as compact JSON text (UTF-8, no insignificant whitespace).
    ///
    /// A `date` is written as its ISO 8601 string (``iso8601String(_:)``). JSON text has no
    /// infinities or NaN, so a non-finite `double` is written as `null`. Strings escape `"`, `\`
    /// and the control characters below U+0020 only; other characters are written as UTF-8.
    ///
    /// - Parameter sortedKeys: Write object members sorted by key (by Unicode code point), which
    ///   makes the text deterministic; otherwise they come in dictionary order.
    public func jsonData(sortedKeys: Bool = false) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        JSONTextWriter.write(self, to: &out, sortedKeys: sortedKeys)
        return Data(out)
    }
}

/// Writes JSON text.
package enum JSONTextWriter {
    package static func write(_ value: JSON, to out: inout [UInt8], sortedKeys: Bool) {
        switch value {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])  // null
        case .bool(let b):
            if b { out.append(contentsOf: [0x74, 0x72, 0x75, 0x65]) } else { out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65]) }
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite {
                out.append(contentsOf: d.description.utf8)
            } else {
                out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
            }
        case .string(let s): writeString(s, to: &out)
        case .date(let d): writeString(JSON.iso8601String(d), to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                write(element, to: &out, sortedKeys: sortedKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            if sortedKeys {
                for key in members.keys.sorted(by: JSONTextWriter.codePointLess) {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    writeString(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    write(members[key] ?? .null, to: &out, sortedKeys: true)
                }
            } else {
                for (key, member) in members {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    writeString(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    write(member, to: &out, sortedKeys: false)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Orders strings by Unicode code point (equivalently, by UTF-8 bytes).
    package static func codePointLess(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in JSONBinary.compareBytes(UnsafeRawBufferPointer(pa), UnsafeRawBufferPointer(pb)) < 0 }
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    package static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(byte)
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            case 0x00..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30])
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// A recursive-descent parser of JSON text over raw UTF-8 bytes.
package struct JSONTextParser {
    package let bytes: UnsafeRawBufferPointer
    package var position = 0

    /// A parser at the start of `bytes`.
    package init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    package static func parse(_ bytes: UnsafeRawBufferPointer) throws -> JSON {
        var parser = JSONTextParser(bytes: bytes)
        // A UTF-8 byte order mark is not JSON text (RFC 8259 §8.1 lets a parser ignore it).
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { parser.position = 3 }
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.position < bytes.count { throw parser.error("unexpected text after the value") }
        return value
    }

    package func error(_ message: String, at offset: Int? = nil) -> StrataError {
        .invalidArgument(argument: "json", reason: "invalid JSON text at byte \(offset ?? position): \(message)")
    }

    @inlinable @inline(__always)
    package mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    package mutating func parseValue(depth: Int) throws -> JSON {
        guard position < bytes.count else { throw error("unexpected end of text, expected a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character, expected a value")
        }
    }

    package mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        let start = position
        guard bytes.count - position >= count else { throw error("invalid literal", at: start) }
        let p = literal.utf8Start
        for i in 0..<count where bytes[position + i] != p[i] { throw error("invalid literal", at: start) }
        position += count
    }

    package mutating func parseObject(depth: Int) throws -> JSON {
        if depth > JSON.maximumNestingDepth { throw error("nesting deeper than \(JSON.maximumNestingDepth)") }
        position += 1  // {
        var members: [String: JSON] = [:]
        skipWhitespace()
        if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error(position < bytes.count ? "expected a member name" : "unexpected end of text, expected a member name")
            }
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            members[key] = try parseValue(depth: depth)
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of text, expected ',' or '}'") }
            let c = bytes[position]
            position += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { return .object(members) }
            throw error("expected ',' or '}'", at: position - 1)
        }
    }

    package mutating func parseArray(depth: Int) throws -> JSON {
        if depth > JSON.maximumNestingDepth { throw error("nesting deeper than \(JSON.maximumNestingDepth)") }
        position += 1  // [
        var elements: [JSON] = []
        skipWhitespace()
        if position < bytes.count && bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of text, expected ',' or ']'") }
            let c = bytes[position]
            position += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "]") { return .array(elements) }
            throw error("expected ',' or ']'", at: position - 1)
        }
    }

    package mutating func parseNumber() throws -> JSON {
        let start = position
        let scan = Self.scanNumber(bytes, from: start)
        if let failure = scan.failure { throw error(failure.message, at: failure.offset) }
        position = scan.end
        let isInteger = scan.isInteger
        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
        if isInteger, let i = Self.int64(text) { return .int(i) }
        let string = String(decoding: text, as: UTF8.self)
        guard let d = Double(string), d.isFinite else { throw error("number out of range", at: start) }
        return .double(d)
    }

    @inlinable @inline(__always)
    package func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// Scans RFC 8259's number grammar at `start` (where `-` or a digit stands): where the number
    /// ends and whether it is an integer, or the first violation and its offset. Shared by every
    /// JSON scanner of the module, so they accept exactly the same numbers.
    package static func scanNumber(_ bytes: UnsafeRawBufferPointer, from start: Int)
        -> (end: Int, isInteger: Bool, failure: (message: String, offset: Int)?) {
        func digit(_ p: Int) -> Bool { p < bytes.count && bytes[p] >= 0x30 && bytes[p] <= 0x39 }
        var p = start
        var isInteger = true
        if p < bytes.count && bytes[p] == UInt8(ascii: "-") { p += 1 }
        guard digit(p) else { return (p, true, ("expected a digit", p)) }
        if bytes[p] == UInt8(ascii: "0") {
            p += 1
            if digit(p) { return (p, true, ("leading zero in a number", start)) }
        } else {
            while digit(p) { p += 1 }
        }
        if p < bytes.count && bytes[p] == UInt8(ascii: ".") {
            isInteger = false
            p += 1
            guard digit(p) else { return (p, false, ("expected a digit after '.'", p)) }
            while digit(p) { p += 1 }
        }
        if p < bytes.count && (bytes[p] == UInt8(ascii: "e") || bytes[p] == UInt8(ascii: "E")) {
            isInteger = false
            p += 1
            if p < bytes.count && (bytes[p] == UInt8(ascii: "+") || bytes[p] == UInt8(ascii: "-")) { p += 1 }
            guard digit(p) else { return (p, false, ("expected a digit in the exponent", p)) }
            while digit(p) { p += 1 }
        }
        return (p, isInteger, nil)
    }

    /// The integer of a validated digit string (with an optional `-`), or nil on overflow.
    package static func int64(_ text: UnsafeRawBufferPointer) -> Int64? {
        var i = 0
        let negative = text[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var magnitude: UInt64 = 0
        while i < text.count {
            let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(text[i] &- 0x30))
            if o1 || o2 { return nil }
            magnitude = s
            i += 1
        }
        if negative {
            if magnitude <= UInt64(Int64.max) { return -Int64(magnitude) }
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    package mutating func parseString() throws -> String {
        let start = position
        position += 1  // opening quote
        var chunkStart = position
        var buffer: [UInt8] = []  // only used when the string has escapes
        var escaped = false
        while true {
            guard position < bytes.count else { throw error("unterminated string", at: start) }
            let c = bytes[position]
            if c == UInt8(ascii: "\"") {
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[chunkStart..<position])
                position += 1
                if !escaped {
                    guard let s = UTF8Text.string(chunk) else { throw error("invalid UTF-8 in string", at: start) }
                    return s
                }
                buffer.append(contentsOf: chunk)
                guard let s = UTF8Text.string(buffer) else { throw error("invalid UTF-8 in string", at: start) }
                return s
            }
            if c < 0x20 { throw error("unescaped control character in string") }
            if c == UInt8(ascii: "\\") {
                if !escaped { escaped = true; buffer.reserveCapacity(position - chunkStart + 16) }
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[chunkStart..<position]))
                try parseEscape(into: &buffer)
                chunkStart = position
                continue
            }
            position += 1
        }
    }

    package mutating func parseEscape(into out: inout [UInt8]) throws {
        let escapeStart = position
        position += 1  // backslash
        guard position < bytes.count else { throw error("unterminated escape", at: escapeStart) }
        let c = bytes[position]
        position += 1
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(c)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4(at: escapeStart))
            if scalar >= 0xD800 && scalar < 0xDC00 {
                // A high surrogate must be followed by an escaped low surrogate.
                guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw error("unpaired surrogate in \\u escape", at: escapeStart)
                }
                position += 2
                let low = UInt32(try hex4(at: escapeStart))
                guard low >= 0xDC00 && low < 0xE000 else { throw error("unpaired surrogate in \\u escape", at: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00 && scalar < 0xE000 {
                throw error("unpaired surrogate in \\u escape", at: escapeStart)
            }
            appendUTF8(scalar, to: &out)
        default:
            throw error("invalid escape", at: escapeStart)
        }
    }

    /// Appends the UTF-8 form of a Unicode scalar value (not a surrogate, at most U+10FFFF).
    package func appendUTF8(_ v: UInt32, to out: inout [UInt8]) {
        switch v {
        case 0..<0x80: out.append(UInt8(v))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (v >> 6))); out.append(UInt8(0x80 | (v & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (v >> 12))); out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        default:
            out.append(UInt8(0xF0 | (v >> 18))); out.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((v >> 6) & 0x3F))); out.append(UInt8(0x80 | (v & 0x3F)))
        }
    }

    package mutating func hex4(at escapeStart: Int) throws -> UInt16 {
        let (value, end, failure) = Self.hex4(bytes, from: position, escapeStart: escapeStart)
        if let failure { throw error(failure.message, at: failure.offset) }
        position = end
        return value
    }

    /// The four hex digits of a `\u` escape at `start`, where they end, or the first violation
    /// and its offset (shared by every JSON scanner of the module).
    package static func hex4(_ bytes: UnsafeRawBufferPointer, from start: Int, escapeStart: Int)
        -> (value: UInt16, end: Int, failure: (message: String, offset: Int)?) {
        guard bytes.count - start >= 4 else { return (0, start, ("truncated \\u escape", escapeStart)) }
        var v: UInt16 = 0
        for p in start..<start + 4 {
            let c = bytes[p]
            let d: UInt8
            switch c {
            case 0x30...0x39: d = c - 0x30
            case 0x41...0x46: d = c - 0x41 + 10
            case 0x61...0x66: d = c - 0x61 + 10
            default: return (v, p, ("invalid hex digit in \\u escape", p))
            }
            v = v << 4 | UInt16(d)
        }
        return (v, start + 4, nil)
    }
}
