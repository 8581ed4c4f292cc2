/// The channel names and series paths a user may read or write (PROTOCOL.md "Rights on
/// paths"): every path (`*`), or a set of paths, each covering itself and every name below it
/// in whole `/` segments (`chat` covers `chat` and `chat/room1`, never `chatter`).
enum PathAccess: Sendable, Equatable {
    case all
    case some([String])

    init(_ paths: [String]) {
        self = paths.contains("*") ? .all : .some(Array(Set(paths)).sorted())
    }

    /// True when one of the paths covers `name`.
    func covers(_ name: String) -> Bool {
        switch self {
        case .all: return true
        case let .some(paths): return paths.contains { Self.path($0, covers: name) }
        }
    }

    /// True when `name` is `path` or lies below it in whole segments.
    static func path(_ path: String, covers name: String) -> Bool {
        let p = path.utf8, n = name.utf8
        guard n.count >= p.count, n.starts(with: p) else { return false }
        return n.count == p.count || n[n.index(n.startIndex, offsetBy: p.count)] == UInt8(ascii: "/")
    }

    /// For SQL: (everything, the paths), for a condition such as `StreamChanges`' (`name = ANY(paths)`
    /// or `name` starting with a path and `/`).
    var sqlParameters: (Bool, [String]) {
        switch self {
        case .all: return (true, [])
        case let .some(paths): return (false, paths)
        }
    }
}

/// The rules of channel names, series paths, message ids and writers (PROTOCOL.md "Names",
/// "Idempotency keys and writers"), and of the numbers of the streams' query parameters.
enum StreamNames {
    /// The longest channel name or series path, in UTF-8 bytes.
    static let maximumLength = 1024

    /// Throws 400 naming the rule `name` breaks: 1 to 1,024 bytes of UTF-8, no U+0000, no empty
    /// `/` segment. `what` is "a channel name" or "a series path".
    static func check(_ name: String, what: String) throws(GatewayError) {
        let bytes = name.utf8
        guard !bytes.isEmpty else { throw .badRequest("\(what) is empty") }
        guard bytes.count <= maximumLength else {
            throw .badRequest("\(what) is \(bytes.count) bytes long, over the limit of \(maximumLength)")
        }
        guard !bytes.contains(0) else { throw .badRequest("\(what) must not contain U+0000") }
        let slash = UInt8(ascii: "/")
        guard bytes.first != slash, bytes.last != slash, !name.contains("//") else {
            throw .badRequest("\(what) must not have an empty '/' segment (a leading, trailing or doubled '/')")
        }
    }

    /// What a stream is, for the rules and the errors that name it.
    enum Kind: String, Sendable {
        case channel
        case series

        /// How a rule names one: "a channel name", "a series path".
        var nameWord: String { self == .channel ? "a channel name" : "a series path" }
    }

    /// 400 unless `name` is a valid name of `kind`; then 403 unless `user` may read it (or write
    /// it, with `write`).
    static func checkAccess(_ name: String, _ kind: Kind, user: GatewayUser, write: Bool) throws(GatewayError) {
        try check(name, what: kind.nameWord)
        guard (write ? user.writePaths : user.readPaths).covers(name) else {
            throw .forbidden("user '\(user.name)' may not \(write ? "write" : "read") \(kind.rawValue) '\(name)'")
        }
    }

    /// Throws 400 unless `key` is 1 to 64 characters of `[0-9A-Za-z_-]` (a message id, a writer).
    static func checkKey(_ key: String, what: String) throws(GatewayError) {
        let bytes = key.utf8
        guard (1...64).contains(bytes.count), bytes.allSatisfy({ byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }) else {
            throw .badRequest("\(what) must be 1 to 64 characters of [0-9A-Za-z_-]")
        }
    }

    /// A decimal integer of 0 to 2^63 - 1 written with digits only (a timetoken, a sequence, a
    /// limit), nil otherwise.
    static func unsigned(_ text: String) -> Int64? {
        let bytes = text.utf8
        guard (1...19).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    /// A timetoken parameter or member (a decimal string of a u63), or 400 naming `what`.
    static func timetoken(_ text: String, what: String) throws(GatewayError) -> Int64 {
        guard let value = unsigned(text) else {
            throw .badRequest("\(what) must be a timetoken: a decimal string of 0 to 9223372036854775807")
        }
        return value
    }

    /// A `limit` parameter: 1 to `maximum` (default `maximum`; 0 counts as 1, above it as the
    /// maximum), or 400.
    static func limit(_ text: String?, maximum: Int) throws(GatewayError) -> Int {
        guard let text else { return maximum }
        guard let value = unsigned(text) else { throw .badRequest("limit must be an integer ≥ 0, not '\(text)'") }
        return Int(max(1, min(value, Int64(maximum))))
    }
}
