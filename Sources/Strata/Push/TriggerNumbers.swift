import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Java's number conversions as the trigger language needs them: `Integer.parseInt`,
/// `Long.parseLong`, `Double.parseDouble`, `Float.parseFloat`, `Boolean.parseBoolean`, and the text
/// `Double.toString` / `Float.toString` give a number in a string concatenation.
///
/// The parsers return nil where Java throws `NumberFormatException`. They read the UTF-8 bytes of
/// the value in place (no allocation) and round exactly: decimal texts whose significand has at
/// most 19 digits and whose value is an exact double (float) times or over an exact power of ten
/// take the one-rounding fast path; every other accepted text is handed to the standard library's
/// correctly rounded conversion, after this file checked it against Java's grammar.
enum TriggerNumbers {
    // MARK: Integer.parseInt, Long.parseLong

    /// `Integer.parseInt(s)` (`bits` 32) or `Long.parseLong(s)` (`bits` 64): an optional `+` or
    /// `-`, then one or more decimal digits — ASCII, or any other Unicode decimal digit of the
    /// Basic Multilingual Plane as Java's `Character.digit` reads them — and nothing else (no
    /// whitespace, no `L` suffix, no decimal point), within the type's range.
    static func parseInteger(_ s: String, bits: Int) -> Int64? {
        withUTF8(s) { parseInteger($0, bits: bits) } ?? parseIntegerScalars(s, bits: bits)
    }

    /// The ASCII fast path: nil both for a malformed text and for one with a non-ASCII byte
    /// (which the caller then reads scalar by scalar).
    private static func parseInteger(_ b: UnsafeBufferPointer<UInt8>, bits: Int) -> Int64?? {
        var i = 0
        var negative = false
        guard !b.isEmpty else { return .some(nil) }
        if b[0] == UInt8(ascii: "-") || b[0] == UInt8(ascii: "+") {
            negative = b[0] == UInt8(ascii: "-")
            i = 1
            guard b.count > 1 else { return .some(nil) }
        }
        let limit: UInt64 = bits == 32 ? (negative ? 1 << 31 : (1 << 31) - 1) : (negative ? 1 << 63 : (1 << 63) - 1)
        var magnitude: UInt64 = 0
        while i < b.count {
            let c = b[i]
            if c >= 0x80 { return nil }
            let d = c &- UInt8(ascii: "0")
            guard d < 10 else { return .some(nil) }
            let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = m.addingReportingOverflow(UInt64(d))
            guard !o1, !o2, sum <= limit else { return .some(nil) }
            magnitude = sum
            i += 1
        }
        return .some(negative ? Int64(truncatingIfNeeded: 0 &- magnitude) : Int64(magnitude))
    }

    /// The slow path for a text with non-ASCII characters: Java reads UTF-16 units, so a digit
    /// outside the Basic Multilingual Plane (a surrogate pair) is not a digit.
    private static func parseIntegerScalars(_ s: String, bits: Int) -> Int64? {
        var scalars = s.unicodeScalars.makeIterator()
        guard var c = scalars.next() else { return nil }
        var negative = false
        if c == "-" || c == "+" {
            negative = c == "-"
            guard let next = scalars.next() else { return nil }
            c = next
        }
        let limit: UInt64 = bits == 32 ? (negative ? 1 << 31 : (1 << 31) - 1) : (negative ? 1 << 63 : (1 << 63) - 1)
        var magnitude: UInt64 = 0
        while true {
            guard let d = decimalDigit(c) else { return nil }
            let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = m.addingReportingOverflow(d)
            guard !o1, !o2, sum <= limit else { return nil }
            magnitude = sum
            guard let next = scalars.next() else { break }
            c = next
        }
        return negative ? Int64(truncatingIfNeeded: 0 &- magnitude) : Int64(magnitude)
    }

    /// The value of a decimal digit as Java's `Character.digit(ch, 10)` gives it, or nil.
    private static func decimalDigit(_ c: Unicode.Scalar) -> UInt64? {
        if c.isASCII {
            let d = c.value &- 0x30
            return d < 10 ? UInt64(d) : nil
        }
        guard c.value <= 0xFFFF, c.properties.numericType == .decimal,
              let v = c.properties.numericValue, v >= 0, v < 10 else { return nil }
        return UInt64(v)
    }

