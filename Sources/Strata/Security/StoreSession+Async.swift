@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins of the session's methods (see Store+Async.swift for the rules): each runs
// its synchronous twin on the store's executor.
extension StoreSession {
    private var executor: StoreExecutor { store.executor }

    /// The `async` twin of ``transaction(durability:_:)``: the body runs on the store's executor.
    public func transaction<T: Sendable>(durability: Durability? = nil,
                                         _ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await executor.run { try self.transaction(durability: durability, body) }
    }

    /// The `async` twin of ``securityPolicy()``.
    public func securityPolicy() async throws -> SecurityPolicy {
        try await executor.run { try self.securityPolicy() }
    }

    /// The `async` twin of ``setSecurityPolicy(_:)``.
    @discardableResult
    public func setSecurityPolicy(_ policy: SecurityPolicy) async throws -> SecurityPolicy {
        try await executor.run { try self.setSecurityPolicy(policy) }
    }

}

extension Store {
    /// The `async` twin of ``session(principal:)``.
    public func session(principal: String) async throws -> StoreSession {
        try await executor.run { try self.session(principal: principal) }
    }

    /// The `async` twin of ``securityPolicy()``.
    public func securityPolicy() async throws -> SecurityPolicy {
        try await executor.run { try self.securityPolicy() }
    }

    /// The `async` twin of ``setSecurityPolicy(_:)``.
    @discardableResult
    public func setSecurityPolicy(_ policy: SecurityPolicy) async throws -> SecurityPolicy {
        try await executor.run { try self.setSecurityPolicy(policy) }
    }
}
