import Foundation

/// The `apns-push-type` and `apns-priority` of a payload.
///
/// A payload is `background` (priority 5) when its top-level `aps` object holds
/// `content-available` and none of `alert`, `badge` and `sound`; anything else — an `alert`,
/// no `aps` at all, text that is not a JSON object — is `alert` (priority 10), and APNs judges
/// the payload itself.
///
/// It is read by a small scanner over the UTF-8 bytes that looks at the top level and at `aps`
/// only, skipping every other value without building it: this runs for every notification.
enum APNsPushType: String, Sendable, Equatable {
    /// A notification the user sees or hears.
    case alert
    /// A silent update (`content-available`).
    case background

    /// The `apns-priority`: 10 sends at once, 5 lets the device save power.
    var priority: String { self == .background ? "5" : "10" }

    /// The push type of `payload` (JSON text).
    init(payload: String) {
        var payload = payload
        let keys = payload.withUTF8 { bytes -> Set<String>? in
            var scanner = JSONKeyScanner(bytes: bytes)
            return scanner.keys(ofTopLevelObjectMember: "aps")
        }
        guard let keys, keys.contains("content-available"),
              !keys.contains("alert"), !keys.contains("badge"), !keys.contains("sound") else {
            self = .alert
            return
        }
        self = .background
    }
}

/// Reads the member names of one member of a JSON object, skipping the rest (a scanner, not a
/// parser: it stops with nil at the first thing that is not JSON).
struct JSONKeyScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The member names of the object at `name` in the top-level object; nil when the text is
    /// not an object, has no such member, or that member is not an object.
    mutating func keys(ofTopLevelObjectMember name: String) -> Set<String>? {
        guard skipSpace(), peek == UInt8(ascii: "{") else { return nil }
        index += 1
        var found: Set<String>? = nil
        guard skipSpace() else { return nil }
        if peek == UInt8(ascii: "}") { return nil }
        while true {
            guard skipSpace(), let key = string(), skipSpace(), peek == UInt8(ascii: ":") else { return nil }
            index += 1
            guard skipSpace() else { return nil }
            if key == name {
                guard peek == UInt8(ascii: "{") else { return nil }
                guard let inner = memberNames() else { return nil }
                found = inner
            } else {
                guard skipValue() else { return nil }
            }
            guard skipSpace() else { return nil }
            if peek == UInt8(ascii: ",") { index += 1; continue }
            if peek == UInt8(ascii: "}") { return found }
            return nil
        }
    }

    /// The member names of the object at `index`, skipping their values.
    private mutating func memberNames() -> Set<String>? {
        index += 1   // {
        var names: Set<String> = []
        guard skipSpace() else { return nil }
        if peek == UInt8(ascii: "}") { index += 1; return names }
        while true {
            guard skipSpace(), let key = string(), skipSpace(), peek == UInt8(ascii: ":") else { return nil }
            index += 1
            guard skipSpace(), skipValue(), skipSpace() else { return nil }
            names.insert(key)
            if peek == UInt8(ascii: ",") { index += 1; continue }
            if peek == UInt8(ascii: "}") { index += 1; return names }
            return nil
        }
    }

    private var peek: UInt8 { bytes[index] }

    /// Skips white space; false at the end of the text.
    private mutating func skipSpace() -> Bool {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return true
            }
        }
        return false
    }

    /// Reads a string (at its opening quote), decoding escapes.
    private mutating func string() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return escaped ? Self.unescape(raw) : String(decoding: raw, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { escaped = true; index += 2 } else { index += 1 }
        }
        return nil
    }

    /// Skips one value: a string, an object or array (matching brackets outside strings), or a
    /// literal or number (up to the next delimiter).
    private mutating func skipValue() -> Bool {
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            return string() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard string() != nil else { return false }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { index += 1; return true }
                default: break
                }
                index += 1
            }
            return false
        default:
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                    return index > start
                default: index += 1
                }
            }
            return index > start
        }
    }

    /// A string's content with its escapes decoded (through Foundation's JSON reader: rare).
    private static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String? {
        var quoted = [UInt8(ascii: "\"")]
        quoted.append(contentsOf: raw)
        quoted.append(UInt8(ascii: "\""))
        return (try? JSONDecoder().decode(String.self, from: Data(quoted)))
    }
}
