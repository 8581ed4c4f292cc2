import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One index of a document database, as ``DocumentInspector`` lists it.
public struct DocumentIndexSummary: Codable, Sendable, Equatable {
    /// The index's name.
    public let name: String
    /// Its catalog id (the second element of its row keys).
    public let id: UInt64
    /// The version its rows were built for.
    public let version: String
    /// `ready`, or `building` (rows incomplete: rebuilt on the next open).
    public let state: String
    /// The reduction the application declared (`none`, `count`, `sum`, `stats`, `custom`).
    public let reduction: String
    /// How strings in its keys sort: `raw`, or `unicode` (then the rows lead with Unicode sort
    /// keys and the inspector shows the keys as emitted).
    public let collation: String
    /// Stored rows.
    public let rows: UInt64
}

/// One document database of a store.
public struct DocumentDatabaseSummary: Codable, Sendable, Equatable {
    /// The database's name.
    public let name: String
    /// Its catalog id.
    public let id: UInt64
    /// Live documents.
    public let documents: UInt64
    /// Tombstones: ids whose document was deleted.
    public let tombstones: UInt64
    /// Attachments.
    public let attachments: UInt64
    /// The attachments' bytes.
    public let attachmentBytes: UInt64
    /// Bytes of the document records' keys and values, before compression.
    public let documentBytes: UInt64
    /// Entries of the change feed (one per id).
    public let changes: UInt64
    /// The highest sequence of the change feed (0 if empty).
    public let lastSequence: UInt64
    /// The indexes, in name order.
    public let indexes: [DocumentIndexSummary]
}

/// One stored document, decoded.
public struct DocumentDump: Codable, Sendable, Equatable {
    /// The document's id.
    public let id: String
    /// The document's revision: 1 when first saved, one more on each save or deletion.
    public let revision: UInt64
    /// The winning revision's CouchDB revision id, `"<revision>-<digest>"`.
    public let revisionID: String
    /// The revision ids of the other leaves that are not deletions (conflicting revisions).
    public let conflicts: [String]
    /// How many revisions the document's revision tree keeps.
    public let revisionsKept: Int
    /// Whether this is a tombstone (the document was deleted).
    public let deleted: Bool
    /// When the document was first saved, in milliseconds since 1970.
    public let createDate: Int64
    /// When the document was last saved or deleted, in milliseconds since 1970.
    public let lastChange: Int64
    /// The document's type, if it has one.
    public let type: String?
    /// The channels the document is in.
    public let channels: [String]
    /// Attachment names with their content types and sizes: `name (type, N bytes)`.
    public let attachments: [String]
    /// The fields (nil for a tombstone).
    public let fields: JSON?
}

/// One stored index row, decoded.
public struct IndexRowDump: Codable, Sendable, Equatable {
    /// The key the map function emitted.
    public let key: JSON
    /// The id of the document that emitted the row.
    public let documentID: String
    /// The value the map function emitted, if any.
    public let value: JSON?
}

/// A database with (some of) its documents or the rows of one index.
public struct DocumentDatabaseDump: Codable, Sendable, Equatable {
    /// The database's summary.
    public let summary: DocumentDatabaseSummary
    /// The documents in id order (tombstones included), at most the limit asked for.
    public let documents: [DocumentDump]
    /// With an index: its name; nil when the dump lists documents.
    public let index: String?
    /// With an index: its rows in key order, at most the limit asked for; empty otherwise.
    public let rows: [IndexRowDump]
}

/// Reads the document databases of a store from its files, without opening the store
/// (FORMAT.md §16): the library side of `strata-dump documents`. It prints stored rows; it
/// cannot run map or reduce functions.
public enum DocumentInspector {
    /// Every document database of the store in `directory`, in name order.
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func databases(ofStoreAt directory: String, key: EncryptionKey? = nil) throws -> [DocumentDatabaseSummary] {
        let snapshot = try StoreImage.snapshot(directory: directory, key: key ?? InspectionKey.current)
        return try Catalog.entries(kind: .documentDatabase, in: snapshot).map { try summary(snapshot, $0.name, $0.entry) }
    }

