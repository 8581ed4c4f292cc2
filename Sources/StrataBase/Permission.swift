/// A permission of Diffusion's security model, granted to roles by a ``SecurityPolicy`` and
/// checked by a ``StoreSession`` on every call.
///
/// Path permissions (every case but the last two) apply to a series path, a channel name or a
/// document database name and its descendants (see ``Role/paths``); global permissions
/// (``viewSecurity``, ``modifySecurity``) apply to the store as a whole (``Role/global``).
///
/// It lives in StrataBase, the error vocabulary every layer shares, because
/// ``StrataError/permissionDenied(principal:permission:path:)`` names one; everything else about
/// permissions (their bits in a stored policy, sets of them, the checks) is the security
/// model's, in the store's layer (Security/).
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
}
