import StrataFormat
import StrataFiles
import StrataEngine

// The `async` twins of the session's methods (see Store+Async.swift for the rules): each runs
// its synchronous twin on the store's executor.
extension StoreSession {
    private var executor: StoreExecutor { store.executor }

    /// The `async` twin of ``timeSeries(_:of:options:)``.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                      options: TimeSeriesOptions? = nil) async throws -> TimeSeries<Value> {
        try await executor.run { try self.timeSeries(path, of: type, options: options) }
    }

    /// The `async` twin of ``channel(_:of:)``.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) async throws -> Channel<Message> {
        try await executor.run { try self.channel(name, of: type) }
    }

    /// The `async` twin of ``channel(_:of:options:)``.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type,
                                                     options: ChannelOptions) async throws -> Channel<Message> {
        try await executor.run { try self.channel(name, of: type, options: options) }
    }

    /// The `async` twin of ``documents(_:indexes:)``.
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) async throws -> DocumentDatabase {
        try await executor.run { try self.documents(name, indexes: indexes) }
    }

    /// The `async` twin of ``fetchHistory(channels:limit:)``.
    public func fetchHistory(channels: [String], limit: Int = 25) async throws -> [String: HistoryPage<JSON>] {
        try await executor.run { try self.fetchHistory(channels: channels, limit: limit) }
    }

    /// The `async` twin of ``messageCounts(channels:since:)``.
    public func messageCounts(channels: [String], since: [Timetoken]) async throws -> [String: Int] {
        try await executor.run { try self.messageCounts(channels: channels, since: since) }
    }

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

    /// The `async` twin of ``pushNotifications(options:)``.
    public func pushNotifications(options: PushOptions = PushOptions()) async throws -> PushNotifications {
        try await executor.run { try self.pushNotifications(options: options) }
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
