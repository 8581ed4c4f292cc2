@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Splits a trigger expression into tokens, with Java's lexical rules for the parts the language
/// has: whitespace (space, tab, form feed, CR, LF), identifiers, decimal, octal, hexadecimal and
/// binary integer literals with `_` separators and an `L` suffix, decimal and hexadecimal
/// floating-point literals with an `f`/`d` suffix, string literals with Java's escapes, and the
/// operators. Field references `${name}` and `$[n]` are resolved against the field list here.
///
/// Maximal munch as in Java: `a--b` is the (unsupported) decrement operator, not `a - -b`.
/// Not supported, each with its own message: character literals, comments, `\u` escapes outside
/// string literals, assignment, increment and decrement, bitwise and shift operators.
struct TriggerLexer {
    let source: TriggerSource
    let fields: [String]

    /// The tokens of the whole text, ending with `.end`.
    func tokens() throws(StrataError) -> [TriggerToken] {
        var tokens: [TriggerToken] = []
        let b = source.bytes
        var i = 0
        while true {
            while i < b.count, Self.isWhitespace(b[i]) { i += 1 }
            guard i < b.count else {
                tokens.append(TriggerToken(kind: .end, range: b.count..<b.count))
                return tokens
            }
            let start = i
            let c = b[i]
            if Self.isDigit(c) || (c == UInt8(ascii: ".") && i + 1 < b.count && Self.isDigit(b[i + 1])) {
                let (kind, end) = try number(at: i)
                tokens.append(TriggerToken(kind: kind, range: start..<end))
                i = end
            } else if Self.isIdentifierStart(c) {
                while i < b.count, Self.isIdentifierPart(b[i]) { i += 1 }
                tokens.append(TriggerToken(kind: .identifier(String(decoding: b[start..<i], as: UTF8.self)),
                                           range: start..<i))
            } else if c == UInt8(ascii: "\"") {
                let (value, end) = try string(at: i)
                tokens.append(TriggerToken(kind: .literal(.string(value)), range: start..<end))
                i = end
            } else if c == UInt8(ascii: "$") {
                let (index, end) = try field(at: i)
                tokens.append(TriggerToken(kind: .field(index), range: start..<end))
                i = end
            } else {
                let (p, end) = try punctuation(at: i)
                tokens.append(TriggerToken(kind: .punctuation(p), range: start..<end))
                i = end
            }
        }
    }

    // MARK: Characters

    static func isWhitespace(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x09 || c == 0x0C || c == 0x0A || c == 0x0D
    }

    static func isDigit(_ c: UInt8) -> Bool { c &- UInt8(ascii: "0") < 10 }

    static func isIdentifierStart(_ c: UInt8) -> Bool {
        (c | 0x20) &- UInt8(ascii: "a") < 26 || c == UInt8(ascii: "_")
    }

    static func isIdentifierPart(_ c: UInt8) -> Bool { isIdentifierStart(c) || isDigit(c) }

    // MARK: Fields

    /// `${name}` (the first field of that name) or `$[n]` (1-based).
    private func field(at start: Int) throws(StrataError) -> (Int, Int) {
        let b = source.bytes
        var i = start + 1
        if i < b.count, b[i] == UInt8(ascii: "{") {
            i += 1
            let nameStart = i
            while i < b.count, b[i] != UInt8(ascii: "}") { i += 1 }
            guard i < b.count else {
                throw source.error(at: start, "expected '}' closing the field name after '${'")
            }
            guard i > nameStart else { throw source.error(at: start, "expected a field name between '${' and '}'") }
            let name = String(decoding: b[nameStart..<i], as: UTF8.self)
            guard let index = fields.firstIndex(of: name) else {
                throw source.error(at: start, "unknown field '\(Self.shortened(name))'; expected one of the subscription's fields (\(fieldList))")
            }
            return (index, i + 1)
        }
        if i < b.count, b[i] == UInt8(ascii: "[") {
            i += 1
            let digitsStart = i
            var value = 0
            while i < b.count, Self.isDigit(b[i]) {
                if value <= 1_000_000 { value = value * 10 + Int(b[i] - UInt8(ascii: "0")) }
                i += 1
            }
            guard i > digitsStart, i < b.count, b[i] == UInt8(ascii: "]") else {
                throw source.error(at: start, "expected a field number and ']' after '$[', as in $[1]")
            }
            guard value >= 1, value <= fields.count else {
                let shown = value > 1_000_000 ? source.excerpt(digitsStart..<i) : String(value)
                throw source.error(at: start, fields.isEmpty
                    ? "field number \(shown) is out of range: the subscription has no fields"
                    : "field number \(shown) is out of range; expected 1…\(fields.count)")
            }
            return (value - 1, i + 1)
        }
        throw source.error(at: start, "expected '${name}' or '$[n]' after '$'")
    }

