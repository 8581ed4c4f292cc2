import StrataFormat
import StrataFiles
import StrataEngine

// The one table of the ids a store writes into its keys: every keyspace (the first element of
// every key) and every collection kind (the second element of a catalog key). A new collection
// adds its lines here and nowhere in the engine. Ids are on disk: never change or reuse one;
// FORMAT.md §12 lists them too.

extension Keyspace {
    /// Time-series events: `(2, seriesId, sequence)`.
    package static let timeSeriesEvents = Keyspace(id: 2, name: "time-series events")
    /// History messages: `(3, channelId, timetoken)`.
    package static let channelMessages = Keyspace(id: 3, name: "history messages")
    /// Documents: `(4, databaseId, documentId)`.
    package static let documents = Keyspace(id: 4, name: "documents")
    /// Index rows: `(5, indexId, collated key, documentId)`.
    package static let indexRows = Keyspace(id: 5, name: "index rows")
    /// The persistent change feed of document databases: `(6, databaseId, changeSequence)`.
    package static let documentChanges = Keyspace(id: 6, name: "document changes")
    /// Attachments, apart from their documents so that queries never read them:
    /// `(7, databaseId, documentId, name)`.
    package static let attachments = Keyspace(id: 7, name: "attachments")
    /// The time-series edit index: `(8, seriesId, original, edit)`.
    package static let timeSeriesEditIndex = Keyspace(id: 8, name: "time-series edit index")
    /// Channel heads (last timetoken and floor): `(10, channelId)`.
    package static let channelHeads = Keyspace(id: 10, name: "channel heads")
    /// Leaf revisions of documents in conflict, other than the winner:
    /// `(12, databaseId, documentId, revisionId)`.
    package static let conflictingRevisions = Keyspace(id: 12, name: "conflicting revisions")
    /// Local documents of document databases (replication checkpoints): `(13, databaseId, id)`.
    package static let localDocuments = Keyspace(id: 13, name: "local documents")
    // 9, 11, 14 and 15 stay reserved for the collections.
    /// The security policy of sessions: `(16, 0)` (FORMAT.md §17).
    package static let security = Keyspace(id: 16, name: "security")
    /// Push subscriptions: devices, subscriptions, item states, the outbox: `(17, kind, …)`.
    package static let push = Keyspace(id: 17, name: "push")

    /// The name of keyspace `id` for tools: from the table, or "keyspace N" for an id no
    /// collection of this version uses.
    package static func name(of id: UInt64) -> String {
        if id == .max { return "(no keyspace)" }
        return all.first { $0.id == id }?.name ?? "keyspace \(id)"
    }

    /// Every keyspace of this version, in id order.
    package static let all: [Keyspace] = [
        .catalog, .keyValue, .timeSeriesEvents, .channelMessages, .documents, .indexRows,
        .documentChanges, .attachments, .timeSeriesEditIndex, .channelHeads, .conflictingRevisions, .localDocuments,
        .security, .push,
    ]
}

extension CollectionKind {
    package static let timeSeries = CollectionKind(id: 1, name: "time series")
    package static let channel = CollectionKind(id: 2, name: "channel")
    package static let documentDatabase = CollectionKind(id: 3, name: "document database")
    package static let documentIndex = CollectionKind(id: 4, name: "document index")
    /// The store's push subscriptions (keyspace 17); no catalog entry yet, the id names the
    /// collection's shared state.
    package static let push = CollectionKind(id: 5, name: "push subscriptions")

    /// Every kind of this version.
    static let all: [CollectionKind] = [.timeSeries, .channel, .documentDatabase, .documentIndex]
}
