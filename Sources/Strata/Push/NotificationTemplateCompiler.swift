import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Checks a notification format and finds its holes (``NotificationTemplate``).
///
/// One pass over the UTF-8 text, without recursion: the JSON grammar of RFC 8259 (as strict as
/// `JSON(parsing:)`: no unpaired `\u` surrogates, no numbers beyond `Double`'s range) with
/// placeholders allowed inside strings and as whole values. An explicit stack of the open
/// containers bounds the depth; the work is linear in the length.
struct NotificationTemplateCompiler {
    let bytes: UnsafeRawBufferPointer
    let fields: [String]
    /// The index of each field name's first occurrence, by its UTF-8 bytes; built only for long
    /// field lists (a short one is searched in place, which costs less than hashing).
    private var fieldIndex: [[UInt8]: Int]?
    private var fieldCount: Int { fields.count }
    var position = 0

    /// The holes found so far.
    var parts: [NotificationTemplate.Part] = []

    private enum Container { case object, array }
    private enum Expect { case value, valueOrClose, key, keyOrClose, colon, commaOrClose }

    /// The open containers, outermost first.
    private var stack: [Container] = []
    /// Whether the members being read at depths 1 and 2 are named `aps` and `badge` (only those
    /// names decide where the `"AUTO"` badge is).
    private var outerKeyIsAps = false
    private var innerKeyIsBadge = false

    init(bytes: UnsafeRawBufferPointer, fields: [String]) {
        self.bytes = bytes
        self.fields = fields
    }

