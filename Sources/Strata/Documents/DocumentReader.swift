import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The reads of one document database: documents with their attachments, index queries, the
/// change feed, stored records and revisions, local documents. Each read takes a snapshot of its
/// own and no lock.
package struct DocumentReader: Sendable {
    let name: String
    let id: UInt64
    let engine: Engine
    let indexes: DatabaseIndexes

    package static func documentID(fromKey key: [UInt8], prefixLength: Int) throws -> String {
        var decoder = TupleKeyDecoder(key[prefixLength...])
        guard let id = try? decoder.nextString(), decoder.isAtEnd else {
            throw StrataError.corrupted(file: "documents", offset: 0, reason: "bad document key \(TupleKey.describe(key))")
        }
        return id
    }

    /// The document of a live record (fields and metadata, no attachments).
    package static func document(id: String, record: DocumentRecord, value: UnsafeRawBufferPointer) throws -> Document {
        let body = UnsafeRawBufferPointer(rebasing: value[record.bodyOffset...])
        let json: JSON
        do {
            json = try JSON(binary: body)
        } catch StrataError.corrupted(_, let offset, let reason) {
            throw StrataError.corrupted(file: "document \(id.debugDescription)", offset: record.bodyOffset + offset, reason: reason)
        }
        guard case .object(let fields) = json else {
            throw StrataError.corrupted(file: "document \(id.debugDescription)", offset: record.bodyOffset, reason: "body is not an object")
        }
        var document = Document(id: id, fields: fields)
        document.metadata = record.metadata(id: id)
        return document
    }

    /// The document of a live record whose stored value is `value`: its fields stay in `value`
    /// (``StoredFields``), checked but not decoded until they are read.
    package static func document(id: String, record: DocumentRecord, value: [UInt8]) throws -> Document {
        Document(metadata: record.metadata(id: id), stored: try StoredFields(value: value, bodyOffset: record.bodyOffset, documentID: id))
    }

    /// The live document `id` in `snapshot`, with its attachments; nil if absent or deleted.
    static func load(_ documentID: String, database: UInt64, snapshot: Snapshot) throws -> Document? {
        guard let value = try snapshot.get(DocumentLayout.documentKey(database, documentID)) else { return nil }
        let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
        if record.isDeleted { return nil }
        var document = try document(id: documentID, record: record, value: value)
        for info in record.attachments {
            guard let data = try snapshot.get(DocumentLayout.attachmentKey(database, documentID, info.name)) else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                            reason: "attachment \(info.name.debugDescription) is missing")
            }
            guard data.count == info.length, CRC32C.checksum(data) == info.crc else {
                throw StrataError.corrupted(file: "attachment \(info.name.debugDescription) of document \(documentID.debugDescription)",
                                            offset: 0, reason: "length or CRC does not match the document's record")
            }
            document.attachments[info.name] = Attachment(data: Data(data), contentType: info.contentType)
        }
        return document
    }

    func document(id documentID: String) throws -> Document? {
        try Self.load(documentID, database: id, snapshot: try engine.snapshot())
    }

    func documents(ids: [String]) throws -> [String: Document] {
        let snapshot = try engine.snapshot()
        var out: [String: Document] = [:]
        for documentID in ids where out[documentID] == nil {
            if let d = try Self.load(documentID, database: id, snapshot: snapshot) { out[documentID] = d }
        }
        return out
    }

    func query(_ indexName: String, _ query: IndexQuery) throws -> IndexQueryResult {
        let index = try indexes.activeIndex(indexName)
        return try IndexReader.run(query, index: indexName, prefix: index.prefix, reduction: index.definition.reduce,
                                   collation: index.definition.collation, snapshot: try engine.snapshot())
    }

    /// The persistent change feed after `since`, each change with its revision id (read from the
    /// document's record, which the feed's one entry per document always matches).
    func changes(since: UInt64, limit: Int) throws -> (changes: [DocumentChange], lastSequence: UInt64) {
        let (entries, last, snapshot) = try feed(since: since, limit: limit)
        let changes = try entries.map { entry in
            guard let record = try record(entry.id, snapshot: snapshot), record.changeSequence == entry.sequence,
                  record.revision == entry.revision else {
                throw StrataError.corrupted(file: "change feed of document database \(name.debugDescription)", offset: 0,
                                            reason: "change \(entry.sequence) of document \(entry.id.debugDescription) "
                                                + "does not match the document's record")
            }
            return DocumentChange(id: entry.id, isDeletion: entry.isDeletion, revisionID: record.revisionID(documentID: entry.id),
                                  sequence: entry.sequence, isExternal: entry.isExternal)
        }
        return (changes, last)
    }

    /// The entries of the persistent change feed after `since`, at most `limit`, with the
    /// snapshot they were read from.
    func feed(since: UInt64, limit: Int) throws -> (entries: [DocumentLayout.ChangeEntry], lastSequence: UInt64, snapshot: Snapshot) {
        guard limit >= 0 else { throw StrataError.invalidArgument(argument: "limit", reason: "changes limit \(limit) is negative") }
        let snapshot = try engine.snapshot()
        let prefix = DocumentLayout.changePrefix(id)
        let lower = since == .max ? DocumentLayout.changeKey(id, since) + [0] : DocumentLayout.changeKey(id, since + 1)
        let cursor = snapshot.cursor(lower: lower, upper: TupleKey.prefixSuccessor(prefix))
        var out: [DocumentLayout.ChangeEntry] = []
        var last = since
        while out.count < limit, try cursor.next() {
            let key = cursor.withKey { Array($0) }
            let sequence = try DocumentLayout.changeSequence(fromKey: key, prefixLength: prefix.count, database: name)
            out.append(try DocumentLayout.decodeChange(cursor.value, sequence: sequence))
            last = sequence
        }
        return (out, last, snapshot)
    }

    /// The stored record of `documentID`, or nil.
    func record(_ documentID: String, snapshot: Snapshot) throws -> DocumentRecord? {
        guard let value = try snapshot.get(DocumentLayout.documentKey(id, documentID)) else { return nil }
        return try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
    }

    func replicatedRevision(_ documentID: String, revision: RevisionID, historyLimit: Int) throws -> ReplicatedRevision? {
        let snapshot = try engine.snapshot()
        guard let value = try snapshot.get(DocumentLayout.documentKey(id, documentID)) else { return nil }
        let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
        let tree = record.treeOrLegacy(documentID: documentID)
        guard let index = tree.index(of: revision), tree.nodes[index].isLeaf else { return nil }
        let content: LeafRevision
        if index == 0 {
            content = try LeafRevision.winner(of: documentID, database: id, value: value, snapshot: snapshot)
        } else if tree.nodes[index].isDeleted {
            content = .tombstone(revision: revision.generation, createDate: record.createDate, lastChange: record.lastChange)
        } else {
            guard let stored = try snapshot.get(DocumentLayout.conflictKey(id, documentID, revision)) else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                            reason: "conflicting revision \(revision) is in the tree but not stored")
            }
            content = try LeafRevision(decoding: stored, documentID: documentID, revision: revision)
        }
        var fields: [String: JSON] = [:]
        if !content.record.isDeleted {
            guard case .object(let f) = try content.body.withUnsafeBytes({ try JSON(binary: $0) }) else {
                throw StrataError.corrupted(file: "revision \(revision) of document \(documentID.debugDescription)", offset: 0,
                                            reason: "body is not an object")
            }
            fields = f
        }
        return ReplicatedRevision(documentID: documentID, revisionID: revision,
                                  history: tree.history(of: index, limit: max(1, historyLimit)),
                                  isDeleted: tree.nodes[index].isDeleted, fields: fields, type: content.record.type,
                                  channels: content.record.channels, createDate: content.record.createDate,
                                  lastChange: content.record.lastChange, attachments: content.attachments)
    }

    func localDocument(_ localID: String) throws -> JSON? {
        guard let value = try engine.snapshot().get(DocumentLayout.localKey(id, localID)) else { return nil }
        return try value.withUnsafeBytes { try JSON(binary: $0) }
    }
}
