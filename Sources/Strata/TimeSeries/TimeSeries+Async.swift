import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins of the time-series methods (see Store+Async.swift for the rules): each runs
// its synchronous twin on the store's executor. A task cancelled before the work starts gets
// `CancellationError` and nothing is written; a write that started commits and returns.
// `subscribe()` is a stream and has no twin.
extension TimeSeries {
    private var executor: StoreExecutor { state.executor }

    /// The `async` twin of ``append(_:)``: runs on the store's executor. An append that started
    /// commits and returns its metadata even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``append(_:)``; `CancellationError` if the task was cancelled before
    ///   the append started (nothing was written).
    @discardableResult
    public func append(_ value: Value) async throws -> EventMetadata {
        try await executor.run { try self.append(value) }
    }

    /// The `async` twin of ``append(_:timestamp:)``: runs on the store's executor. An append that
    /// started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``append(_:timestamp:)``; `CancellationError` if the task was cancelled
    ///   before the append started (nothing was written).
    @discardableResult
    public func append(_ value: Value, timestamp: Date) async throws -> EventMetadata {
        try await executor.run { try self.append(value, timestamp: timestamp) }
    }

    /// The `async` twin of ``append(_:timestamp:author:)``: runs on the store's executor. An
    /// append that started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``append(_:timestamp:author:)``; `CancellationError` if the task was
    ///   cancelled before the append started (nothing was written).
    @discardableResult
    public func append(_ value: Value, timestamp: Date?, author: String) async throws -> EventMetadata {
        try await executor.run { try self.append(value, timestamp: timestamp, author: author) }
    }

    /// The `async` twin of ``append(contentsOf:)-(S)``: the values are collected here, then
    /// appended in one atomic batch on the store's executor. A batch that started commits and
    /// returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``append(contentsOf:)-(S)``; `CancellationError` if the task was
    ///   cancelled before the batch started (nothing was written).
    @discardableResult
    public func append<S: Sequence>(contentsOf values: S) async throws -> [EventMetadata] where S.Element == Value {
        let array = Array(values)
        return try await executor.run { try self.append(contentsOf: array) }
    }

    /// The `async` twin of the timestamped ``append(contentsOf:)-(S)``: the events are collected
    /// here, then appended in one atomic batch on the store's executor. A batch that started
    /// commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as its synchronous twin; `CancellationError` if the task was cancelled
    ///   before the batch started (nothing was written).
    @discardableResult
    public func append<S: Sequence>(contentsOf events: S) async throws -> [EventMetadata]
    where S.Element == (value: Value, timestamp: Date) {
        let array = Array(events)
        return try await executor.run { try self.append(contentsOf: array) }
    }

    /// The `async` twin of ``edit(originalSequence:value:)``: runs on the store's executor. An
    /// edit that started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``edit(originalSequence:value:)``; `CancellationError` if the task was
    ///   cancelled before the edit started (nothing was written).
    @discardableResult
    public func edit(originalSequence: UInt64, value: Value) async throws -> EventMetadata {
        try await executor.run { try self.edit(originalSequence: originalSequence, value: value) }
    }

    /// The `async` twin of ``edit(originalSequence:value:author:)``: runs on the store's
    /// executor. An edit that started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``edit(originalSequence:value:author:)``; `CancellationError` if the
    ///   task was cancelled before the edit started (nothing was written).
    @discardableResult
    public func edit(originalSequence: UInt64, value: Value, author: String) async throws -> EventMetadata {
        try await executor.run { try self.edit(originalSequence: originalSequence, value: value, author: author) }
    }

    /// The `async` twin of ``query(_:)``: runs on the store's executor.
    ///
    /// - Throws: as ``query(_:)``; `CancellationError` if the task was cancelled before the
    ///   query started.
    public func query(_ query: RangeQuery) async throws -> QueryResult<Value> {
        try await executor.run { try self.query(query) }
    }

    /// The `async` twin of ``columns(_:)``: runs on the store's executor.
    ///
    /// - Throws: as ``columns(_:)``; `CancellationError` if the task was cancelled before the
    ///   query started.
    public func columns(_ query: RangeQuery) async throws -> SeriesColumns<Value> {
        try await executor.run { try self.columns(query) }
    }

    /// The `async` twin of ``latest()``: runs on the store's executor.
    ///
    /// - Throws: as ``latest()``; `CancellationError` if the task was cancelled before the
    ///   read started.
    public func latest() async throws -> Event<Value>? {
        try await executor.run { try self.latest() }
    }

    /// The `async` twin of ``bounds()``: runs on the store's executor.
    ///
    /// - Throws: as ``bounds()``; `CancellationError` if the task was cancelled before the
    ///   read started.
    public func bounds() async throws -> SeriesBounds {
        try await executor.run { try self.bounds() }
    }
}

extension Store {
    /// The `async` twin of ``timeSeries(_:of:options:)``: opens the series (and applies
    /// `options`, a write when they change) on the store's executor. An open that started
    /// completes and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``timeSeries(_:of:options:)``; `CancellationError` if the task was
    ///   cancelled before the open started.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                      options: TimeSeriesOptions? = nil) async throws -> TimeSeries<Value> {
        try await executor.run { try self.timeSeries(path, of: type, options: options) }
    }
}
