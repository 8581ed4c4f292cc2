/// The channels a user may read or write (PROTOCOL.md "Databases, users and channels"): every
/// channel (`*`), or a set of names.
enum ChannelAccess: Sendable, Equatable {
    case all
    case some(Set<String>)

    init(_ channels: [String]) {
        self = channels.contains("*") ? .all : .some(Set(channels))
    }

    /// Read rule: one of the revision's channels is in the set (`*` reads everything, including
    /// revisions with no channel).
    func canRead(_ channels: [String]) -> Bool {
        switch self {
        case .all: return true
        case let .some(set): return channels.contains(where: set.contains)
        }
    }

    /// Write rule: every one of the revision's channels is in the set (no channel needs `*`).
    func canWrite(_ channels: [String]) -> Bool {
        switch self {
        case .all: return true
        case let .some(set): return !channels.isEmpty && channels.allSatisfy(set.contains)
        }
    }

    /// This access narrowed to the channels of a `sync_gateway/bychannel` filter.
    func intersected(with filter: [String]) -> ChannelAccess {
        switch self {
        case .all: return .some(Set(filter))
        case let .some(set): return .some(set.intersection(filter))
        }
    }

    /// For SQL: (everything, the set as an array).
    var sqlParameters: (Bool, [String]) {
        switch self {
        case .all: return (true, [])
        case let .some(set): return (false, set.sorted())
        }
    }
}

/// Channel names as a PostgreSQL array literal (`{"a","b"}`), for binding rows of `text[]`
/// through `unnest` of a `text[]` (PostgreSQL has no arrays of arrays of varying length).
func postgresArrayLiteral(_ values: [String]) -> String {
    var out = "{"
    for (i, value) in values.enumerated() {
        if i > 0 { out += "," }
        out += "\""
        for ch in value.unicodeScalars {
            if ch == "\"" || ch == "\\" { out += "\\" }
            out.unicodeScalars.append(ch)
        }
        out += "\""
    }
    return out + "}"
}
