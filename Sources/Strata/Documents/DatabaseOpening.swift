@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What opening a document database reads and checks before its state exists: the catalog entry
/// (created if missing, its layout upgraded), the next change sequence from the feed, and the
/// stored indexes that were current.
struct DatabaseOpening {
    /// The database's catalog id.
    let id: UInt64
    /// The writer lock's initial state.
    let writer: DatabaseState.WriterState

    /// Opens (or with `authorizeCreate` passing, creates) database `name` of `store`. An open
    /// that fails writes nothing.
    static func open(name: String, store: Store, authorizeCreate: () throws -> Void) throws -> DatabaseOpening {
        try validateName(name)
        let (entry, _) = try store.catalog.openOrCreate(kind: .documentDatabase, name: name) {
            try authorizeCreate()
            return DocumentLayout.databasePayload()
        }
        try DocumentLayout.checkDatabasePayload(entry.payload, name: name)
        var upgrade: CommitBatch?
        if entry.payload != DocumentLayout.databasePayload() {
            // Layout 1 or 2 (FORMAT.md §16.1): from now on records may hold revision trees and
            // single-revision digests (flag bit 4), which a build reading only an older layout
            // must refuse rather than call corrupt. Committed once the reads below found nothing
            // wrong: an open that fails writes nothing.
            var batch = CommitBatch()
            Catalog.put(CatalogEntry(id: entry.id, payload: DocumentLayout.databasePayload()), kind: .documentDatabase,
                        name: name, into: &batch.records)
            upgrade = batch
        }
        // The feed's last key is the highest sequence ever used (a document's newest entry is
        // never removed), so the next one follows it.
        let snapshot = try store.engine.snapshot()
        let prefix = DocumentLayout.changePrefix(entry.id)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix), reverse: true)
        var next: UInt64 = 1
        if try cursor.next() {
            let key = cursor.withKey { Array($0) }
            let last = try DocumentLayout.changeSequence(fromKey: key, prefixLength: prefix.count, database: name)
            next = try CounterLimit.next(after: last, "change sequence",
                                         file: "change feed of document database \(name.debugDescription)")
        }
        var unconverted: [String: (id: UInt64, payload: DocumentLayout.IndexPayload)] = [:]
        for (indexName, entry, payload) in try storedIndexes(database: name, in: snapshot)
        where payload.state == DocumentLayout.indexReady {
            unconverted[indexName] = (entry.id, payload)
        }
        if let upgrade { try store.engine.commit(upgrade) }
        return DatabaseOpening(id: entry.id, writer: DatabaseState.WriterState(nextSequence: next, unconverted: unconverted))
    }

    /// The stored indexes of database `database`: name, catalog entry, decoded payload.
    static func storedIndexes(database: String, in snapshot: Snapshot) throws
        -> [(name: String, entry: CatalogEntry, payload: DocumentLayout.IndexPayload)] {
        let namePrefix = database + "\u{0}"
        var out: [(name: String, entry: CatalogEntry, payload: DocumentLayout.IndexPayload)] = []
        for (catalogName, entry) in try Catalog.entries(kind: .documentIndex, in: snapshot) where catalogName.hasPrefix(namePrefix) {
            out.append((String(catalogName.dropFirst(namePrefix.count)), entry,
                        try DocumentLayout.decodeIndexPayload(entry.payload, name: catalogName)))
        }
        return out
    }

    static func validateName(_ name: String) throws {
        guard !name.isEmpty else { throw StrataError.invalidArgument(argument: "name", reason: "a document database name must not be empty") }
        guard !name.utf8.contains(0) else {
            throw StrataError.invalidArgument(argument: "name", reason: "document database name \(name.debugDescription) contains a NUL character")
        }
    }
}
