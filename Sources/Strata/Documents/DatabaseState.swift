import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The shared state of one open document database, composed of its parts: the writer lock and
/// its state (the next change sequence), the attached indexes (``DatabaseIndexes``), the reads
/// (``DocumentReader``), the writes (``DocumentWriter``, ``RevisionWriter``, both staging index
/// rows through ``IndexStaging``) and the streams (``DatabaseObservers``); it is opened by
/// ``DatabaseOpening``. Every ``DocumentDatabase`` handle of the database uses this one object.
///
/// Invariants:
/// - Writes to the database are ordered by ``writer``: a commit checks the stored versions,
///   assigns change sequences and commits the document records, attachment and index-row changes
///   and the change-feed entries as ONE engine batch before the lock is released. So index rows
///   always match the committed documents (also after a crash), and a read after a write sees it.
/// - No application code runs under ``writer``: maps (and the id factory and clock) run before
///   it is taken, on the versions a snapshot holds; the commit then checks under the lock that
///   every document it writes still has the revision the rows were computed from and that the
///   attached indexes are the same, and starts over otherwise. Revisions grow with every write
///   of an id, so an equal revision means the same stored version.
/// - The attached indexes (``DatabaseIndexes``) change only while ``writer`` is held.
package final class DatabaseState: CollectionState {
    let name: String
    let id: UInt64
    let engine: Engine
    /// The store's executor, for the `async` twins.
    let executor: StoreExecutor
    /// The store's running replications (Replication/), which the store's close stops.
    let replications: ReplicationRegistry
    let catalog: Catalog

    struct WriterState {
        /// The sequence the next change takes (the feed's keys start at 1).
        var nextSequence: UInt64
        var closed = false
        /// Stored indexes in state current that are not attached yet in this open: the first
        /// commit that does not maintain them rewrites them as behind at the sequence before it.
        var unconverted: [String: (id: UInt64, payload: DocumentLayout.IndexPayload)]
        /// The versions a transaction holding the lock has staged and not committed yet, by
        /// document id (empty outside a transaction); nil document: deleted.
        var uncommitted: [String: (record: DocumentRecord, document: Document?)] = [:]
        /// What a read through the transaction's handle returns for each id in `uncommitted`: the
        /// live document with its attachments, or nil if the transaction deleted it. An id missing
        /// here reads the stored version.
        var visible: [String: Document?] = [:]
    }

    /// A commit's changes to the database, for change streams and live queries.
    struct Changes: CommitChange {
        let databaseID: UInt64
        let changes: [DocumentChange]
        /// The index-row keys (after the index prefix) the commit removed or added, by index name;
        /// nil when not collected (no stream was subscribed when it was staged): a live query
        /// then assumes the commit touched it.
        let touched: [String: [[UInt8]]]?
    }

    /// Indexes built, rebuilt or dropped: their live queries run again (or end).
    struct IndexesChanged: CommitChange {
        let databaseID: UInt64
        let names: [String]
    }

    let writer: CollectionLock<WriterState>
    let broadcaster: CommitBroadcaster
    let indexes: DatabaseIndexes
    let reader: DocumentReader
    let writes: DocumentWriter
    let revisions: RevisionWriter
    let observers: DatabaseObservers

    /// `authorizeCreate` (a session's check) runs before a missing database is created.
    init(name: String, store: Store, authorizeCreate: () throws -> Void = {}) throws {
        let opening = try DatabaseOpening.open(name: name, store: store, authorizeCreate: authorizeCreate)
        self.name = name
        self.id = opening.id
        self.engine = store.engine
        self.executor = store.executor
        self.replications = store.replications
        self.catalog = store.catalog
        self.broadcaster = store.broadcaster
        writer = CollectionLock(opening.writer, what: "document database \(name.debugDescription)")
        indexes = DatabaseIndexes(name: name, id: id, engine: engine, catalog: catalog, broadcaster: broadcaster, writer: writer)
        reader = DocumentReader(name: name, id: id, engine: engine, indexes: indexes)
        let staging = IndexStaging(name: name)
        revisions = RevisionWriter(name: name, id: id, engine: engine, broadcaster: broadcaster, clock: store.options.clock,
                                   writer: writer, indexes: indexes, staging: staging, reader: reader)
        writes = DocumentWriter(name: name, id: id, engine: engine, broadcaster: broadcaster,
                                idFactory: store.options.documentIDFactory, clock: store.options.clock, writer: writer,
                                indexes: indexes, staging: staging, revisions: revisions)
        observers = DatabaseObservers(name: name, id: id, engine: engine, broadcaster: broadcaster, writer: writer,
                                      indexes: indexes)
    }

    func storeDidClose() {
        // Inside a transaction's body on this task the lock is the transaction's: the engine,
        // closed already, refuses its commit anyway.
        try? writer.withLock { $0.closed = true }
    }

    func storeDidFail(_ error: StrataError) {}
}
