import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A document database of a store (PredixSDK's / Couchbase Lite 1.x's database): JSON documents
/// with metadata and attachments, map/reduce indexes, live queries and a change feed, all stored
/// in the store's engine.
///
/// ```swift
/// let db = try store.documents("main", indexes: [
///     DocumentIndex(name: "InvoiceCostIndex", version: "1", map: { doc, emit in
///         if let cost = doc["TotalCost"] { emit(cost, doc["InvoiceNumber"]) }
///     }, reduce: .sum)
/// ])
/// let saved = try db.save(["TotalCost": 1200, "InvoiceNumber": "A-1"])
/// let expensive = try db.query("InvoiceCostIndex", .range(start: 1000))
/// ```
///
/// ## Guarantees
/// - **Atomic writes**: a save or delete — the document, its attachments, its index rows and its
///   change-feed entry — is one engine batch: all of it survives a crash, or none.
/// - **Read your writes**: once a write returns, every query, fetch and change read sees it.
/// - **Serialized writes**: writes to one database commit one at a time. Index maps run before
///   a write takes the database's lock (a write whose documents changed meanwhile maps them
///   again), so a map or reduce may read, and write to, its own database.
///
/// Every method is thread-safe. After the store closes, every call throws ``StrataError/closed``
/// and every stream ends.
///
/// A handle from a ``StoreSession`` checks every call against the store's security policy, on
/// the database's name as path (each method names the ``Permission`` it needs); a handle from the
/// ``Store`` is not checked.
public struct DocumentDatabase: Sendable {
    let state: DatabaseState
    /// The session's checks, or nil for the store's own handle.
    let access: SessionAccess?

    init(state: DatabaseState, access: SessionAccess? = nil) {
        self.state = state
        self.access = access
    }

    @inline(__always)
    private func require(_ permission: Permission) throws {
        try access?.require(permission, state.name)
    }

    /// The database's name.
    public var name: String { state.name }

    /// The names of the indexes named since the database was opened (those that can be
    /// queried), sorted. Stored indexes not named in this open are not listed.
    public var indexNames: [String] { state.indexes.withLock { $0.keys.sorted() } }

    /// Removes the index `name` for good: its rows and its stored entry. Its live queries end.
    /// (An index merely left out of ``Store/documents(_:indexes:)`` is kept.)
    /// Needs ``Permission/modifyTopic`` in a session.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if the database has no index of that name.
    public func dropIndex(_ name: String) throws {
        try require(.modifyTopic)
        try state.indexes.dropIndex(name)
    }

    // MARK: Writing

    /// Saves a document: inserts it, or replaces the stored version of its id.
    ///
    /// A document without an id gets one from ``StoreOptions/documentIDFactory``. The stored
    /// ``DocumentMetadata/createDate`` is kept, ``DocumentMetadata/lastChange`` set to now and
    /// ``DocumentMetadata/revision`` increased; `type`, `channels`, fields and attachments are the
    /// given document's (attachments it no longer has are removed). The new revision is a child
    /// of the stored winning revision, with a new ``DocumentMetadata/revisionID``.
    ///
    /// By default the last writer wins: the revision the given document carries is not compared
    /// with the stored one (as before revisions existed, and as Couchbase Lite's default). Pass
    /// ``ConcurrencyControl/failOnConflict`` to save only over the revision the document was read
    /// at.
    ///
    /// Needs ``Permission/updateTopic`` in a session, as do every save, add and update.
    ///
    /// - Returns: the document as stored, with its metadata.
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if an index's map fails or emits a key that
    ///   is not JSON (nothing is written); with `.failOnConflict`, ``StrataError/conflict(_:)``
    ///   if the stored revision is not the document's.
    @discardableResult
    public func save(_ document: Document, concurrencyControl: ConcurrencyControl = .lastWriteWins) throws -> Document {
        try require(.updateTopic)
        return try state.writes.write([document], mode: concurrencyControl == .lastWriteWins ? .save : .saveIfCurrent)[0]
    }

