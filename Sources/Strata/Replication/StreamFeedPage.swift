import Foundation
@_spi(Layers) import StrataFormat

/// One page of a gateway database's change feed, `GET _strata/changes` (Gateway/PROTOCOL.md
/// "The change feed of a database"), read straight from its text: one ``Change`` per result with
/// the members a stream replicator uses, without the dictionary and the key strings a `JSON`
/// tree makes per result (at 10,000 results a page, that tree was a quarter of a pull's CPU).
///
/// The text is held to RFC 8259 exactly as `JSON(parsing:)` holds it (the same scanner); a
/// member given twice keeps its last value, as there; unknown members are skipped. A member of
/// the wrong type reads as absent, as `JSON`'s accessors read it.
struct StreamFeedPage: Sendable {
    /// A result of the feed.
    struct Change: Sendable, Equatable {
        enum Kind: Sendable { case message, deletion, event, other }

        /// `kind`: `message`, `delete`, `event`; `document` and any other kind are `.other`.
        var kind = Kind.other
        /// `seq`, the change's place in the database's sequence.
        var seq: UInt64?
        /// `channel` (a message or a deletion) and `series` (an event).
        var channel: String?
        var series: String?
        /// A message's `timetoken`, `id`, `message`, `meta` (nil when `null`) and `publisher`.
        var timetoken: UInt64?
        var id: String?
        var message: JSON?
        var meta: JSON?
        var publisher: String?
        /// A deletion's `from` and `until`.
        var from: UInt64?
        var until: UInt64?
        /// An event's `sequence`, `timestamp` (an integer), `author`, `value` and `original`
        /// (nil when absent or `null`).
        var sequence: UInt64?
        var timestamp: Int64?
        var author: String?
        var value: JSON?
        var original: JSON?
    }

    /// The results, in the feed's order.
    let changes: [Change]
    /// `last_seq`: where the next page starts.
    let lastSequence: UInt64

    /// An empty page that ends at `lastSequence`.
    init(changes: [Change] = [], lastSequence: UInt64) {
        self.changes = changes
        self.lastSequence = lastSequence
    }

    /// Reads the page's text.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for text that is not JSON (naming
    ///   the byte) or a page without a `results` array or an unsigned `last_seq`.
    init(parsing text: Data) throws {
        (changes, lastSequence) = try text.withUnsafeBytes { bytes in
            var reader = Reader(parser: JSONTextParser(bytes: bytes))
            return try reader.page()
        }
    }

    /// A member name of a result.
    private enum Member: CaseIterable {
        case seq, kind, channel, series, timetoken, id, message, meta, publisher, from, until
        case sequence, timestamp, author, value, original

        var name: String {
            switch self {
            case .seq: "seq"
            case .kind: "kind"
            case .channel: "channel"
            case .series: "series"
            case .timetoken: "timetoken"
            case .id: "id"
            case .message: "message"
            case .meta: "meta"
            case .publisher: "publisher"
            case .from: "from"
            case .until: "until"
            case .sequence: "sequence"
            case .timestamp: "timestamp"
            case .author: "author"
            case .value: "value"
            case .original: "original"
            }
        }

        /// The one member a name of `count` bytes from `first` to `last` can be, if any.
        static func candidate(count: Int, first: UInt8, last: UInt8) -> Member? {
            switch (count, first) {
            case (2, UInt8(ascii: "i")): .id
            case (3, UInt8(ascii: "s")): .seq
            case (4, UInt8(ascii: "k")): .kind
            case (4, UInt8(ascii: "m")): .meta
            case (4, UInt8(ascii: "f")): .from
            case (5, UInt8(ascii: "u")): .until
            case (5, UInt8(ascii: "v")): .value
            case (6, UInt8(ascii: "s")): .series
            case (6, UInt8(ascii: "a")): .author
            case (7, UInt8(ascii: "c")): .channel
            case (7, UInt8(ascii: "m")): .message
            case (8, UInt8(ascii: "s")): .sequence
            case (8, UInt8(ascii: "o")): .original
            case (9, UInt8(ascii: "p")): .publisher
            case (9, UInt8(ascii: "t")): last == UInt8(ascii: "n") ? .timetoken : .timestamp
            default: nil
            }
        }
    }

