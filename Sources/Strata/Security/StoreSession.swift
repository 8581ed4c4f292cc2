import Foundation
import StrataFormat
import StrataFiles
import StrataEngine

/// A principal's view of a store: the store's collection methods, each checked against the
/// store's ``SecurityPolicy`` (Diffusion's security model), with the principal as the author
/// and publisher of everything it writes. Get one with ``Store/session(principal:)``.
///
/// ```swift
/// var policy = SecurityPolicy()
/// policy.roles["trader"] = Role(global: [], paths: ["prices": [.readTopic, .selectTopic, .updateTopic,
///                                                             .editOwnTimeSeriesEvents]])
/// policy.principals["alice"] = ["trader"]
/// try store.setSecurityPolicy(policy)
///
/// let alice = try store.session(principal: "alice")
/// let prices = try alice.timeSeries("prices/AAPL", of: Double.self)   // opens; creating needs .modifyTopic
/// try prices.append(101.5)                                             // author "alice"
/// try prices.edit(originalSequence: 0, value: 101.4)                   // her own event
/// ```
///
/// The handles a session returns (``TimeSeries``, ``Channel``, ``DocumentDatabase``, a
/// ``Transaction``'s) carry its checks: each call needs the ``Permission`` its documentation
/// names, on the series path, channel name or database name, and a call without it throws
/// ``StrataError/permissionDenied(principal:permission:path:)`` having changed nothing. Checks
/// use the policy in effect at the call: a new policy applies to every open session and handle
/// from its next call (a stream already open keeps running). On a warm session a check costs a
/// dictionary lookup: permissions are resolved once per path and policy.
///
/// Opening needs no permission when the collection exists; creating it needs
/// ``Permission/modifyTopic``, as does passing options (or index definitions) that differ from
/// the stored ones — a session's open never replaces them otherwise. Names and options of a
/// handle are not checked.
public final class StoreSession: Sendable {
    /// The store the session checks calls on. Not public: a session must not hand out the
    /// owner's unchecked handle.
    let store: Store
    let access: SessionAccess

    init(store: Store, access: SessionAccess) {
        self.store = store
        self.access = access
    }

    /// The principal whose permissions the session checks, and the author of its writes.
    public var principal: String { access.principal }

    /// The time series at `path`, with the session's checks.
    ///
    /// - Parameters:
    ///   - path: The series' path.
    ///   - type: The type of its values.
    ///   - options: nil keeps the stored options (or, for a new series, the defaults); options
    ///     different from the stored ones replace them and need ``Permission/modifyTopic``.
    /// - Throws: ``StrataError/permissionDenied(principal:permission:path:)`` naming
    ///   ``Permission/modifyTopic`` if the series does not exist (nothing is created) or the
    ///   options would change; otherwise as ``Store/timeSeries(_:of:options:)``.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                      options: TimeSeriesOptions? = nil) throws -> TimeSeries<Value> {
        try store.openTimeSeries(path, of: type, options: options, access: access)
    }

    /// The channel `name`, with the session's checks; an existing channel keeps its options.
    ///
    /// - Throws: ``StrataError/permissionDenied(principal:permission:path:)`` naming
    ///   ``Permission/modifyTopic`` if it does not exist (nothing is created); otherwise as
    ///   ``Store/channel(_:of:)``.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) throws -> Channel<Message> {
        try store.openChannel(name, of: type, options: nil, access: access)
    }

    /// The channel `name` with `options`, with the session's checks: creating it, or options
    /// different from the stored ones, need ``Permission/modifyTopic``.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type,
                                                     options: ChannelOptions) throws -> Channel<Message> {
        try store.openChannel(name, of: type, options: options, access: access)
    }

    /// The document database `name` with `indexes`, with the session's checks: creating the
    /// database, or an index that is not stored at its version (a new one, a new version, an
    /// unfinished build), needs ``Permission/modifyTopic``; naming stored indexes needs nothing.
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) throws -> DocumentDatabase {
        try store.openDocuments(name, indexes: indexes, access: access)
    }

    /// ``Store/fetchHistory(channels:limit:)`` over the channels the session may read
    /// (``Permission/readTopic``): the others are left out of the result, as Diffusion leaves
    /// unreadable paths out of a selection.
    public func fetchHistory(channels: [String], limit: Int = 25) throws -> [String: HistoryPage<JSON>] {
        try store.fetchHistory(channels: channels, limit: limit, access: access)
    }

    /// ``Store/messageCounts(channels:since:)`` over the channels the session may read
    /// (``Permission/readTopic``): the others have no key in the result.
    public func messageCounts(channels: [String], since: [Timetoken]) throws -> [String: Int] {
        try store.messageCounts(channels: channels, since: since, access: access)
    }

    /// ``Store/transaction(durability:_:)`` whose handles carry the session's checks: each
    /// write needs what the same write needs outside a transaction, and a denied write throws
    /// in the body (where it may be caught; nothing of it is staged).
    public func transaction<T>(durability: Durability? = nil, _ body: (Transaction) throws -> T) throws -> T {
        try store.transaction(durability: durability, access: access, body)
    }

    /// The store's push subscriptions, with the session's checks: ``PushNotifications/subscribe(_:device:coalescing:)``
    /// needs ``Permission/selectTopic`` on every item (Diffusion's permission for subscribing).
    /// Devices, the other subscription calls and the outbox are not checked: they are the
    /// delivery loop's side of push, which a program runs as the owner.
    public func pushNotifications(options: PushOptions = PushOptions()) throws -> PushNotifications {
        var push = try store.pushNotifications(options: options)
        push.access = access
        return push
    }

    /// The store's security policy; needs the global ``Permission/viewSecurity``.
    public func securityPolicy() throws -> SecurityPolicy {
        try access.requireGlobal(.viewSecurity)
        return try store.securityPolicy()
    }

    /// ``Store/setSecurityPolicy(_:)``; needs the global ``Permission/modifySecurity``.
    @discardableResult
    public func setSecurityPolicy(_ policy: SecurityPolicy) throws -> SecurityPolicy {
        try access.requireGlobal(.modifySecurity)
        return try store.setSecurityPolicy(policy)
    }
}
