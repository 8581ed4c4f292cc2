extension Store {
    /// Opens (creating if needed) the document database `name`, with `indexes` as its indexes.
    ///
    /// Indexes are stored in the store. An index listed with the version it was stored with is
    /// used as it is; a new one, or one whose `version` changed, is built now from every
    /// document; a stored index no longer listed is dropped. Every handle to the database shares
    /// one state, so the latest call's index list holds for all of them.
    ///
    /// ```swift
    /// let db = try store.documents("main", indexes: [
    ///     DocumentIndex(name: "ByType", version: "1", map: { doc, emit in
    ///         if let type = doc.metadata.type { emit(.string(type), nil) }
    ///     }, reduce: .count)
    /// ])
    /// ```
    /// - Throws: ``StrataError/invalidArgument(_:)`` for an empty name or one holding NUL, an
    ///   empty or duplicate index name, or a map that fails while an index is built (the index
    ///   is then built again on the next open).
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) throws -> DocumentDatabase {
        let state = try collections.state(kind: .documentDatabase, name: name, as: DatabaseState.self) {
            try DatabaseState(name: name, store: self)
        }
        try state.configure(indexes)
        return DocumentDatabase(state: state)
    }
}
