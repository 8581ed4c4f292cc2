@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A session's handles of channels and its history reads, with its checks
// (Security/StoreSession.swift), and their `async` twins.
extension StoreSession {
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

    /// The `async` twin of ``channel(_:of:)``.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) async throws -> Channel<Message> {
        try await store.executor.run { try self.channel(name, of: type) }
    }

    /// The `async` twin of ``channel(_:of:options:)``.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type,
                                                     options: ChannelOptions) async throws -> Channel<Message> {
        try await store.executor.run { try self.channel(name, of: type, options: options) }
    }

    /// The `async` twin of ``fetchHistory(channels:limit:)``.
    public func fetchHistory(channels: [String], limit: Int = 25) async throws -> [String: HistoryPage<JSON>] {
        try await store.executor.run { try self.fetchHistory(channels: channels, limit: limit) }
    }

    /// The `async` twin of ``messageCounts(channels:since:)``.
    public func messageCounts(channels: [String], since: [Timetoken]) async throws -> [String: Int] {
        try await store.executor.run { try self.messageCounts(channels: channels, since: since) }
    }
}
