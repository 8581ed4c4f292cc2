import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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

    /// ``Store/transaction(durability:_:)`` whose handles carry the session's checks: each
    /// write needs what the same write needs outside a transaction, and a denied write throws
    /// in the body (where it may be caught; nothing of it is staged).
    public func transaction<T>(durability: Durability? = nil, _ body: (Transaction) throws -> T) throws -> T {
        try store.transaction(durability: durability, access: access, body)
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
