@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Keyspace {
    /// Documents: `(4, databaseId, documentId)`.
    package static let documents = Keyspace(id: 4, name: "documents")
    /// Index rows: `(5, indexId, collated key, documentId)`.
    package static let indexRows = Keyspace(id: 5, name: "index rows")
    /// The persistent change feed of document databases: `(6, databaseId, changeSequence)`.
    package static let documentChanges = Keyspace(id: 6, name: "document changes")
    /// Attachments, apart from their documents so that queries never read them:
    /// `(7, databaseId, documentId, name)`.
    package static let attachments = Keyspace(id: 7, name: "attachments")
    /// Leaf revisions of documents in conflict, other than the winner:
    /// `(12, databaseId, documentId, revisionId)`.
    package static let conflictingRevisions = Keyspace(id: 12, name: "conflicting revisions")
    /// Local documents of document databases (replication checkpoints): `(13, databaseId, id)`.
    package static let localDocuments = Keyspace(id: 13, name: "local documents")
}

extension CollectionKind {
    package static let documentDatabase = CollectionKind(id: 3, name: "document database")
    package static let documentIndex = CollectionKind(id: 4, name: "document index")
}

/// Document databases and their indexes as a kind of collection (``CollectionModule``):
/// keyspaces 4–7, 12 and 13, catalog kinds 3 and 4 (FORMAT.md §12, §16).
enum DocumentCollection: CollectionModule {
    static let keyspaces: [Keyspace] = [.documents, .indexRows, .documentChanges, .attachments,
                                        .conflictingRevisions, .localDocuments]
    static let kinds: [CollectionKind] = [.documentDatabase, .documentIndex]
    static var inspector: (any CollectionInspector.Type)? { DocumentInspector.self }
    /// Sessions check databases by name; an index is checked as its database.
    static var pathKinds: [CollectionKind] { [.documentDatabase] }

    /// Index rows (FORMAT.md 3.2, 16.5) are a tuple only in `(5, indexId)`: a collation key
    /// follows, whose type bytes a tuple decoder would reject or misread (`0x10` is null there),
    /// then the document id and emit index as tuple elements. Rendered as
    /// `(5, 3) + collated ["a",1] + ("doc-1", 0)`; a tail that does not decode so, in hex.
    static func describe(key: [UInt8]) -> String? {
        let ks = Keyspace.indexRows.prefix
        guard key.count > ks.count, Array(key[0..<ks.count]) == ks else { return nil }
        var decoder = TupleKeyDecoder(key)
        guard (try? decoder.next()) != nil, let id = try? decoder.next() else { return nil }
        let prefix = "(\(Keyspace.indexRows.id), \(id))"
        var offset = decoder.offset
        guard let value = try? JSON.decodeCollationKey(key[...], at: &offset),
              let rest = try? TupleKey.decode(Array(key[offset...])), !rest.isEmpty
        else { return prefix + " + " + TupleKey.hex(Array(key[decoder.offset...])) }
        let text = String(decoding: value.jsonData(sortedKeys: true), as: UTF8.self)
        return prefix + " + collated " + text + " + " + TupleKey.describe(Array(key[offset...]))
    }
}