    private var fieldList: String {
        if fields.isEmpty { return "none" }
        let shown = fields.prefix(8).map { Self.shortened($0) }.joined(separator: ", ")
        return fields.count > 8 ? shown + ", … \(fields.count) in all" : shown
    }

    private static func shortened(_ s: String) -> String {
        s.count > 40 ? String(s.prefix(40)) + "…" : s
    }

    // MARK: Operators

    private func punctuation(at i: Int) throws(StrataError) -> (TriggerPunctuation, Int) {
        let b = source.bytes
        let c = b[i]
        let next: UInt8 = i + 1 < b.count ? b[i + 1] : 0
        func unsupported(_ what: String) -> StrataError { source.error(at: i, what) }
        switch c {
        case UInt8(ascii: "("): return (.leftParen, i + 1)
        case UInt8(ascii: ")"): return (.rightParen, i + 1)
        case UInt8(ascii: "."): return (.dot, i + 1)
        case UInt8(ascii: ","): return (.comma, i + 1)
        case UInt8(ascii: "?"): return (.question, i + 1)
        case UInt8(ascii: ":"): return (.colon, i + 1)
        case UInt8(ascii: "!"):
            return next == UInt8(ascii: "=") ? (.notEqual, i + 2) : (.not, i + 1)
        case UInt8(ascii: "*"):
            if next == UInt8(ascii: "=") { throw unsupported("assignment '*=' is not supported") }
            if next == UInt8(ascii: "/") { throw unsupported("comments are not supported") }
            return (.star, i + 1)
        case UInt8(ascii: "/"):
            if next == UInt8(ascii: "/") || next == UInt8(ascii: "*") { throw unsupported("comments are not supported") }
            if next == UInt8(ascii: "=") { throw unsupported("assignment '/=' is not supported") }
            return (.slash, i + 1)
        case UInt8(ascii: "%"):
            if next == UInt8(ascii: "=") { throw unsupported("assignment '%=' is not supported") }
            return (.percent, i + 1)
        case UInt8(ascii: "+"):
            if next == UInt8(ascii: "+") { throw unsupported("the increment operator '++' is not supported") }
            if next == UInt8(ascii: "=") { throw unsupported("assignment '+=' is not supported") }
            return (.plus, i + 1)
        case UInt8(ascii: "-"):
            if next == UInt8(ascii: "-") { throw unsupported("the decrement operator '--' is not supported (write '- -' for two minus signs)") }
            if next == UInt8(ascii: "=") { throw unsupported("assignment '-=' is not supported") }
            if next == UInt8(ascii: ">") { throw unsupported("lambda expressions are not supported") }
            return (.minus, i + 1)
        case UInt8(ascii: "<"):
            if next == UInt8(ascii: "<") { throw unsupported("shift operators are not supported") }
            return next == UInt8(ascii: "=") ? (.lessEqual, i + 2) : (.less, i + 1)
        case UInt8(ascii: ">"):
            if next == UInt8(ascii: ">") { throw unsupported("shift operators are not supported") }
            return next == UInt8(ascii: "=") ? (.greaterEqual, i + 2) : (.greater, i + 1)
        case UInt8(ascii: "="):
            if next == UInt8(ascii: "=") { return (.equal, i + 2) }
            throw unsupported("expected '==' to compare ('=' is assignment, which is not supported)")
        case UInt8(ascii: "&"):
            if next == UInt8(ascii: "&") { return (.and, i + 2) }
            throw unsupported("expected '&&' (the bitwise operator '&' is not supported)")
        case UInt8(ascii: "|"):
            if next == UInt8(ascii: "|") { return (.or, i + 2) }
            throw unsupported("expected '||' (the bitwise operator '|' is not supported)")
        case UInt8(ascii: "^"), UInt8(ascii: "~"):
            throw unsupported("bitwise operators are not supported")
        case UInt8(ascii: "'"):
            throw unsupported("character literals are not supported; write a string literal in double quotes")
        case UInt8(ascii: "\\"):
            throw unsupported("'\\' (a \\u escape) is accepted only inside a string literal")
        default:
            throw unsupported("unexpected character '\(source.excerpt(i..<Self.scalarEnd(b, i)))'; expected an operand or an operator")
        }
    }

