import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A compiled notification format: the holes of the format's text found once, at subscribe, so
/// that each notification is rendered by copying the literal text between them and escaping the
/// values — never parsing the format again. It holds the format and the holes' offsets only.
///
/// The format is JSON text whose top level is an object (what APNs and FCM take), in which:
/// - `${name}` stands for the field `name`, `$[n]` for the n-th field (1-based, in field order),
///   and `${LS_MPN_subscription_ID}` for the subscription's id (that name is reserved: it means
///   the id even if a field has the same name). Inside a JSON string a placeholder is replaced by
///   the value escaped as string content; outside a string a placeholder must be a whole value
///   and becomes a JSON string.
/// - The string `"AUTO"` as the value of the member `badge` of the top-level member `aps` (APNs'
///   `aps.badge`, and nowhere else) becomes the badge number, a JSON number. Member names and the
///   value are compared after unescaping, so `"b\u0061dge"` is `badge` too.
///
/// A `$` not followed by `{` or `[` is an ordinary character. Names run to the first `}`, may
/// hold neither `"`, `\` nor control characters, are written as they are (not JSON-escaped) and
/// match a field name of the same UTF-8 bytes. Escapes in the format are kept as written.
///
/// ```swift
/// let template = try NotificationTemplate(
///     #"{"aps":{"alert":"${stock_name} at ${last_price}","badge":"AUTO"},"price":$[2]}"#,
///     fields: ["stock_name", "last_price"])
/// template.render(values: ["ACME \"A\"", "9.5"], subscriptionID: "S1", badge: { 4 })
/// // {"aps":{"alert":"ACME \"A\" at 9.5","badge":4},"price":"9.5"}
/// ```
struct NotificationTemplate: Sendable {
    /// The longest format accepted, in UTF-8 bytes (APNs and FCM payloads are at most 4 KiB).
    static let maximumLength = 65_536
    /// The deepest nesting of objects and arrays accepted.
    static let maximumDepth = 64
    /// The name of the placeholder that stands for the subscription's id.
    static let subscriptionIDName = "LS_MPN_subscription_ID"

    /// What fills a hole.
    enum Hole: Equatable, Sendable {
        /// The value of the field at this index (0-based) of the field list.
        case field(Int)
        /// The subscription's id.
        case subscriptionID
        /// The badge number, written as a JSON number in place of the string `"AUTO"`.
        case badge
    }

    /// A hole: the UTF-8 offsets `start..<end` of the format's text it replaces (a placeholder, or
    /// the whole string `"AUTO"`). The text between holes is copied as it is.
    struct Part: Equatable, Sendable {
        var start: Int
        var end: Int
        var hole: Hole
        /// Whether the value is written as a whole JSON string (a placeholder outside a string).
        var quoted: Bool
    }

    /// The format, as given.
    let format: String
    /// The holes in the order they appear.
    let parts: [Part]

    /// Whether the format holds an `"AUTO"` badge, so that rendering takes a badge number.
    let usesBadge: Bool

    /// Compiles a format for a subscription with these fields.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` naming the 1-based character position of the
    ///   first error: text that is not JSON (or not an object), an unknown field name, a `$[n]` out
    ///   of range, an unterminated placeholder, a placeholder outside a string that is not a whole
    ///   value, nesting deeper than ``maximumDepth``, or a format longer than ``maximumLength``.
    init(_ format: String, fields: [String]) throws {
        var text = format
        text.makeContiguousUTF8()
        self.format = text
        let length = text.utf8.count
        if length > Self.maximumLength {
            throw StrataError.invalidArgument(argument: "notificationFormat", reason:
                "invalid notification format: \(length) bytes, longer than the limit of \(Self.maximumLength)")
        }
        parts = try text.withUTF8 { bytes in
            var compiler = NotificationTemplateCompiler(bytes: UnsafeRawBufferPointer(bytes), fields: fields)
            return try compiler.compile()
        }
        usesBadge = parts.contains { $0.hole == .badge }
    }

