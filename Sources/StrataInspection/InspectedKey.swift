import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A stored key as the inspection tools show it: rendered for people and, exactly, in hex.
///
/// The rendering decodes the key as a tuple (`TupleKey`), so `(3, "prices/AAPL", 42)` shows
/// what the engine stored. Keys whose tail is not a tuple — the raw key-value API stores the
/// caller's bytes after the keyspace prefix — print the tuple prefix that does decode, then
/// `+` and the rest: as a quoted string when it starts with printable ASCII (other bytes escaped
/// as `\xNN`), else as hex, e.g. `(1) + "user:42"`, `(1) + "user/\x00\x2a"` or `(1) + x'00ff'`.
/// A kind may render its own keys (``CollectionModule``): index rows print their collation key as
/// the JSON it encodes, `(5, 3) + collated ["a",1] + ("doc-1", 0)`. A key that does not start with a tuple element prints as the hex of all its bytes.
public struct InspectedKey: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The key rendered for people.
    public let text: String
    /// The key's exact bytes as lowercase hex, without a prefix.
    public let hex: String

    /// Renders `bytes`.
    public init(_ bytes: [UInt8]) {
        text = KeyRendering.describe(bytes)
        hex = KeyRendering.plainHex(bytes)
    }

    public var description: String { text }
}

/// How the tools render keys; see ``InspectedKey``.
enum KeyRendering {
    static func describe(_ key: [UInt8]) -> String {
        // Keys of the raw key-value keyspace are the keyspace prefix and the caller's bytes:
        // never try to read the caller's bytes as tuple elements, they only look like them by chance.
        let kv = Keyspace.keyValue.prefix
        if key.count >= kv.count, Array(key[0..<kv.count]) == kv {
            return "(\(Keyspace.keyValue.id)) + " + raw(Array(key[kv.count...]))
        }
        if let text = StoreCollections.describe(key: key) { return text }
        if (try? TupleKey.decode(key)) != nil { return TupleKey.describe(key) }
        var decoder = TupleKeyDecoder(key)
        var elements: [TupleElement] = []
        while !decoder.isAtEnd, let element = try? decoder.next() { elements.append(element) }
        guard !elements.isEmpty else { return TupleKey.hex(key) }
        let prefix = "(" + elements.map(\.description).joined(separator: ", ") + ")"
        return prefix + " + " + raw(Array(key[decoder.offset...]))
    }

    /// Bytes that start with printable ASCII as a quoted string with `\xNN` escapes for the
    /// other bytes (`"user/\x00\x2a"`), anything else as `x'…'` hex.
    static func raw(_ bytes: [UInt8]) -> String {
        // Decided by the first byte, so that keys of one shape render alike.
        guard let first = bytes.first, first >= 0x20 && first < 0x7F else { return TupleKey.hex(bytes) }
        var out = "\""
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""): out += "\\\""
            case UInt8(ascii: "\\"): out += "\\\\"
            case 0x20..<0x7F: out.append(Character(Unicode.Scalar(b)))
            default:
                out += "\\x"
                out.append(digits[Int(b >> 4)])
                out.append(digits[Int(b & 0x0F)])
            }
        }
        return out + "\""
    }

    private static let digits: [Character] = Array("0123456789abcdef")

    static func plainHex(_ bytes: [UInt8]) -> String {
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return out
    }
}