    // MARK: Boolean.parseBoolean

    /// `Boolean.parseBoolean(s)`: true exactly when `s` is `true` in any case (no trimming).
    static func parseBoolean(_ s: String) -> Bool {
        withUTF8(s) { b in
            guard b.count == 4 else { return false }
            return b[0] | 0x20 == UInt8(ascii: "t") && b[1] | 0x20 == UInt8(ascii: "r")
                && b[2] | 0x20 == UInt8(ascii: "u") && b[3] | 0x20 == UInt8(ascii: "e")
        }
    }

    // MARK: Double.parseDouble, Float.parseFloat

    /// `Double.parseDouble(s)`: after trimming characters up to U+0020 at both ends, an optional
    /// sign, then `NaN`, `Infinity`, a decimal (`12`, `12.`, `.5`, `1.5e-3`) or a hexadecimal
    /// floating-point text (`0x1.8p3`, the `p` exponent required), then an optional `f`, `F`, `d` or
    /// `D`. Rounded to the nearest double.
    static func parseDouble(_ s: String) -> Double? {
        withUTF8(s) { b in
            switch scanFloatingPoint(b) {
            case .invalid: return nil
            case .special(let v): return v
            case .decimal(let negative, let significand, let exponent, let core):
                if significand == 0 { return negative ? -0.0 : 0.0 }
                if significand <= 1 << 53, exponent >= -22, exponent <= 22 {
                    let m = Double(significand)
                    let v = exponent < 0 ? m / powersOfTen[-exponent] : m * powersOfTen[exponent]
                    return negative ? -v : v
                }
                return Double(String(decoding: UnsafeBufferPointer(rebasing: b[core]), as: UTF8.self))
            case .slow(let core):
                return Double(String(decoding: UnsafeBufferPointer(rebasing: b[core]), as: UTF8.self))
            }
        }
    }

    /// `Float.parseFloat(s)`: the grammar of ``parseDouble(_:)``, rounded once to the nearest
    /// float (not through a double).
    static func parseFloat(_ s: String) -> Float? {
        withUTF8(s) { b in
            switch scanFloatingPoint(b) {
            case .invalid: return nil
            case .special(let v): return Float(v)
            case .decimal(let negative, let significand, let exponent, let core):
                if significand == 0 { return negative ? -0.0 : 0.0 }
                if significand <= 1 << 24, exponent >= -10, exponent <= 10 {
                    let m = Float(significand)
                    let p = Float(powersOfTen[exponent < 0 ? -exponent : exponent])
                    let v = exponent < 0 ? m / p : m * p
                    return negative ? -v : v
                }
                return Float(String(decoding: UnsafeBufferPointer(rebasing: b[core]), as: UTF8.self))
            case .slow(let core):
                return Float(String(decoding: UnsafeBufferPointer(rebasing: b[core]), as: UTF8.self))
            }
        }
    }

    /// 10^0 … 10^22, each exact in a double.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// What ``scanFloatingPoint(_:)`` found.
    private enum FloatingPointText {
        case invalid
        /// NaN or an infinity.
        case special(Double)
        /// A decimal text: its value is `significand` × 10^`exponent` when it had at most 19
        /// significant digits (else `significand` is above every fast-path bound); `core` is the
        /// text without the trimmed whitespace and the type suffix, for the exact conversion.
        case decimal(negative: Bool, significand: UInt64, exponent: Int, core: Range<Int>)
        /// A hexadecimal text that matched Java's grammar; `core` as for `.decimal`.
        case slow(core: Range<Int>)
    }