    /// The payload of one notification.
    ///
    /// - Parameters:
    ///   - values: The field texts, in field order; a missing value is the empty string.
    ///   - subscriptionID: What `${LS_MPN_subscription_ID}` becomes.
    ///   - badge: The next badge number; called once, and only if the format uses `"AUTO"`.
    /// - Returns: JSON text: the format with each placeholder replaced by its value escaped as
    ///   JSON string content (`"` and `\` with a backslash, control characters as `\n`, `\t`… or
    ///   `\u00XX`, everything else as UTF-8).
    func render(values: [String], subscriptionID: String, badge: () -> Int) -> String {
        // The format is kept contiguous (init), so the fallback copy is never expected.
        if let payload = format.utf8.withContiguousStorageIfAvailable({
            render(source: $0, values: values, subscriptionID: subscriptionID, badge: badge)
        }) {
            return payload
        }
        var copy = format
        return copy.withUTF8 { render(source: $0, values: values, subscriptionID: subscriptionID, badge: badge) }
    }

    private func render(source: UnsafeBufferPointer<UInt8>, values: [String], subscriptionID: String, badge: () -> Int) -> String {
        // An upper bound of the payload's length, so that it is written once, in place: a byte
        // of a value takes at most 6 bytes escaped (`\u00XX`), plus 2 quotes; a badge at most 20.
        var capacity = source.count
        for part in parts {
            switch part.hole {
            case .field(let index): capacity += 2 + 6 * (index < values.count ? values[index].utf8.count : 0)
            case .subscriptionID: capacity += 2 + 6 * subscriptionID.utf8.count
            case .badge: capacity += 20
            }
        }
        var badgeText: String?
        return String(unsafeUninitializedCapacity: capacity) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            var out = PayloadWriter(base: base)
            var copied = 0
            for part in parts {
                out.append(UnsafeBufferPointer(rebasing: source[copied..<part.start]))
                copied = part.end
                switch part.hole {
                case .field(let index):
                    out.appendEscaped(index < values.count ? values[index] : "", quoted: part.quoted)
                case .subscriptionID:
                    out.appendEscaped(subscriptionID, quoted: part.quoted)
                case .badge:
                    let text = badgeText ?? String(badge())
                    badgeText = text
                    out.appendEscaped(text, quoted: false)
                }
            }
            out.append(UnsafeBufferPointer(rebasing: source[copied...]))
            assert(out.count <= capacity)
            return out.count
        }
    }
}

/// Writes a payload into memory known to be large enough (``NotificationTemplate/render(values:subscriptionID:badge:)``
/// allocates the upper bound of its length).
private struct PayloadWriter {
    let base: UnsafeMutablePointer<UInt8>
    var count = 0

    private static let hexDigits: StaticString = "0123456789abcdef"

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    /// Appends `value` as JSON string content (between quotes when `quoted`).
    mutating func appendEscaped(_ value: String, quoted: Bool) {
        if quoted { append(UInt8(ascii: "\"")) }
        var value = value
        value.withUTF8 { bytes in
            // Copies runs of bytes that need no escape in one go.
            var runStart = 0
            for i in 0..<bytes.count {
                let byte = bytes[i]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                append(UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                runStart = i + 1
                append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
                case 0x0A: append(UInt8(ascii: "n"))
                case 0x0D: append(UInt8(ascii: "r"))
                case 0x09: append(UInt8(ascii: "t"))
                case 0x08: append(UInt8(ascii: "b"))
                case 0x0C: append(UInt8(ascii: "f"))
                default:
                    append(UInt8(ascii: "u"))
                    append(UInt8(ascii: "0"))
                    append(UInt8(ascii: "0"))
                    append(Self.hexDigits.utf8Start[Int(byte >> 4)])
                    append(Self.hexDigits.utf8Start[Int(byte & 0x0F)])
                }
            }
            append(UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        if quoted { append(UInt8(ascii: "\"")) }
    }
}
