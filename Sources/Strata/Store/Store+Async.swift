import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins of the store's methods (API.md, top paragraph): each runs its synchronous
// twin on the store's executor (StoreExecutor.swift), so that a task never blocks a cooperative
// thread in `fdatasync`, on the commit lock or in recovery. In an `async` context Swift picks
// the twin: `try await store.put(key, value)`.
//
// Every twin that can be cancelled follows one rule: a task cancelled before the work starts
// gets `CancellationError` and nothing is done; once the work has started it runs to the end
// and its result is returned (a committed write is never reported as failed).
extension Store {
    /// The `async` twin of ``open(at:options:)``: opens (and recovers) the store on a thread of
    /// Strata's own, off the cooperative pool.
    ///
    /// ```swift
    /// let store = try await Store.open(at: URL(filePath: "/var/lib/app/data.strata"))
    /// ```
    ///
    /// - Throws: as ``open(at:options:)``; `CancellationError` if the task was cancelled
    ///   before the open started (an open that started completes and returns the store).
    public static func open(at directory: URL, options: StoreOptions? = nil) async throws -> Store {
        try await StoreExecutor.global.run { try Store.open(at: directory, options: options) }
    }

    /// The `async` twin of ``opened(at:)``: waits for an open or close under way without blocking
    /// a cooperative thread. Cancellation does not cut the wait short.
    public static func opened(at directory: URL) async -> Store? {
        // The global executor is never stopped and this job cannot be cancelled: `run` does not throw.
        try? await StoreExecutor.global.run(cancellable: false) { Store.opened(at: directory) }
    }

    /// The `async` twin of ``prepareForShutdown()``: closes every open store off the cooperative
    /// pool. Cancellation does not stop it: every store is closed once it is called.
    @discardableResult
    public static func prepareForShutdown() async -> [URL: StrataError] {
        // The global executor is never stopped and this job cannot be cancelled: `run` does not throw.
        (try? await StoreExecutor.global.run(cancellable: false) { Store.prepareForShutdown() }) ?? [:]
    }

    /// The `async` twin of ``destroy(at:)``: runs off the cooperative pool.
    ///
    /// - Throws: as ``destroy(at:)``; `CancellationError` if the task was cancelled before
    ///   the work started (then nothing is removed).
    public static func destroy(at directory: URL) async throws {
        try await StoreExecutor.global.run { try Store.destroy(at: directory) }
    }

    /// The `async` twin of ``close()``: runs on the store's executor, after the jobs queued
    /// before it have started. Idempotent as ``close()``: on a store closed (or closing)
    /// already it returns at once.
    ///
    /// - Throws: as ``close()``; `CancellationError` if the task was cancelled before the
    ///   close started (the store then stays open).
    public func close() async throws {
        do {
            try await executor.run { try self.close() }
        } catch StrataError.closed {
            // The executor is stopped only by a close of this store, under way or done; a close
            // itself never throws `.closed`.
        }
    }

    /// The `async` twin of ``sync()``: runs on the store's executor.
    ///
    /// - Throws: as ``sync()``; `CancellationError` if the task was cancelled before the
    ///   work started.
    public func sync() async throws {
        try await executor.run { try self.sync() }
    }

    /// The `async` twin of ``compact()``: runs on the store's executor.
    ///
    /// - Throws: as ``compact()``; `CancellationError` if the task was cancelled before the
    ///   work started.
    public func compact() async throws {
        try await executor.run { try self.compact() }
    }

    /// The `async` twin of ``backup(to:)``: runs on the store's executor, so the copy's reads,
    /// writes and syncs never block a cooperative thread.
    ///
    /// ```swift
    /// try await store.backup(to: URL(filePath: "/var/backups/app/2026-11-27.strata"))
    /// ```
    ///
    /// - Throws: as ``backup(to:)``; `CancellationError` if the task was cancelled before the
    ///   backup started (then nothing is created).
    public func backup(to directory: URL) async throws {
        try await executor.run { try self.backup(to: directory) }
    }

    /// The `async` twin of ``write(_:durability:)``: runs on the store's executor. A write that
    /// started commits and returns even if its task is cancelled meanwhile.
    ///
    /// - Throws: as ``write(_:durability:)``; `CancellationError` if the task was cancelled
    ///   before the write started (nothing was written).
    public func write(_ batch: WriteBatch, durability: Durability? = nil) async throws {
        try await executor.run { try self.write(batch, durability: durability) }
    }

    /// The `async` twin of ``put(_:_:)``: runs on the store's executor. A write that started
    /// commits and returns even if its task is cancelled meanwhile.
    ///
    /// - Throws: as ``put(_:_:)``; `CancellationError` if the task was cancelled before the
    ///   write started (nothing was written).
    public func put(_ key: [UInt8], _ value: [UInt8]) async throws {
        try await executor.run { try self.put(key, value) }
    }

    /// The `async` twin of ``delete(_:)``: runs on the store's executor. A write that started
    /// commits and returns even if its task is cancelled meanwhile.
    ///
    /// - Throws: as ``delete(_:)``; `CancellationError` if the task was cancelled before
    ///   the write started (nothing was written).
    public func delete(_ key: [UInt8]) async throws {
        try await executor.run { try self.delete(key) }
    }

    /// The `async` twin of ``get(_:)``: runs on the store's executor.
    ///
    /// - Throws: as ``get(_:)``; `CancellationError` if the task was cancelled before the
    ///   read started.
    public func get(_ key: [UInt8]) async throws -> [UInt8]? {
        try await executor.run { try self.get(key) }
    }

    /// The `async` twin of ``snapshot()``: runs on the store's executor.
    ///
    /// - Throws: as ``snapshot()``; `CancellationError` if the task was cancelled before
    ///   the work started.
    public func snapshot() async throws -> StoreSnapshot {
        try await executor.run { try self.snapshot() }
    }

    /// The `async` twin of ``scan(from:to:reverse:limit:)``: runs on the store's executor.
    ///
    /// - Throws: as ``scan(from:to:reverse:limit:)``; `CancellationError` if the task was
    ///   cancelled before the read started.
    public func scan(from start: [UInt8]? = nil, to end: [UInt8]? = nil, reverse: Bool = false,
                     limit: Int = .max) async throws -> [(key: [UInt8], value: [UInt8])] {
        try await executor.run { try self.scan(from: start, to: end, reverse: reverse, limit: limit) }
    }
}