    /// Java's `FloatingDecimal.readJavaFormatString` grammar over `b`.
    private static func scanFloatingPoint(_ b: UnsafeBufferPointer<UInt8>) -> FloatingPointText {
        var i = 0
        var end = b.count
        while i < end, b[i] <= 0x20 { i += 1 }
        while end > i, b[end - 1] <= 0x20 { end -= 1 }
        guard i < end else { return .invalid }
        let start = i
        var negative = false
        if b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") {
            negative = b[i] == UInt8(ascii: "-")
            i += 1
            guard i < end else { return .invalid }
        }
        if b[i] == UInt8(ascii: "N") || b[i] == UInt8(ascii: "I") {
            let word: StaticString = b[i] == UInt8(ascii: "N") ? "NaN" : "Infinity"
            guard end - i == word.utf8CodeUnitCount else { return .invalid }
            for k in 0..<word.utf8CodeUnitCount where b[i + k] != word.utf8Start[k] { return .invalid }
            if b[i] == UInt8(ascii: "N") { return .special(.nan) }
            return .special(negative ? -.infinity : .infinity)
        }
        if b[i] == UInt8(ascii: "0"), i + 1 < end, b[i + 1] | 0x20 == UInt8(ascii: "x") {
            return scanHexadecimal(b, from: i + 2, start: start, end: end)
        }
        var significand: UInt64 = 0
        var digits = 0
        var exponent = 0
        var sawDigit = false
        var inexact = false
        while i < end, b[i] &- UInt8(ascii: "0") < 10 {
            sawDigit = true
            let d = UInt64(b[i] &- UInt8(ascii: "0"))
            if significand == 0, d == 0 {
                // a leading zero
            } else if digits < 19 {
                significand = significand &* 10 &+ d
                digits += 1
            } else {
                inexact = true
                exponent += 1
            }
            i += 1
        }
        if i < end, b[i] == UInt8(ascii: ".") {
            i += 1
            while i < end, b[i] &- UInt8(ascii: "0") < 10 {
                sawDigit = true
                let d = UInt64(b[i] &- UInt8(ascii: "0"))
                if significand == 0, d == 0 {
                    exponent -= 1
                } else if digits < 19 {
                    significand = significand &* 10 &+ d
                    digits += 1
                    exponent -= 1
                } else {
                    inexact = true
                }
                i += 1
            }
        }
        guard sawDigit else { return .invalid }
        if i < end, b[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            var exponentNegative = false
            if i < end, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") {
                exponentNegative = b[i] == UInt8(ascii: "-")
                i += 1
            }
            var written = 0
            var sawExponentDigit = false
            while i < end, b[i] &- UInt8(ascii: "0") < 10 {
                sawExponentDigit = true
                // Saturate: past a million the value is 0 or infinity anyway (the exact path).
                if written < 1_000_000 { written = written * 10 + Int(b[i] &- UInt8(ascii: "0")) }
                i += 1
            }
            guard sawExponentDigit else { return .invalid }
            if written >= 1_000_000 { inexact = true }
            exponent += exponentNegative ? -written : written
        }
        var coreEnd = i
        if i < end, b[i] | 0x20 == UInt8(ascii: "f") || b[i] | 0x20 == UInt8(ascii: "d") {
            coreEnd = i
            i += 1
        }
        guard i == end else { return .invalid }
        if inexact, significand != 0 { significand = .max }
        return .decimal(negative: negative, significand: significand, exponent: exponent, core: start..<coreEnd)
    }

    /// The hexadecimal form after `0x`: hex digits with an optional point (at least one digit),
    /// a `p` exponent with at least one decimal digit, an optional type suffix.
    private static func scanHexadecimal(_ b: UnsafeBufferPointer<UInt8>, from: Int, start: Int, end: Int) -> FloatingPointText {
        var i = from
        var sawDigit = false
        while i < end, isHexDigit(b[i]) { sawDigit = true; i += 1 }
        if i < end, b[i] == UInt8(ascii: ".") {
            i += 1
            while i < end, isHexDigit(b[i]) { sawDigit = true; i += 1 }
        }
        guard sawDigit, i < end, b[i] | 0x20 == UInt8(ascii: "p") else { return .invalid }
        i += 1
        if i < end, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { i += 1 }
        var sawExponentDigit = false
        while i < end, b[i] &- UInt8(ascii: "0") < 10 { sawExponentDigit = true; i += 1 }
        guard sawExponentDigit else { return .invalid }
        let coreEnd = i
        if i < end, b[i] | 0x20 == UInt8(ascii: "f") || b[i] | 0x20 == UInt8(ascii: "d") { i += 1 }
        guard i == end else { return .invalid }
        return .slow(core: start..<coreEnd)
    }

    static func isHexDigit(_ c: UInt8) -> Bool {
        c &- UInt8(ascii: "0") < 10 || (c | 0x20) &- UInt8(ascii: "a") < 6
    }

    // MARK: Double.toString, Float.toString

    /// `Double.toString(d)` as Java 19 and later write it: `NaN`, `Infinity`, `-Infinity`; for
    /// 10^-3 ≤ |d| < 10^7 the plain form with at least one fraction digit (`512.25`, `100.0`,
    /// `0.001`); else one digit, a point, the rest and `E` with the exponent (`1.0E7`,
    /// `1.2345E-5`). The digits are the shortest that read back as `d` (the closest of those), at
    /// least two.
    static func javaString(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return javaLayout(d.description, negative: d.sign == .minus) {
            let two = String(format: "%.1e", d.magnitude)
            return Double(two) == d.magnitude ? two : nil
        }
    }

    /// `Float.toString(f)`: the layout of ``javaString(_:)-(Double)`` with the shortest digits
    /// that read back as `f`.
    static func javaString(_ f: Float) -> String {
        if f.isNaN { return "NaN" }
        if f.isInfinite { return f < 0 ? "-Infinity" : "Infinity" }
        return javaLayout(f.description, negative: f.sign == .minus) {
            let two = String(format: "%.1e", Double(f.magnitude))
            return Float(two) == f.magnitude ? two : nil
        }
    }

    /// Lays out the digits of a Swift description (`512.25`, `1e+16`, `1.234e-05`) Java's way.
    /// Java writes at least two significant digits, and when the shortest digits are one, the
    /// two-digit decimal closest to the value that still reads back as it (`4.9E-324`, not
    /// `5.0E-324`): `twoDigits` gives that text, or nil when it does not read back.
    private static func javaLayout(_ swift: String, negative: Bool, twoDigits: () -> String?) -> String {
        var (digits, pointExponent) = decimalDigits(swift)
        if digits.count == 1, let closer = twoDigits() {
            (digits, pointExponent) = decimalDigits(closer)
        }
        var out = negative ? "-" : ""
        if digits.isEmpty { return out + "0.0" }
        let scientific = pointExponent - 1
        let text = String(decoding: digits, as: UTF8.self)
        if scientific >= -3, scientific < 7 {
            if pointExponent <= 0 {
                out += "0." + String(repeating: "0", count: -pointExponent) + text
            } else if pointExponent >= digits.count {
                out += text + String(repeating: "0", count: pointExponent - digits.count) + ".0"
            } else {
                out += text.prefix(pointExponent) + "." + text.dropFirst(pointExponent)
            }
        } else {
            out += text.prefix(1) + "." + (digits.count > 1 ? String(text.dropFirst()) : "0") + "E" + String(scientific)
        }
        return out
    }

    /// The significant digits of a decimal text (`512.25`, `1e+16`, `4.9e-324`) without leading
    /// or trailing zeros, and the exponent p with value = 0.d1d2… × 10^p.
    static func decimalDigits(_ swift: String) -> ([UInt8], Int) {
        var digits: [UInt8] = []
        var pointExponent = 0 // the value is 0.d1d2… × 10^pointExponent
        var seenPoint = false
        var exponentText: Substring = ""
        let utf8 = Array(swift.utf8)
        var i = 0
        while i < utf8.count {
            let c = utf8[i]
            if c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                exponentText = Substring(swift.utf8.dropFirst(i + 1))
                break
            }
            if c == UInt8(ascii: ".") {
                seenPoint = true
            } else if c &- UInt8(ascii: "0") < 10 {
                if digits.isEmpty, c == UInt8(ascii: "0") {
                    if seenPoint { pointExponent -= 1 }
                } else {
                    digits.append(c)
                    if !seenPoint { pointExponent += 1 }
                }
            }
            i += 1
        }
        pointExponent += Int(exponentText) ?? 0
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return (digits, pointExponent)
    }

    // MARK: Bytes

    /// Calls `body` with the UTF-8 bytes of `s`, in place when its storage is contiguous (every
    /// native string), else on a copy.
    @inline(__always)
    static func withUTF8<R>(_ s: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = s.utf8.withContiguousStorageIfAvailable(body) { return r }
        var copy = s
        return copy.withUTF8(body)
    }
}