    /// One database with its first `limit` documents, or with the first `limit` rows of `index`.
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func dump(database name: String, ofStoreAt directory: String, index: String? = nil,
                            limit: Int = 100, key: EncryptionKey? = nil) throws -> DocumentDatabaseDump {
        guard limit >= 0 else { throw StrataError.invalidArgument(argument: "limit", reason: "limit \(limit) is negative") }
        let snapshot = try StoreImage.snapshot(directory: directory, key: key ?? InspectionKey.current)
        guard let found = try Catalog.entries(kind: .documentDatabase, in: snapshot).first(where: { $0.name == name }) else {
            throw StrataError.notFound(kind: .documentDatabase, name: name, reason: "document database \(name.debugDescription) in \(directory)")
        }
        let summary = try self.summary(snapshot, name, found.entry)
        if let index {
            guard let i = summary.indexes.first(where: { $0.name == index }) else {
                throw StrataError.notFound(kind: .index, name: index, reason: "index \(index.debugDescription) of document database \(name.debugDescription)")
            }
            let prefix = DocumentLayout.indexPrefix(i.id)
            let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
            var rows: [IndexRowDump] = []
            while rows.count < limit, try cursor.next() {
                let collation: DocumentIndex.Collation = i.collation == "unicode" ? .unicode : .raw
                let row = try cursor.withKey {
                    try IndexReader.decodeRow(key: $0, value: cursor.value, prefixLength: prefix.count, collation: collation)
                }
                rows.append(IndexRowDump(key: row.key, documentID: row.documentID ?? "", value: row.value))
            }
            return DocumentDatabaseDump(summary: summary, documents: [], index: index, rows: rows)
        }
        let prefix = DocumentLayout.documentPrefix(found.entry.id)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var documents: [DocumentDump] = []
        while documents.count < limit, try cursor.next() {
            let key = cursor.withKey { Array($0) }
            let id = try DocumentReader.documentID(fromKey: key, prefixLength: prefix.count)
            let record = try DocumentRecord(decoding: cursor.value, documentID: id)
            // Not a ternary: its `nil` would become `JSON.null` (JSON is ExpressibleByNilLiteral).
            var fields: JSON? = nil
            if !record.isDeleted { fields = try DocumentReader.document(id: id, record: record, value: cursor.value).json }
            let revisions = record.revisionSummary(documentID: id)
            documents.append(DocumentDump(
                id: id, revision: record.revision, revisionID: revisions.revisionID, conflicts: revisions.conflicts,
                revisionsKept: revisions.kept, deleted: record.isDeleted,
                createDate: try InspectedTime.milliseconds(record.createDate, "document \(id.debugDescription)"),
                lastChange: try InspectedTime.milliseconds(record.lastChange, "document \(id.debugDescription)"),
                type: record.type, channels: record.channels,
                attachments: record.attachments.map { "\($0.name) (\($0.contentType), \($0.length) bytes)" },
                fields: fields))
        }
        return DocumentDatabaseDump(summary: summary, documents: documents, index: nil, rows: [])
    }

    private static func count(_ snapshot: Snapshot, prefix: [UInt8], _ each: (MergedCursor) throws -> Void = { _ in }) throws -> UInt64 {
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var n: UInt64 = 0
        while try cursor.next() {
            n += 1
            try each(cursor)
        }
        return n
    }

    static func summary(_ snapshot: Snapshot, _ name: String, _ entry: CatalogEntry) throws -> DocumentDatabaseSummary {
        try DocumentLayout.checkDatabasePayload(entry.payload, name: name)
        var live: UInt64 = 0
        var tombstones: UInt64 = 0
        var documentBytes: UInt64 = 0
        _ = try count(snapshot, prefix: DocumentLayout.documentPrefix(entry.id)) { cursor in
            let flags = cursor.value.first ?? 0
            if flags & DocumentRecord.deletedFlag != 0 { tombstones += 1 } else { live += 1 }
            documentBytes += UInt64(cursor.withKey { $0.count } + cursor.value.count)
        }
        var attachmentBytes: UInt64 = 0
        let attachments = try count(snapshot, prefix: DocumentLayout.attachmentDatabasePrefix(entry.id)) { cursor in
            attachmentBytes += UInt64(cursor.value.count)
        }
        var lastSequence: UInt64 = 0
        let changePrefix = DocumentLayout.changePrefix(entry.id)
        let changes = try count(snapshot, prefix: changePrefix) { cursor in
            let key = cursor.withKey { Array($0) }
            var decoder = TupleKeyDecoder(key[changePrefix.count...])
            if let s = try? decoder.nextUInt() { lastSequence = max(lastSequence, s) }
        }
        let namePrefix = name + "\u{0}"
        var indexes: [DocumentIndexSummary] = []
        for (catalogName, indexEntry) in try Catalog.entries(kind: .documentIndex, in: snapshot) where catalogName.hasPrefix(namePrefix) {
            let payload = try DocumentLayout.decodeIndexPayload(indexEntry.payload, name: catalogName)
            indexes.append(DocumentIndexSummary(
                name: String(catalogName.dropFirst(namePrefix.count)), id: indexEntry.id, version: payload.version,
                state: payload.state == DocumentLayout.indexReady ? "ready"
                    : payload.state == DocumentLayout.indexBehind ? "behind at \(payload.reflected)" : "building",
                reduction: DocumentLayout.reductionName(payload.reduction),
                collation: payload.collation == .unicode ? "unicode" : "raw",
                rows: try count(snapshot, prefix: DocumentLayout.indexPrefix(indexEntry.id))))
        }
        return DocumentDatabaseSummary(name: name, id: entry.id, documents: live, tombstones: tombstones,
                                       attachments: attachments, attachmentBytes: attachmentBytes, documentBytes: documentBytes,
                                       changes: changes, lastSequence: lastSequence, indexes: indexes)
    }
}
