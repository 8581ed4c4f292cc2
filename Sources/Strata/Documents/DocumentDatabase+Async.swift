@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins of the document-database methods and of the store's opener (see
// Store+Async.swift for the rules): each runs its synchronous twin on the store's executor. A
// task cancelled before the work starts gets `CancellationError` and nothing is written; a
// write that started commits and returns. `observe(_:_:)` and `changes()` are streams and have
// no twins.
extension DocumentDatabase {
    private var executor: StoreExecutor { state.executor }

    /// The `async` twin of ``dropIndex(_:)``: runs on the store's executor. A drop that started
    /// completes even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``dropIndex(_:)``; `CancellationError` if the task was cancelled before
    ///   the drop started (the index is kept).
    public func dropIndex(_ name: String) async throws {
        try await executor.run { try self.dropIndex(name) }
    }

    /// The `async` twin of ``conflicts(id:)``: reads the losing leaves on the store's executor.
    ///
    /// - Throws: as ``conflicts(id:)``; `CancellationError` if the task was cancelled before
    ///   the read started.
    public func conflicts(id: String) async throws -> [Document] {
        try await executor.run { try self.conflicts(id: id) }
    }

    /// The `async` twin of ``resolveConflict(id:with:)``: commits the resolution on the store's
    /// executor. A resolution that started commits and returns even if the task is cancelled
    /// meanwhile.
    ///
    /// - Throws: as ``resolveConflict(id:with:)``; `CancellationError` if the task was
    ///   cancelled before the resolution started (nothing was written).
    @discardableResult
    public func resolveConflict(id: String, with document: Document) async throws -> Document {
        try await executor.run { try self.resolveConflict(id: id, with: document) }
    }

    /// The `async` twin of ``save(_:concurrencyControl:)``: maps the indexes and commits on the store's
    /// executor. A save that started commits and returns the stored document even if the task
    /// is cancelled meanwhile.
    ///
    /// - Throws: as its synchronous twin; `CancellationError` if the task was cancelled
    ///   before the save started (nothing was written).
    @discardableResult
    public func save(_ document: Document, concurrencyControl: ConcurrencyControl = .lastWriteWins) async throws -> Document {
        try await executor.run { try self.save(document, concurrencyControl: concurrencyControl) }
    }

    /// The `async` twin of ``add(_:)``: runs on the store's executor. An insert that started
    /// commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``add(_:)``; `CancellationError` if the task was cancelled before the
    ///   insert started (nothing was written).
    @discardableResult
    public func add(_ document: Document) async throws -> Document {
        try await executor.run { try self.add(document) }
    }

    /// The `async` twin of ``update(_:)``: runs on the store's executor. An update that started
    /// commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``update(_:)``; `CancellationError` if the task was cancelled before
    ///   the update started (nothing was written).
    @discardableResult
    public func update(_ document: Document) async throws -> Document {
        try await executor.run { try self.update(document) }
    }

    /// The `async` twin of ``save(contentsOf:)``: one atomic batch, on the store's executor. A
    /// batch that started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``save(contentsOf:)``; `CancellationError` if the task was cancelled
    ///   before the batch started (nothing was written).
    @discardableResult
    public func save(contentsOf documents: [Document]) async throws -> [Document] {
        try await executor.run { try self.save(contentsOf: documents) }
    }

    /// The `async` twin of ``delete(id:)``: runs on the store's executor. A deletion that
    /// started commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``delete(id:)``; `CancellationError` if the task was cancelled before
    ///   the deletion started (nothing was deleted).
    public func delete(id: String) async throws {
        try await executor.run { try self.delete(id: id) }
    }

    /// The `async` twin of ``document(id:)``: runs on the store's executor.
    ///
    /// - Throws: as ``document(id:)``; `CancellationError` if the task was cancelled before
    ///   the read started.
    public func document(id: String) async throws -> Document? {
        try await executor.run { try self.document(id: id) }
    }

    /// The `async` twin of ``documents(ids:)``: runs on the store's executor.
    ///
    /// - Throws: as ``documents(ids:)``; `CancellationError` if the task was cancelled
    ///   before the read started.
    public func documents(ids: [String]) async throws -> [String: Document] {
        try await executor.run { try self.documents(ids: ids) }
    }

    /// The `async` twin of ``query(_:_:)``: runs on the store's executor.
    ///
    /// - Throws: as ``query(_:_:)``; `CancellationError` if the task was cancelled before
    ///   the query started.
    public func query(_ index: String, _ query: IndexQuery) async throws -> IndexQueryResult {
        try await executor.run { try self.query(index, query) }
    }

    /// The `async` twin of ``changes(since:limit:)``: runs on the store's executor.
    ///
    /// - Throws: as ``changes(since:limit:)``; `CancellationError` if the task was
    ///   cancelled before the read started.
    public func changes(since: UInt64, limit: Int = .max) async throws -> (changes: [DocumentChange], lastSequence: UInt64) {
        try await executor.run { try self.changes(since: since, limit: limit) }
    }

    /// The `async` twin of ``save(_:id:)``: `value` is encoded here, then saved on the store's
    /// executor (where the bytes of blobs read from a store are read). A save that started
    /// commits and returns even if the task is cancelled meanwhile.
    ///
    /// - Throws: as ``save(_:id:)``; `CancellationError` if the task was cancelled before
    ///   the save started (nothing was written).
    @discardableResult
    public func save(_ value: some Encodable, id: String) async throws -> Document {
        let encoded = try Self.encoded(value, id: id)
        return try await executor.run { try self.save(encoded.loaded()) }
    }

    /// The `async` twin of ``document(id:as:)``: reads the document on the store's executor and
    /// decodes it here.
    ///
    /// - Throws: as ``document(id:as:)``; `CancellationError` if the task was cancelled
    ///   before the read started.
    public func document<T: Decodable>(id: String, as type: T.Type) async throws -> T? {
        guard let stored = try await executor.run({ try self.storedModel(id: id) }) else { return nil }
        return try decode(stored, as: type)
    }
}

extension Store {
    /// The `async` twin of ``documents(_:indexes:)``: opens the database, and builds or catches up
    /// its indexes, on the store's executor. An open that started completes even if the task is
    /// cancelled meanwhile.
    ///
    /// - Throws: as ``documents(_:indexes:)``; `CancellationError` if the task was
    ///   cancelled before the open started.
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) async throws -> DocumentDatabase {
        try await executor.run { try self.documents(name, indexes: indexes) }
    }
}
