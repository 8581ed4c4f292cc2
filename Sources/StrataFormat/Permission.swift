/// A permission of Diffusion's security model, granted to roles by a ``SecurityPolicy`` and
/// checked by a ``StoreSession`` on every call.
///
/// Path permissions (every case but the last two) apply to a series path, a channel name or a
/// document database name and its descendants (see ``Role/paths``); global permissions
/// (``viewSecurity``, ``modifySecurity``) apply to the store as a whole (``Role/global``).
///
/// It lives beside ``StrataError`` because ``StrataError/permissionDenied(principal:permission:path:)``
/// names one. Each case has a fixed bit in the stored policy (FORMAT.md §17): never renumber.
public enum Permission: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Read: range queries, `latest`, `bounds`, history pages, message counts, document reads,
    /// index queries and the change-feed read.
    case readTopic = "READ_TOPIC"
    /// Subscribe: time-series subscriptions, live messages, live queries, change streams.
    case selectTopic = "SELECT_TOPIC"
    /// Write: append, publish, save, add, update.
    case updateTopic = "UPDATE_TOPIC"
    /// Manage: create a series, channel or database; change its options or index definitions;
    /// delete messages; delete documents; drop an index.
    case modifyTopic = "MODIFY_TOPIC"
    /// Edit any event of a time series.
    case editTimeSeriesEvents = "EDIT_TIME_SERIES_EVENTS"
    /// Edit an event whose author is the session's principal.
    case editOwnTimeSeriesEvents = "EDIT_OWN_TIME_SERIES_EVENTS"
    /// Query the edit views (``RangeQuery/edits(_:)``), which show superseded values.
    case queryObsoleteTimeSeriesEvents = "QUERY_OBSOLETE_TIME_SERIES_EVENTS"
    /// Read the security policy (global).
    case viewSecurity = "VIEW_SECURITY"
    /// Replace the security policy (global).
    case modifySecurity = "MODIFY_SECURITY"

    /// Whether this is a global permission (granted by ``Role/global``), not a path permission.
    public var isGlobal: Bool { self == .viewSecurity || self == .modifySecurity }

    /// Diffusion's name of the permission, e.g. `READ_TOPIC`.
    public var description: String { rawValue }

    /// The permission's bit in a stored policy (FORMAT.md §17).
    package var bit: UInt32 {
        switch self {
        case .readTopic: 1 << 0
        case .selectTopic: 1 << 1
        case .updateTopic: 1 << 2
        case .modifyTopic: 1 << 3
        case .editTimeSeriesEvents: 1 << 4
        case .editOwnTimeSeriesEvents: 1 << 5
        case .queryObsoleteTimeSeriesEvents: 1 << 6
        case .viewSecurity: 1 << 7
        case .modifySecurity: 1 << 8
        }
    }
}

/// A set of permissions as the bits of ``Permission/bit``: what a session caches per path, so
/// that a check is one dictionary lookup and one AND.
package struct PermissionSet: Hashable, Sendable {
    package var bits: UInt32

    package static let none = PermissionSet(bits: 0)
    /// Every bit a known permission uses.
    package static let known = PermissionSet(Permission.allCases)

    package init(bits: UInt32) { self.bits = bits }

    package init<S: Sequence>(_ permissions: S) where S.Element == Permission {
        bits = permissions.reduce(0) { $0 | $1.bit }
    }

    @inline(__always)
    package func contains(_ permission: Permission) -> Bool { bits & permission.bit != 0 }

    package mutating func formUnion(_ other: PermissionSet) { bits |= other.bits }

    /// The permissions, in declaration order.
    package var permissions: Set<Permission> { Set(Permission.allCases.filter(contains)) }
}
