@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Store {
    /// Stores `policy` as the store's security policy, one version above the current one, and
    /// returns it as stored (with its ``SecurityPolicy/version``). Every open session applies it
    /// from its next call; it survives close and reopen.
    ///
    /// ```swift
    /// var policy = try store.securityPolicy()
    /// policy.roles["trader"] = Role(paths: ["prices": [.readTopic, .selectTopic, .updateTopic]])
    /// policy.principals["alice"] = ["trader"]
    /// try store.setSecurityPolicy(policy)
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for an empty role name, a path permission
    ///   among a role's global ones (or a global one on a path), a path ending in `/`, or a policy
    ///   whose stored form exceeds 16 MiB; ``StrataError/closed`` after close.
    @discardableResult
    public func setSecurityPolicy(_ policy: SecurityPolicy) throws -> SecurityPolicy {
        try security.replace(with: policy)
    }

    /// The store's security policy (an empty one, version 0, if none was ever set).
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` or
    ///   ``StrataError/unsupportedFormatVersion(file:found:)`` if the stored policy cannot be read.
    public func securityPolicy() throws -> SecurityPolicy {
        try security.policy().policy.policy
    }

    /// A session for `principal`: the collection methods of the store, each checked against the
    /// security policy, with `principal` as the author and publisher of what it writes.
    ///
    /// ```swift
    /// let alice = try store.session(principal: "alice")
    /// let prices = try alice.timeSeries("prices/AAPL", of: Double.self)
    /// try prices.append(101.5)                       // author "alice", needs .updateTopic
    /// ```
    ///
    /// - Throws: ``StrataError/closed`` after close; the errors of ``securityPolicy()`` if the
    ///   stored policy cannot be read.
    public func session(principal: String) throws -> StoreSession {
        _ = try engine.snapshot()  // throws .closed after close
        _ = try security.policy()
        return StoreSession(store: self, access: SessionAccess(principal: principal, security: security))
    }
}