    /// The scan of one page's text.
    private struct Reader {
        var parser: JSONTextParser
        /// The last strings read for names, authors and publishers: a page repeats them on every
        /// result, and an equal one is reused instead of made again.
        var recent: [String] = []

        private var bytes: UnsafeRawBufferPointer { parser.bytes }
        private var position: Int {
            get { parser.position }
            set { parser.position = newValue }
        }

        /// Member values are parsed at the depth of the value in the page (`{results:[{…: here`).
        private static let memberDepth = 3

        mutating func page() throws -> ([Change], UInt64) {
            if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { position = 3 }
            var changes: [Change]?
            var last: UInt64?
            parser.skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "{") else { throw shape("the page is not an object") }
            position += 1
            parser.skipWhitespace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
                position += 1
            } else {
                while true {
                    parser.skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw parser.error(position < bytes.count ? "expected a member name" : "unexpected end of text, expected a member name")
                    }
                    let key = try parser.parseString()
                    try colon()
                    switch key {
                    case "results" where position < bytes.count && bytes[position] == UInt8(ascii: "["):
                        changes = try results()
                    case "results":
                        _ = try parser.parseValue(depth: 1)
                        changes = nil
                    case "last_seq": last = try unsigned()
                    default: _ = try parser.parseValue(depth: 1)
                    }
                    if try endOfMember(closing: "}") { break }
                }
            }
            parser.skipWhitespace()
            if position < bytes.count { throw parser.error("unexpected text after the value") }
            guard let changes else { throw shape("no results array") }
            guard let last else { throw shape("no last_seq") }
            return (changes, last)
        }

        private func shape(_ reason: String) -> StrataError {
            .invalidArgument(argument: "json", reason: reason)
        }

        private mutating func colon() throws {
            parser.skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw parser.error("expected ':'") }
            position += 1
            parser.skipWhitespace()
        }

        /// After a member or an element: true at the closing bracket, false at a comma.
        private mutating func endOfMember(closing: Unicode.Scalar) throws -> Bool {
            parser.skipWhitespace()
            guard position < bytes.count else { throw parser.error("unexpected end of text, expected ',' or '\(closing)'") }
            let c = bytes[position]
            position += 1
            if c == UInt8(ascii: ",") { return false }
            if c == UInt8(ascii: closing) { return true }
            throw parser.error("expected ',' or '\(closing)'", at: position - 1)
        }

        private mutating func results() throws -> [Change] {
            position += 1  // [
            var changes: [Change] = []
            parser.skipWhitespace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "]") { position += 1; return changes }
            while true {
                parser.skipWhitespace()
                if position < bytes.count && bytes[position] == UInt8(ascii: "{") {
                    changes.append(try change())
                } else {
                    _ = try parser.parseValue(depth: 2)
                    changes.append(Change())
                }
                if try endOfMember(closing: "]") { return changes }
            }
        }

        /// One result object, at its `{`.
        private mutating func change() throws -> Change {
            var change = Change()
            position += 1
            parser.skipWhitespace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "}") { position += 1; return change }
            while true {
                parser.skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    throw parser.error(position < bytes.count ? "expected a member name" : "unexpected end of text, expected a member name")
                }
                let member = try memberName()
                try colon()
                switch member {
                case .seq?: change.seq = try unsigned()
                case .kind?: change.kind = try kind()
                case .channel?: change.channel = try string()
                case .series?: change.series = try string()
                case .timetoken?: change.timetoken = try unsigned()
                case .id?: change.id = try string(remember: false)
                case .message?: change.message = try parser.parseValue(depth: Self.memberDepth)
                case .meta?:
                    change.meta = Self.unlessNull(try parser.parseValue(depth: Self.memberDepth))
                case .publisher?: change.publisher = try string()
                case .from?: change.from = try unsigned()
                case .until?: change.until = try unsigned()
                case .sequence?: change.sequence = try unsigned()
                case .timestamp?: change.timestamp = try integer()
                case .author?: change.author = try string()
                case .value?: change.value = try parser.parseValue(depth: Self.memberDepth)
                case .original?:
                    change.original = Self.unlessNull(try parser.parseValue(depth: Self.memberDepth))
                case nil: _ = try parser.parseValue(depth: Self.memberDepth)
                }
                if try endOfMember(closing: "}") { return change }
            }
        }

        /// `value`, or nil for `null`. (Not `value == .null ? nil : value`: `JSON` is
        /// `ExpressibleByNilLiteral`, so that `nil` would be `JSON.null`.)
        private static func unlessNull(_ value: JSON) -> JSON? {
            if case .null = value { return nil }
            return value
        }

        /// The member name at `position` (its `"`): compared as bytes when it has no escape.
        private mutating func memberName() throws -> Member? {
            let start = position + 1
            if let p = plainStringEnd(), p > start,
               let member = Member.candidate(count: p - start, first: bytes[start], last: bytes[p - 1]),
               Self.equal(member.name, UnsafeRawBufferPointer(rebasing: bytes[start..<p])) {
                position = p + 1
                return member
            }
            // Escaped or unknown: read (and checked) as JSON(parsing:) reads it.
            let key = try parser.parseString()
            return Member.allCases.first { $0.name == key }
        }

        /// For the string at `position` (its `"`): where its closing quote stands, when it has no
        /// escape and no control character before it; nil otherwise.
        private func plainStringEnd() -> Int? {
            var p = position + 1
            while p < bytes.count, bytes[p] != UInt8(ascii: "\""), bytes[p] != UInt8(ascii: "\\"), bytes[p] >= 0x20 { p += 1 }
            return p < bytes.count && bytes[p] == UInt8(ascii: "\"") ? p : nil
        }

        /// Whether `s` is the bytes `raw`.
        private static func equal(_ s: String, _ raw: UnsafeRawBufferPointer) -> Bool {
            let utf8 = s.utf8
            guard utf8.count == raw.count else { return false }
            return utf8.withContiguousStorageIfAvailable { JSONBinary.compareBytes(UnsafeRawBufferPointer($0), raw) == 0 }
                ?? utf8.elementsEqual(raw)
        }

        /// `kind`'s value: a string compared as bytes when it has no escape.
        private mutating func kind() throws -> Change.Kind {
            guard let text = try string(remember: false) else { return .other }
            switch text {
            case "message": return .message
            case "delete": return .deletion
            case "event": return .event
            default: return .other
            }
        }

        /// A string value, or nil for another value (consumed). With `remember`, an equal string
        /// read before is returned instead of a new one.
        private mutating func string(remember: Bool = true) throws -> String? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                _ = try parser.parseValue(depth: Self.memberDepth)
                return nil
            }
            // Only strings validated before are reused, so UTF-8 is checked as parseString checks it.
            if remember, let p = plainStringEnd(),
               let known = recent.first(where: { Self.equal($0, UnsafeRawBufferPointer(rebasing: bytes[position + 1..<p])) }) {
                position = p + 1
                return known
            }
            let s = try parser.parseString()
            if remember {
                if recent.count == 4 { recent.removeFirst() }
                recent.append(s)
            }
            return s
        }

        /// An unsigned value: a number that is an integer from 0 to `Int64.max`, or a string of
        /// a decimal `UInt64`; nil for another value (consumed).
        private mutating func unsigned() throws -> UInt64? {
            guard position < bytes.count else { _ = try parser.parseValue(depth: Self.memberDepth); return nil }
            let c = bytes[position]
            if c == UInt8(ascii: "\"") {
                // Digits only, the feed's form: read in place.
                var p = position + 1
                var value: UInt64 = 0
                var overflow = false
                while p < bytes.count, bytes[p] >= 0x30, bytes[p] <= 0x39 {
                    let (m, o1) = value.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(UInt64(bytes[p] &- 0x30))
                    overflow = overflow || o1 || o2
                    value = s
                    p += 1
                }
                if p < bytes.count, bytes[p] == UInt8(ascii: "\""), p > position + 1 {
                    position = p + 1
                    return overflow ? nil : value
                }
                return UInt64(try parser.parseString())
            }
            guard let n = try integer() else { return nil }
            return n >= 0 ? UInt64(n) : nil
        }

        /// A number that is an integer in `Int64`'s range; nil for another value (consumed).
        private mutating func integer() throws -> Int64? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "-") || (bytes[position] >= 0x30 && bytes[position] <= 0x39) else {
                _ = try parser.parseValue(depth: Self.memberDepth)
                return nil
            }
            if case .int(let n) = try parser.parseNumber() { return n }
            return nil
        }
    }
}
