@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins of the channel methods and of the store's history methods (see
// Store+Async.swift for the rules): each runs its synchronous twin on the store's executor. A
// task cancelled before the work starts gets `CancellationError` and nothing is written; a
// write that started commits and returns. `messages(bufferSize:)` is a stream and has no twin.
extension Channel {
    private var executor: StoreExecutor { state.history.executor }

    /// The `async` twin of ``publish(_:meta:publisher:)``: runs on the store's executor. A publish
    /// that started commits and returns its timetoken even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``publish(_:meta:publisher:)``; `CancellationError` if the task was
    ///   cancelled before the publish started (nothing was stored).
    @discardableResult
    public func publish(_ message: Message, meta: JSON? = nil, publisher: String? = nil) async throws -> Timetoken {
        try await executor.run { try self.publish(message, meta: meta, publisher: publisher) }
    }

    /// The `async` twin of ``publish(contentsOf:meta:publisher:)``: the messages are collected
    /// here, then stored in one atomic batch on the store's executor. A batch that started
    /// commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``publish(contentsOf:meta:publisher:)``; `CancellationError` if the
    ///   task was cancelled before the batch started (nothing was stored).
    @discardableResult
    public func publish(contentsOf messages: some Sequence<Message>, meta: JSON? = nil,
                        publisher: String? = nil) async throws -> [Timetoken] {
        let list = Array(messages)
        return try await executor.run { try self.publish(contentsOf: list, meta: meta, publisher: publisher) }
    }

    /// The `async` twin of ``history(start:end:limit:reverse:)``: runs on the store's executor.
    ///
    /// - Throws: as ``history(start:end:limit:reverse:)``; `CancellationError` if the task
    ///   was cancelled before the read started.
    public func history(start: Timetoken? = nil, end: Timetoken? = nil, limit: Int = 100,
                        reverse: Bool = false) async throws -> HistoryPage<Message> {
        try await executor.run { try self.history(start: start, end: end, limit: limit, reverse: reverse) }
    }

    /// The `async` twin of ``deleteMessages(start:end:)``: runs on the store's executor. A
    /// deletion that started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``deleteMessages(start:end:)``; `CancellationError` if the task was
    ///   cancelled before the deletion started (nothing was deleted).
    public func deleteMessages(start: Timetoken? = nil, end: Timetoken? = nil) async throws {
        try await executor.run { try self.deleteMessages(start: start, end: end) }
    }

    /// The `async` twin of ``messageCount(since:)``: runs on the store's executor.
    ///
    /// - Throws: as ``messageCount(since:)``; `CancellationError` if the task was cancelled
    ///   before the count started.
    public func messageCount(since: Timetoken) async throws -> Int {
        try await executor.run { try self.messageCount(since: since) }
    }
}

extension Store {
    /// The `async` twin of ``channel(_:of:)``: opens (or creates) the channel on the store's
    /// executor.
    ///
    /// - Throws: as ``channel(_:of:)``; `CancellationError` if the task was cancelled
    ///   before the open started.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) async throws -> Channel<Message> {
        try await executor.run { try self.channel(name, of: type) }
    }

    /// The `async` twin of ``channel(_:of:options:)``: opens (or creates) the channel and stores
    /// `options` on the store's executor. An open that started completes even if the task is
    /// cancelled meanwhile.
    ///
    /// - Throws: as ``channel(_:of:options:)``; `CancellationError` if the task was
    ///   cancelled before the open started.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type,
                                                     options: ChannelOptions) async throws -> Channel<Message> {
        try await executor.run { try self.channel(name, of: type, options: options) }
    }

    /// The `async` twin of ``fetchHistory(channels:limit:)``: runs on the store's executor.
    ///
    /// - Throws: as ``fetchHistory(channels:limit:)``; `CancellationError` if the task was
    ///   cancelled before the read started.
    public func fetchHistory(channels: [String], limit: Int = 25) async throws -> [String: HistoryPage<JSON>] {
        try await executor.run { try self.fetchHistory(channels: channels, limit: limit) }
    }

    /// The `async` twin of ``messageCounts(channels:since:)``: runs on the store's executor.
    ///
    /// - Throws: as ``messageCounts(channels:since:)``; `CancellationError` if the task was
    ///   cancelled before the count started.
    public func messageCounts(channels: [String], since: [Timetoken]) async throws -> [String: Int] {
        try await executor.run { try self.messageCounts(channels: channels, since: since) }
    }
}