    /// The end of the UTF-8 sequence starting at `i`.
    private static func scalarEnd(_ b: [UInt8], _ i: Int) -> Int {
        var j = i + 1
        while j < b.count, b[j] & 0xC0 == 0x80 { j += 1 }
        return j
    }

    // MARK: String literals

    /// A string literal starting at the quote at `start`: its value and the offset after it.
    private func string(at start: Int) throws(StrataError) -> (String, Int) {
        let b = source.bytes
        var out: [UInt8] = []
        var i = start + 1
        var pendingHighSurrogate: (value: UInt32, offset: Int)? = nil
        while true {
            guard i < b.count, b[i] != 0x0A, b[i] != 0x0D else {
                throw source.error(at: start, "unterminated string literal; expected '\"' before the end of the line")
            }
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                if let pending = pendingHighSurrogate {
                    throw source.error(at: pending.offset, "a lone UTF-16 surrogate cannot be part of a string")
                }
                return (String(decoding: out, as: UTF8.self), i + 1)
            }
            if c != UInt8(ascii: "\\") {
                if let pending = pendingHighSurrogate {
                    throw source.error(at: pending.offset, "a lone UTF-16 surrogate cannot be part of a string")
                }
                out.append(c)
                i += 1
                continue
            }
            let escape = i
            i += 1
            guard i < b.count else { throw source.error(at: escape, "expected an escape after '\\'") }
            var scalar: UInt32
            switch b[i] {
            case UInt8(ascii: "b"): scalar = 0x08; i += 1
            case UInt8(ascii: "t"): scalar = 0x09; i += 1
            case UInt8(ascii: "n"): scalar = 0x0A; i += 1
            case UInt8(ascii: "f"): scalar = 0x0C; i += 1
            case UInt8(ascii: "r"): scalar = 0x0D; i += 1
            case UInt8(ascii: "s"): scalar = 0x20; i += 1
            case UInt8(ascii: "\""): scalar = 0x22; i += 1
            case UInt8(ascii: "'"): scalar = 0x27; i += 1
            case UInt8(ascii: "\\"): scalar = 0x5C; i += 1
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                // \d, \dd, or \zdd with z in 0…3: the longest that fits.
                let maxDigits = b[i] <= UInt8(ascii: "3") ? 3 : 2
                scalar = 0
                var n = 0
                while n < maxDigits, i < b.count, b[i] &- UInt8(ascii: "0") < 8 {
                    scalar = scalar * 8 + UInt32(b[i] - UInt8(ascii: "0"))
                    i += 1
                    n += 1
                }
            case UInt8(ascii: "u"):
                while i < b.count, b[i] == UInt8(ascii: "u") { i += 1 }
                guard i + 4 <= b.count, b[i..<(i + 4)].allSatisfy(TriggerNumbers.isHexDigit) else {
                    throw source.error(at: escape, "expected four hexadecimal digits after '\\u'")
                }
                scalar = 0
                for k in i..<(i + 4) {
                    let h = b[k]
                    scalar = scalar * 16 + UInt32(Self.isDigit(h) ? h - UInt8(ascii: "0") : (h | 0x20) - UInt8(ascii: "a") + 10)
                }
                i += 4
            default:
                throw source.error(at: escape, "expected an escape: \\b \\t \\n \\f \\r \\s \\\" \\' \\\\, an octal escape or \\uXXXX")
            }
            if let pending = pendingHighSurrogate {
                guard scalar >= 0xDC00, scalar <= 0xDFFF else {
                    throw source.error(at: pending.offset, "a lone UTF-16 surrogate cannot be part of a string")
                }
                scalar = 0x10000 + ((pending.value - 0xD800) << 10) + (scalar - 0xDC00)
                pendingHighSurrogate = nil
            } else if scalar >= 0xD800, scalar <= 0xDBFF {
                pendingHighSurrogate = (scalar, escape)
                continue
            } else if scalar >= 0xDC00, scalar <= 0xDFFF {
                throw source.error(at: escape, "a lone UTF-16 surrogate cannot be part of a string")
            }
            guard let u = Unicode.Scalar(scalar) else {
                throw source.error(at: escape, "a lone UTF-16 surrogate cannot be part of a string")
            }
            var encoded = ""
            encoded.unicodeScalars.append(u)
            out.append(contentsOf: encoded.utf8)
        }
    }

    // MARK: Number literals

    /// A number literal starting at `start`: its token kind and the offset after it.
    private func number(at start: Int) throws(StrataError) -> (TriggerToken.Kind, Int) {
        let b = source.bytes
        let hex = b[start] == UInt8(ascii: "0") && start + 1 < b.count && b[start + 1] | 0x20 == UInt8(ascii: "x")
        // The maximal run of characters that can belong to a number, signs only right after an
        // exponent letter (e for decimal, p for hexadecimal).
        var i = start
        while i < b.count {
            let c = b[i]
            if Self.isIdentifierPart(c) || c == UInt8(ascii: ".") {
                i += 1
            } else if (c == UInt8(ascii: "+") || c == UInt8(ascii: "-")), i > start,
                      b[i - 1] | 0x20 == (hex ? UInt8(ascii: "p") : UInt8(ascii: "e")) {
                i += 1
            } else {
                break
            }
        }
        let text = Array(b[start..<i])
        let shown = source.excerpt(start..<i)
        let kind: TriggerToken.Kind
        switch hex ? hexadecimal(text) : decimal(text) {
        case .malformed: throw source.error(at: start, "malformed number '\(shown)'")
        case .tooLarge(let type):
            throw source.error(at: start, "the number '\(shown)' is too large for \(type)"
                + (type == "int" ? " (write an L suffix for a long)" : ""))
        case .value(let k): kind = k
        }
        if case .literal(let c) = kind {
            var infinite = false, zero = false
            switch c {
            case .double(let d): infinite = d.isInfinite; zero = d == 0
            case .float(let f): infinite = f.isInfinite; zero = f == 0
            default: break
            }
            if infinite { throw source.error(at: start, "the floating-point number '\(shown)' is too large") }
            if zero, Self.hasNonzeroDigit(text, hex: hex) {
                throw source.error(at: start, "the floating-point number '\(shown)' is too small")
            }
        }
        return (kind, i)
    }

    /// What the number scanners found.
    private enum NumberText {
        case value(TriggerToken.Kind)
        case malformed
        /// A well-formed integer literal beyond its type (`int` or `long`).
        case tooLarge(String)
    }

    private static func hasNonzeroDigit(_ text: [UInt8], hex: Bool) -> Bool {
        var i = hex ? 2 : 0
        while i < text.count {
            let c = text[i]
            if hex ? (c | 0x20 == UInt8(ascii: "p")) : (c | 0x20 == UInt8(ascii: "e")) { return false }
            if hex ? (isHexDigit(c) && c != UInt8(ascii: "0")) : (isDigit(c) && c != UInt8(ascii: "0")) { return true }
            i += 1
        }
        return false
    }

    private static func isHexDigit(_ c: UInt8) -> Bool { TriggerNumbers.isHexDigit(c) }

    /// `0x…`: a hexadecimal integer (`0xFF`, `0xFFL`) or floating-point literal (`0x1.8p3`).
    private func hexadecimal(_ text: [UInt8]) -> NumberText {
        let body = Array(text.dropFirst(2))
        if body.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "p") }) {
            // HexSignificand BinaryExponent [fFdD]
            var digits = body
            var isFloat = false
            if let last = digits.last, last | 0x20 == UInt8(ascii: "f") || last | 0x20 == UInt8(ascii: "d") {
                // In a hexadecimal float the suffix follows the binary exponent's decimal digits.
                if let p = digits.lastIndex(where: { $0 | 0x20 == UInt8(ascii: "p") }), p < digits.count - 1 {
                    isFloat = last | 0x20 == UInt8(ascii: "f")
                    digits.removeLast()
                }
            }
            guard let p = digits.firstIndex(where: { $0 | 0x20 == UInt8(ascii: "p") }) else { return .malformed }
            let significand = Array(digits[..<p])
            var exponent = Array(digits[(p + 1)...])
            let parts = significand.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count <= 2, parts.contains(where: { !$0.isEmpty }),
                  parts.allSatisfy({ $0.isEmpty || Self.validDigits(Array($0), Self.isHexDigit) }) else { return .malformed }
            if let s = exponent.first, s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { exponent.removeFirst() }
            guard Self.validDigits(exponent, Self.isDigit) else { return .malformed }
            let clean = String(decoding: [UInt8(ascii: "0"), UInt8(ascii: "x")] + digits.filter { $0 != UInt8(ascii: "_") },
                               as: UTF8.self)
            if isFloat { return Float(clean).map { .value(.literal(.float($0))) } ?? .malformed }
            return Double(clean).map { .value(.literal(.double($0))) } ?? .malformed
        }
        return integer(body, radix: 16, digit: Self.isHexDigit)
    }

    /// A decimal (or octal, or binary) literal.
    private func decimal(_ text: [UInt8]) -> NumberText {
        if text.count > 2, text[0] == UInt8(ascii: "0"), text[1] | 0x20 == UInt8(ascii: "b") {
            return integer(Array(text.dropFirst(2)), radix: 2) { $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "1") }
        }
        guard let last = text.last else { return .malformed }
        let suffix = last | 0x20
        let floating = text.contains(UInt8(ascii: ".")) || text.contains { $0 | 0x20 == UInt8(ascii: "e") }
            || suffix == UInt8(ascii: "f") || suffix == UInt8(ascii: "d")
        if !floating {
            let long = suffix == UInt8(ascii: "l")
            let digits = long ? Array(text.dropLast()) : text
            if digits.count > 1, digits[0] == UInt8(ascii: "0") {
                // Octal: 0, then octal digits, underscores allowed right after the 0.
                let rest = Array(digits.dropFirst().drop { $0 == UInt8(ascii: "_") })
                guard !rest.isEmpty else { return .malformed }
                return integer(rest + (long ? [UInt8(ascii: "L")] : []), radix: 8) { $0 &- UInt8(ascii: "0") < 8 }
            }
            guard Self.validDigits(digits, Self.isDigit) else { return .malformed }
            var value: UInt64 = 0
            for c in digits where c != UInt8(ascii: "_") {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(c - UInt8(ascii: "0")))
                guard !o1, !o2 else { return .tooLarge(long ? "long" : "int") }
                value = s
            }
            if long {
                if value == 1 << 63 { return .value(.minimumMagnitude(.long(.min))) }
                return value < 1 << 63 ? .value(.literal(.long(Int64(value)))) : .tooLarge("long")
            }
            if value == 1 << 31 { return .value(.minimumMagnitude(.int(.min))) }
            return value < 1 << 31 ? .value(.literal(.int(Int32(value)))) : .tooLarge("int")
        }
        // Digits [. [Digits]] [ExponentPart] [fFdD], or . Digits [ExponentPart] [fFdD]
        var body = text
        var isFloat = false
        if suffix == UInt8(ascii: "f") || suffix == UInt8(ascii: "d") {
            isFloat = suffix == UInt8(ascii: "f")
            body.removeLast()
        }
        var significand = body
        var exponent: [UInt8] = []
        if let e = body.firstIndex(where: { $0 | 0x20 == UInt8(ascii: "e") }) {
            significand = Array(body[..<e])
            exponent = Array(body[(e + 1)...])
            if let s = exponent.first, s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { exponent.removeFirst() }
            guard Self.validDigits(exponent, Self.isDigit) else { return .malformed }
        }
        let parts = significand.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.contains(where: { !$0.isEmpty }),
              parts.allSatisfy({ $0.isEmpty || Self.validDigits(Array($0), Self.isDigit) }) else { return .malformed }
        let clean = String(decoding: body.filter { $0 != UInt8(ascii: "_") }, as: UTF8.self)
        if isFloat { return Float(clean).map { .value(.literal(.float($0))) } ?? .malformed }
        return Double(clean).map { .value(.literal(.double($0))) } ?? .malformed
    }

    /// An integer of `radix` from its digits with `_` separators and an optional `L`; the value
    /// may use every bit of the type (`0xFFFFFFFF` is -1), as Java's non-decimal literals do.
    private func integer(_ text: [UInt8], radix: UInt64, digit: (UInt8) -> Bool) -> NumberText {
        guard let last = text.last else { return .malformed }
        let long = last | 0x20 == UInt8(ascii: "l")
        let digits = long ? Array(text.dropLast()) : text
        guard Self.validDigits(digits, digit) else { return .malformed }
        var value: UInt64 = 0
        for c in digits where c != UInt8(ascii: "_") {
            let d = Self.isDigit(c) ? UInt64(c - UInt8(ascii: "0")) : UInt64((c | 0x20) - UInt8(ascii: "a") + 10)
            let (m, o1) = value.multipliedReportingOverflow(by: radix)
            let (s, o2) = m.addingReportingOverflow(d)
            guard !o1, !o2 else { return .tooLarge(long ? "long" : "int") }
            value = s
        }
        if long { return .value(.literal(.long(Int64(bitPattern: value)))) }
        return value <= UInt64(UInt32.max) ? .value(.literal(.int(Int32(bitPattern: UInt32(value))))) : .tooLarge("int")
    }

    /// Digits of a kind with `_` only between digits: non-empty, first and last a digit.
    private static func validDigits(_ s: [UInt8], _ digit: (UInt8) -> Bool) -> Bool {
        guard let first = s.first, let last = s.last, digit(first), digit(last) else { return false }
        return s.allSatisfy { digit($0) || $0 == UInt8(ascii: "_") }
    }
}