    /// The holes of the format, in order.
    mutating func compile() throws -> [NotificationTemplate.Part] {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "{") else {
            throw error("the format must be a JSON object")
        }
        var expect = Expect.value
        scanning: while true {
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of the format") }
            let c = bytes[position]
            switch expect {
            case .value, .valueOrClose:
                if expect == .valueOrClose && c == UInt8(ascii: "]") {
                    position += 1
                    if close() { break scanning }
                    expect = .commaOrClose
                    continue
                }
                switch c {
                case UInt8(ascii: "{"):
                    try open(.object)
                    expect = .keyOrClose
                    continue
                case UInt8(ascii: "["):
                    try open(.array)
                    expect = .valueOrClose
                    continue
                case UInt8(ascii: "\""):
                    try stringValue()
                case UInt8(ascii: "$"):
                    let start = position
                    guard let hole = try placeholder() else { throw error("unexpected character, expected a value", at: start) }
                    addHole(hole, quoted: true, from: start, to: position)
                    if position < bytes.count && !isDelimiter(bytes[position]) {
                        throw error("a placeholder outside a string must be a whole value", at: start)
                    }
                case UInt8(ascii: "t"): try expectLiteral("true")
                case UInt8(ascii: "f"): try expectLiteral("false")
                case UInt8(ascii: "n"): try expectLiteral("null")
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
                default: throw error("unexpected character, expected a value")
                }
                expect = .commaOrClose
            case .key, .keyOrClose:
                if expect == .keyOrClose && c == UInt8(ascii: "}") {
                    position += 1
                    if close() { break scanning }
                    expect = .commaOrClose
                    continue
                }
                guard c == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let start = position
                try string()
                if stack.count == 1 { outerKeyIsAps = stringIs("aps", from: start) }
                if stack.count == 2 { innerKeyIsBadge = stringIs("badge", from: start) }
                expect = .colon
            case .colon:
                guard c == UInt8(ascii: ":") else { throw error("expected ':'") }
                position += 1
                expect = .value
            case .commaOrClose:
                position += 1
                let container = stack[stack.count - 1]
                if c == UInt8(ascii: ",") {
                    expect = container == .object ? .key : .value
                } else if (c == UInt8(ascii: "}") && container == .object) || (c == UInt8(ascii: "]") && container == .array) {
                    if close() { break scanning }
                    expect = .commaOrClose
                } else {
                    throw error(container == .object ? "expected ',' or '}'" : "expected ',' or ']'", at: position - 1)
                }
            }
        }
        skipWhitespace()
        if position < bytes.count { throw error("unexpected text after the object") }
        return parts
    }

    // MARK: Containers

    private mutating func open(_ container: Container) throws {
        if stack.count >= NotificationTemplate.maximumDepth {
            throw error("nesting deeper than \(NotificationTemplate.maximumDepth)")
        }
        stack.append(container)
        position += 1
        if stack.count == 2 { innerKeyIsBadge = false }
    }

    /// Closes the innermost container (its closing character is consumed); true when that was
    /// the top-level object.
    private mutating func close() -> Bool {
        stack.removeLast()
        return stack.isEmpty
    }

    // MARK: Values

    /// A string in value position: an `"AUTO"` at `aps.badge` becomes the badge hole.
    private mutating func stringValue() throws {
        let start = position
        let partsBefore = parts.count
        try string()
        guard stack.count == 2, stack[0] == .object, stack[1] == .object, parts.count == partsBefore,
            outerKeyIsAps, innerKeyIsBadge, stringIs("AUTO", from: start)
        else { return }
        addHole(.badge, quoted: false, from: start, to: position)
    }

    /// Scans a string from its opening quote past its closing quote, adding the holes of the
    /// placeholders inside it.
    private mutating func string() throws {
        let start = position
        position += 1
        while true {
            guard position < bytes.count else { throw error("unterminated string", at: start) }
            let c = bytes[position]
            switch c {
            case UInt8(ascii: "\""):
                position += 1
                return
            case UInt8(ascii: "\\"):
                try escape()
            case UInt8(ascii: "$"):
                let dollar = position
                if let hole = try placeholder() {
                    addHole(hole, quoted: false, from: dollar, to: position)
                } else {
                    position += 1
                }
            case 0x00..<0x20:
                throw error("unescaped control character in a string")
            default:
                position += 1
            }
        }
    }

    private mutating func escape() throws {
        let start = position
        position += 1
        guard position < bytes.count else { throw error("unterminated escape", at: start) }
        let c = bytes[position]
        position += 1
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            let unit = try hex4(escapeStart: start)
            if unit >= 0xD800 && unit < 0xDC00 {
                guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw error("unpaired surrogate in \\u escape", at: start) }
                position += 2
                let low = try hex4(escapeStart: start)
                guard low >= 0xDC00 && low < 0xE000 else { throw error("unpaired surrogate in \\u escape", at: start) }
            } else if unit >= 0xDC00 && unit < 0xE000 {
                throw error("unpaired surrogate in \\u escape", at: start)
            }
        default:
            throw error("invalid escape", at: start)
        }
    }

    private mutating func hex4(escapeStart: Int) throws -> UInt16 {
        let (value, end, failure) = JSONTextParser.hex4(bytes, from: position, escapeStart: escapeStart)
        if let failure { throw error(failure.message, at: failure.offset) }
        position = end
        return value
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        let p = literal.utf8Start
        guard bytes.count - position >= count else { throw error("invalid literal") }
        for i in 0..<count where bytes[position + i] != p[i] { throw error("invalid literal") }
        position += count
    }

    private mutating func number() throws {
        let start = position
        let scan = JSONTextParser.scanNumber(bytes, from: start)
        if let failure = scan.failure { throw error(failure.message, at: failure.offset) }
        position = scan.end
        let isInteger = scan.isInteger
        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
        if isInteger && JSONTextParser.int64(text) != nil { return }
        guard let d = Double(String(decoding: text, as: UTF8.self)), d.isFinite else {
            throw error("number out of range", at: start)
        }
    }

    @inline(__always)
    private func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// Whether `c` may follow a value: whitespace, `,`, `}` or `]`.
    private func isDelimiter(_ c: UInt8) -> Bool {
        switch c {
        case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"): return true
        default: return false
        }
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    // MARK: Placeholders

    /// At a `$`: the placeholder there (`position` moves past it), or nil when the `$` starts none
    /// (`position` stays).
    private mutating func placeholder() throws -> NotificationTemplate.Hole? {
        let start = position
        guard bytes.count - position >= 2 else { return nil }
        let bracket = bytes[position + 1]
        guard bracket == UInt8(ascii: "{") || bracket == UInt8(ascii: "[") else { return nil }
        let close = bracket == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var end = position + 2
        while true {
            guard end < bytes.count else { throw error("unterminated placeholder", at: start) }
            let c = bytes[end]
            if c == close { break }
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 {
                throw error("unterminated placeholder", at: start)
            }
            end += 1
        }
        let inner = UnsafeRawBufferPointer(rebasing: bytes[(position + 2)..<end])
        position = end + 1
        if bracket == UInt8(ascii: "{") {
            if inner.isEmpty { throw error("empty placeholder name", at: start) }
            if Self.hasUTF8(NotificationTemplate.subscriptionIDName, inner) { return .subscriptionID }
            guard let index = fieldIndex(of: inner) else {
                throw error("unknown field name \"\(String(decoding: inner, as: UTF8.self))\"", at: start)
            }
            return .field(index)
        }
        guard !inner.isEmpty, inner.count <= 18, inner.allSatisfy(isDigit) else {
            throw error("invalid index in placeholder $[\(String(decoding: inner, as: UTF8.self))]", at: start)
        }
        var n = 0
        for digit in inner { n = n * 10 + Int(digit - 0x30) }
        guard n >= 1 && n <= fieldCount else {
            throw error("placeholder $[\(n)] out of range: the subscription has \(fieldCount) field(s)", at: start)
        }
        return .field(n - 1)
    }

    /// The index of the first field whose name has these UTF-8 bytes.
    private mutating func fieldIndex(of name: UnsafeRawBufferPointer) -> Int? {
        if fields.count <= 16 {
            for (i, field) in fields.enumerated() where Self.hasUTF8(field, name) { return i }
            return nil
        }
        if fieldIndex == nil {
            var index: [[UInt8]: Int] = [:]
            for (i, field) in fields.enumerated() where index[Array(field.utf8)] == nil { index[Array(field.utf8)] = i }
            fieldIndex = index
        }
        return fieldIndex?[Array(name)]
    }

    /// Whether `string` is made of exactly these UTF-8 bytes.
    private static func hasUTF8(_ string: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard string.utf8.count == bytes.count else { return false }
        var string = string
        return string.withUTF8 { utf8 in
            guard let a = utf8.baseAddress, let b = bytes.baseAddress else { return true }
            return ByteComparison.compareMemory(a, b, count: bytes.count) == 0
        }
    }

    private mutating func addHole(_ hole: NotificationTemplate.Hole, quoted: Bool, from start: Int, to end: Int) {
        parts.append(.init(start: start, end: end, hole: hole, quoted: quoted))
    }

    /// Whether the (checked) string from `start` to `position`, quotes included, holds exactly
    /// `text` once unescaped; compared in place unless it holds an escape.
    private func stringIs(_ text: StaticString, from start: Int) -> Bool {
        let content = UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<(position - 1)])
        if !content.contains(UInt8(ascii: "\\")) {
            return content.elementsEqual(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
        let decoded = try? JSONTextParser.parse(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        return decoded?.stringValue == text.description
    }

    // MARK: Errors

    /// An error naming the 1-based character position of the byte at `offset`.
    private func error(_ message: String, at offset: Int? = nil) -> StrataError {
        let offset = min(offset ?? position, bytes.count)
        let characters = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<offset]), as: UTF8.self).count
        return .invalidArgument(argument: "notificationFormat", reason: "invalid notification format at position \(characters + 1): \(message)")
    }
}