    /// Inserts a document whose id is not in use.
    ///
    /// - Throws: ``StrataError/conflict(_:)`` if a document with its id exists.
    @discardableResult
    public func add(_ document: Document) throws -> Document {
        try require(.updateTopic)
        return try state.writes.write([document], mode: .add)[0]
    }

    /// Replaces an existing document.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if no document has its id.
    @discardableResult
    public func update(_ document: Document) throws -> Document {
        try require(.updateTopic)
        return try state.writes.write([document], mode: .update)[0]
    }

    /// Saves many documents in ONE atomic batch (all or none), in order: a later document with
    /// the same id as an earlier one replaces it.
    @discardableResult
    public func save(contentsOf documents: [Document]) throws -> [Document] {
        try require(.updateTopic)
        return try state.writes.write(documents, mode: .save)
    }

    /// Deletes a document, its attachments and its index rows. The change feed reports the
    /// deletion; the id keeps a tombstone so that its revision keeps counting if it is saved
    /// again.
    /// Needs ``Permission/modifyTopic`` in a session.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if no document has the id.
    public func delete(id: String) throws {
        try require(.modifyTopic)
        try state.writes.delete(id: id)
    }

    // MARK: Reading

    /// The document with the given id, with its attachments; nil if there is none.
    ///
    /// Needs ``Permission/readTopic`` in a session, as every read.
    public func document(id: String) throws -> Document? {
        try require(.readTopic)
        return try state.reader.document(id: id)
    }

    /// The documents with the given ids, from one consistent snapshot; absent ids are left out.
    public func documents(ids: [String]) throws -> [String: Document] {
        try require(.readTopic)
        return try state.reader.documents(ids: ids)
    }

    /// Runs a query on the index named `index` (see ``IndexQuery`` for the semantics).
    ///
    /// ```swift
    /// var q = IndexQuery.range(start: ["acme"], end: ["acme", [:]])
    /// q.groupLevel = 1
    /// let totals = try db.query("ByCustomer", q)    // one row: key ["acme"], value the sum
    /// ```
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` for an unknown index, and for a stored index that
    ///   this open of the database did not name (its message says so: name it in
    ///   ``Store/documents(_:indexes:)`` to bring it up to date);
    ///   ``StrataError/invalidArgument(argument:reason:)`` for a negative `limit`, `skip` or `groupLevel`, a
    ///   reduce on an index without reduction, or a `groupLevel` without reduction.
    public func query(_ index: String, _ query: IndexQuery) throws -> IndexQueryResult {
        try require(.readTopic)
        return try state.reader.query(index, query)
    }

    /// A live query: the current result at once, then a new result after each commit that
    /// changes it. Commits that touch no row of the query's keys do not re-run it; a re-run
    /// whose result equals the last one yields nothing. The stream keeps only the newest
    /// result, so a burst of commits reaches a slow consumer as its final result, and the stream
    /// never overflows.
    ///
    /// The stream ends when the consumer cancels it (which frees the live query) or when the
    /// index is dropped with ``dropIndex(_:)``. It ends by throwing ``StrataError/closed`` when
    /// the store closes, by throwing the error when a re-run fails (an I/O error, damaged rows, a
    /// custom reduce that throws), and by throwing the store's failure when the store fails (a
    /// failed log sync, rotation or publish: see ``StoreStatistics/writeError``); `observe` then
    /// throws that failure at once, and ``StrataError/closed`` after the store closed.
    ///
    /// ```swift
    /// for try await result in try db.observe("InvoiceCostIndex", .range(start: 1000)) {
    ///     show(result.rows)
    /// }
    /// ```
    ///
    /// Needs ``Permission/selectTopic`` in a session.
    public func observe(_ index: String, _ query: IndexQuery) throws -> AsyncThrowingStream<IndexQueryResult, any Error> {
        try require(.selectTopic)
        return try state.observers.observe(index, query)
    }

