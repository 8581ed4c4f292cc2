@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Store {
    /// Opens (creating if needed) the document database `name`, with `indexes` as its indexes.
    ///
    /// Indexes are stored in the store. An index named with the version it was stored with is
    /// used as it is, after applying from the change feed the changes made while it was not
    /// named (as CouchDB views catch up); a new one, or one whose `version` changed, is built now
    /// from every document. A stored index that is not named is kept as it is (remove one with
    /// ``DocumentDatabase/dropIndex(_:)``), but cannot be queried until an open names it. Every
    /// handle to the database shares one state: an index named once stays usable, and kept up to
    /// date, through every handle until the store closes.
    ///
    /// Builds and catch-ups map a chunk of documents at a time without holding the database's
    /// write lock, so writes go on meanwhile, and maps may read the database (or write other
    /// documents to it).
    ///
    /// ```swift
    /// let db = try store.documents("main", indexes: [
    ///     DocumentIndex(name: "ByType", version: "1", map: { doc, emit in
    ///         if let type = doc.metadata.type { emit(.string(type), nil) }
    ///     }, reduce: .count)
    /// ])
    /// ```
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for an empty name or one holding NUL, an
    ///   empty or duplicate index name, a map that fails while an index is built (the index is
    ///   then completed by the next open that names it), or a map that names indexes of the
    ///   database whose index it is building.
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) throws -> DocumentDatabase {
        try openDocuments(name, indexes: indexes, access: nil)
    }

    /// Opens database `name`; with `access` (a session's), creating it, or storing an index
    /// definition that is new or of another version, needs ``Permission/modifyTopic``.
    func openDocuments(_ name: String, indexes: [DocumentIndex], access: SessionAccess?) throws -> DocumentDatabase {
        let state = try databaseState(name, access: access)
        try state.indexes.configure(indexes, authorize: access.map { access in { try access.require(.modifyTopic, name) } })
        return DocumentDatabase(state: state, access: access)
    }

    /// The shared state of database `name`, created if missing (with `access`, after checking
    /// ``Permission/modifyTopic``).
    func databaseState(_ name: String, access: SessionAccess?) throws -> DatabaseState {
        try collections.state(kind: .documentDatabase, name: name, as: DatabaseState.self) {
            try DatabaseState(name: name, store: self, authorizeCreate: { try access?.require(.modifyTopic, name) })
        }
    }
}