    /// A stream of the changes of each commit from now on, one array per committed write.
    ///
    /// The stream ends when the consumer cancels it. It ends by throwing
    /// ``StrataError/subscriberOverflow(_:)`` when the consumer falls more than `bufferSize`
    /// commits behind (rather than grow memory without bound); the persistent feed,
    /// ``changes(since:limit:)``, then gives what it missed. It ends by throwing
    /// ``StrataError/closed`` when the store closes, and by throwing the store's failure when the
    /// store fails (see ``StoreStatistics/writeError``); `changes()` then throws that failure at
    /// once, and ``StrataError/closed`` after the store closed.
    ///
    /// ```swift
    /// for try await batch in try db.changes(bufferSize: 10_000) {
    ///     for change in batch { print(change.id, change.revisionID) }
    /// }
    /// ```
    ///
    /// Needs ``Permission/selectTopic`` in a session.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for `bufferSize` < 1.
    public func changes(bufferSize: Int = 1_024) throws -> AsyncThrowingStream<[DocumentChange], any Error> {
        try require(.selectTopic)
        guard bufferSize >= 1 else {
            throw StrataError.invalidArgument(argument: "bufferSize", reason: "changes() of document database \(name.debugDescription): bufferSize \(bufferSize) must be at least 1")
        }
        return try state.observers.changeStream(bufferSize: bufferSize)
    }

    /// The persistent change feed: the changes after sequence `since`, in sequence order, at
    /// most `limit` of them, and the sequence to pass next time (the last one returned, or
    /// `since` when there is none). It survives close and reopen; each document appears once,
    /// with its latest change (as CouchDB's `_changes`), deletions included. Start with 0.
    ///
    /// Needs ``Permission/readTopic`` in a session.
    public func changes(since: UInt64, limit: Int = .max) throws -> (changes: [DocumentChange], lastSequence: UInt64) {
        try require(.readTopic)
        return try state.reader.changes(since: since, limit: limit)
    }

    // MARK: Codable

    /// Saves a `Codable` value as the document `id` (insert or replace); its encoding must be a
    /// JSON object. Its ``Blob`` properties become the document's attachments (not fields), and a
    /// ``DocumentModel`` gives the document its type and channels. Metadata and attachments of a
    /// stored version are not kept.
    ///
    /// ```swift
    /// struct Invoice: Codable { var number: String; var total: Int; var scan: Blob? }
    /// try db.save(Invoice(number: "A-1", total: 1200, scan: Blob(data: pdfBytes, contentType: "application/pdf")), id: "A-1")
    /// let invoice = try db.document(id: "A-1", as: Invoice.self)
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if the value does not encode to an object or
    ///   holds a ``Blob`` in an array; as ``Blob/data()`` for a blob read from a store, whose
    ///   bytes are read to be saved.
    @discardableResult
    public func save(_ value: some Encodable, id: String) throws -> Document {
        try save(Self.document(encoding: value, id: id))
    }

    /// The document `id` whose fields are `value`'s encoding, with its blobs as attachments (for
    /// `save(_:id:)` and the transaction's).
    static func document(encoding value: some Encodable, id: String) throws -> Document {
        try encoded(value, id: id).loaded()
    }

    /// ``document(encoding:id:)`` before the bytes of blobs read from a store are read.
    static func encoded(_ value: some Encodable, id: String) throws -> EncodedDocument {
        let blobs = BlobEncoding()
        let json = try JSONValueEncoder(userInfo: blobs.userInfo).encode(value)
        guard case .object(let fields) = json else {
            throw StrataError.invalidArgument(argument: "value", reason: "document \(id.debugDescription): \(type(of: value)) does not encode to a JSON object")
        }
        guard !id.isEmpty else { throw StrataError.invalidArgument(argument: "id", reason: "a document id must not be empty") }
        return blobs.document(id: id, fields: fields, of: value)
    }

    /// The document `id` decoded as `type`; nil if there is none. Its attachments' bytes are not
    /// read: a ``Blob`` property reads them when its ``Blob/data()`` is called.
    ///
    /// - Throws: ``StrataError/typeMismatch(_:)`` or ``StrataError/invalidArgument(argument:reason:)`` from
    ///   decoding when the fields do not fit `type` (or a `Blob` property names no attachment).
    public func document<T: Decodable>(id: String, as type: T.Type) throws -> T? {
        guard let stored = try storedModel(id: id) else { return nil }
        return try decode(stored, as: type)
    }
}
