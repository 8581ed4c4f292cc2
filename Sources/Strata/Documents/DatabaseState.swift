import Foundation
import Synchronization

/// The shared state of one open document database: its catalog id, active indexes, the next
/// change sequence, and its live queries and change subscribers. Every ``DocumentDatabase``
/// handle of the database uses this one object.
///
/// Invariants:
/// - Writes to the database are serialized by ``writer``: a write reads the stored versions,
///   computes the new records, attachment and index-row changes and the change-feed entries, and
///   commits them as ONE engine batch before the lock is released. So index rows always match the
///   committed documents (also after a crash), and a read after a write sees it.
/// - ``indexes`` changes only while ``writer`` is held (in ``configure(_:)``).
final class DatabaseState: CollectionState {
    let name: String
    let id: UInt64
    let engine: Engine
    let catalog: Catalog
    let idFactory: @Sendable () -> String
    let clock: @Sendable () -> Date

    struct WriterState {
        /// The sequence the next change takes (the feed's keys start at 1).
        var nextSequence: UInt64
        var closed = false
    }

    let writer: Mutex<WriterState>
    /// The active indexes by name, in the order given to `configure`.
    let indexes = Mutex<[String: ActiveIndex]>([:])
    /// Live queries and change subscribers (LiveQuery.swift).
    let live = Mutex<LiveState>(LiveState())
    /// Runs live-query refreshes, one at a time, after commits.
    let liveQueue: DispatchQueue

    init(name: String, store: Store) throws {
        try Self.validateName(name)
        self.name = name
        self.engine = store.engine
        self.catalog = store.catalog
        self.idFactory = store.options.documentIDFactory
        self.clock = store.options.clock
        let (entry, _) = try store.catalog.openOrCreate(kind: .documentDatabase, name: name) { DocumentLayout.databasePayload() }
        try DocumentLayout.checkDatabasePayload(entry.payload, name: name)
        self.id = entry.id
        self.liveQueue = DispatchQueue(label: "strata.documents.\(entry.id).live")
        // The feed's last key is the highest sequence ever used (a document's newest entry is
        // never removed), so the next one follows it.
        let snapshot = try store.engine.snapshot()
        let prefix = DocumentLayout.changePrefix(entry.id)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix), reverse: true)
        var next: UInt64 = 1
        if try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var decoder = TupleKeyDecoder(key[prefix.count...])
            guard let last = try? decoder.nextUInt(), decoder.isAtEnd, last < .max else {
                throw StrataError.corrupted(file: "change feed of document database \(name.debugDescription)", offset: 0,
                                            reason: "bad change key \(TupleKey.describe(key))")
            }
            next = last + 1
        }
        self.writer = Mutex(WriterState(nextSequence: next))
    }

    static func validateName(_ name: String) throws {
        guard !name.isEmpty else { throw StrataError.invalidArgument("a document database name must not be empty") }
        guard !name.utf8.contains(0) else {
            throw StrataError.invalidArgument("document database name \(name.debugDescription) contains a NUL character")
        }
    }

    func storeDidClose() {
        writer.withLock { $0.closed = true }
        closeStreams()
    }

    // MARK: Indexes

    /// Makes `definitions` the database's indexes: keeps those whose stored version matches,
    /// builds new ones and rebuilds those whose version changed (under a new catalog id), drops
    /// those not listed.
    func configure(_ definitions: [DocumentIndex]) throws {
        var seen = Set<String>()
        for d in definitions {
            guard !d.name.isEmpty else { throw StrataError.invalidArgument("database \(name.debugDescription): an index name must not be empty") }
            if d.collation == .unicode, !UnicodeCollation.isAvailable { throw UnicodeCollation.unavailable }
            guard seen.insert(d.name).inserted else {
                throw StrataError.invalidArgument("database \(name.debugDescription): two indexes are named \(d.name.debugDescription)")
            }
        }
        var changedNames: [String] = []
        try writer.withLock { w in
            guard !w.closed else { throw StrataError.closed }
            let snapshot = try engine.snapshot()
            let namePrefix = name + "\u{0}"
            var stored: [String: (entry: CatalogEntry, payload: DocumentLayout.IndexPayload)] = [:]
            for (catalogName, entry) in try Catalog.entries(kind: .documentIndex, in: snapshot) where catalogName.hasPrefix(namePrefix) {
                let indexName = String(catalogName.dropFirst(namePrefix.count))
                stored[indexName] = (entry, try DocumentLayout.decodeIndexPayload(entry.payload, name: catalogName))
            }
            var active: [String: ActiveIndex] = [:]
            // Drop what is no longer listed, or stale.
            for (indexName, s) in stored {
                let definition = definitions.first { $0.name == indexName }
                if let definition, s.payload.state == DocumentLayout.indexReady, s.payload.version == definition.version,
                   DocumentLayout.rowsAreCurrent(s.payload, definition.collation) {
                    active[indexName] = ActiveIndex(definition: definition, id: s.entry.id)
                    continue
                }
                var batch = WriteBatch()
                let prefix = DocumentLayout.indexPrefix(s.entry.id)
                batch.deleteRangeRaw(prefix, TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF])
                Catalog.remove(kind: .documentIndex, name: DocumentLayout.indexCatalogName(database: name, index: indexName), into: &batch)
                try engine.write(batch)
                changedNames.append(indexName)
            }
            // Build what is missing.
            for definition in definitions where active[definition.name] == nil {
                let catalogName = DocumentLayout.indexCatalogName(database: name, index: definition.name)
                let (entry, _) = try catalog.openOrCreate(kind: .documentIndex, name: catalogName) {
                    DocumentLayout.indexPayload(version: definition.version, state: DocumentLayout.indexBuilding,
                                                reduction: definition.reduce, collation: definition.collation)
                }
                let index = ActiveIndex(definition: definition, id: entry.id)
                try build(index)
                var batch = WriteBatch()
                let ready = CatalogEntry(id: entry.id, payload: DocumentLayout.indexPayload(
                    version: definition.version, state: DocumentLayout.indexReady, reduction: definition.reduce,
                    collation: definition.collation))
                Catalog.put(ready, kind: .documentIndex, name: catalogName, into: &batch)
                try engine.write(batch)
                active[definition.name] = index
                changedNames.append(definition.name)
            }
            indexes.withLock { $0 = active }
        }
        if !changedNames.isEmpty { indexesDidChange(changedNames) }
    }

    /// Writes the rows of every live document for `index` (whose id has no rows yet).
    private func build(_ index: ActiveIndex) throws {
        let snapshot = try engine.snapshot()
        let prefix = DocumentLayout.documentPrefix(id)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var batch = WriteBatch()
        var documentsInBatch = 0
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            let documentID = try Self.documentID(fromKey: key, prefixLength: prefix.count)
            let record = try DocumentRecord(decoding: cursor.value, documentID: documentID)
            if record.isDeleted { continue }
            let document = try Self.document(id: documentID, record: record, value: cursor.value)
            for row in try IndexMaintenance.rows(of: document, index: index) { batch.putRaw(row.key, row.value) }
            documentsInBatch += 1
            if documentsInBatch >= 1000 || batch.byteSize > 4 << 20 {
                try engine.write(batch)
                batch = WriteBatch()
                documentsInBatch = 0
            }
        }
        if !batch.isEmpty { try engine.write(batch) }
    }

    /// The active index named `name`.
    func activeIndex(_ indexName: String) throws -> ActiveIndex {
        guard let index = indexes.withLock({ $0[indexName] }) else {
            throw StrataError.notFound("index \(indexName.debugDescription) of document database \(name.debugDescription)")
        }
        return index
    }

    // MARK: Reading

    static func documentID(fromKey key: [UInt8], prefixLength: Int) throws -> String {
        var decoder = TupleKeyDecoder(key[prefixLength...])
        guard let id = try? decoder.nextString(), decoder.isAtEnd else {
            throw StrataError.corrupted(file: "documents", offset: 0, reason: "bad document key \(TupleKey.describe(key))")
        }
        return id
    }

    /// The document of a live record (fields and metadata, no attachments).
    static func document(id: String, record: DocumentRecord, value: UnsafeRawBufferPointer) throws -> Document {
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

    /// The live document `id` in `snapshot`, with its attachments; nil if absent or deleted.
    static func load(_ documentID: String, database: UInt64, snapshot: Snapshot) throws -> Document? {
        guard let value = try snapshot.get(DocumentLayout.documentKey(database, documentID)) else { return nil }
        return try value.withUnsafeBytes { buffer -> Document? in
            let record = try DocumentRecord(decoding: buffer, documentID: documentID)
            if record.isDeleted { return nil }
            var document = try document(id: documentID, record: record, value: buffer)
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
        let index = try activeIndex(indexName)
        return try IndexReader.run(query, index: indexName, prefix: index.prefix, reduction: index.definition.reduce,
                                   collation: index.definition.collation, snapshot: try engine.snapshot())
    }

    /// The persistent change feed after `since`.
    func changes(since: UInt64, limit: Int) throws -> (changes: [DocumentChange], lastSequence: UInt64) {
        guard limit >= 0 else { throw StrataError.invalidArgument("changes limit \(limit) is negative") }
        let snapshot = try engine.snapshot()
        let prefix = DocumentLayout.changePrefix(id)
        let lower = since == .max ? DocumentLayout.changeKey(id, since) + [0] : DocumentLayout.changeKey(id, since + 1)
        let cursor = snapshot.cursor(lower: lower, upper: TupleKey.prefixSuccessor(prefix))
        var out: [DocumentChange] = []
        var last = since
        while out.count < limit, try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var decoder = TupleKeyDecoder(key[prefix.count...])
            guard let sequence = try? decoder.nextUInt(), decoder.isAtEnd else {
                throw StrataError.corrupted(file: "change feed of document database \(name.debugDescription)", offset: 0,
                                            reason: "bad change key \(TupleKey.describe(key))")
            }
            out.append(try DocumentLayout.decodeChange(cursor.value, sequence: sequence))
            last = sequence
        }
        return (out, last)
    }

    // MARK: Writing

    enum WriteMode {
        case save, add, update
    }

    /// A version of a document as stored (or as written earlier in the same batch).
    private struct StoredVersion {
        var record: DocumentRecord
        /// The fields, when the version is live.
        var fields: [String: JSON]?
    }

    /// Saves `documents` in one atomic batch.
    func write(_ documents: [Document], mode: WriteMode) throws -> [Document] {
        if documents.isEmpty { return [] }
        let now = clock()
        return try writer.withLock { w -> [Document] in
            guard !w.closed else { throw StrataError.closed }
            let active = Array(indexes.withLock { $0.values })
            let observing = hasObservers
            let snapshot = try engine.snapshot()
            var batch = WriteBatch()
            var pending: [String: StoredVersion] = [:]
            var sequence = w.nextSequence
            var results: [Document] = []
            results.reserveCapacity(documents.count)
            var changes: [DocumentChange] = []
            changes.reserveCapacity(documents.count)
            var touched: [String: [[UInt8]]] = [:]
            for var document in documents {
                if document.metadata.id.isEmpty {
                    document.metadata.id = idFactory()
                    guard !document.metadata.id.isEmpty else {
                        throw StrataError.invalidArgument("StoreOptions.documentIDFactory returned an empty id")
                    }
                }
                let documentID = document.metadata.id
                let key = DocumentLayout.documentKey(id, documentID)
                var old: StoredVersion? = pending[documentID]
                if old == nil, let value = try snapshot.get(key) {
                    old = try value.withUnsafeBytes { buffer in
                        let record = try DocumentRecord(decoding: buffer, documentID: documentID)
                        let fields = record.isDeleted || active.isEmpty
                            ? nil : try Self.document(id: documentID, record: record, value: buffer).fields
                        return StoredVersion(record: record, fields: fields)
                    }
                }
                let exists = old.map { !$0.record.isDeleted } ?? false
                switch mode {
                case .save: break
                case .add:
                    if exists {
                        throw StrataError.conflict("document \(documentID.debugDescription) exists in database \(name.debugDescription)")
                    }
                case .update:
                    if !exists {
                        throw StrataError.notFound("document \(documentID.debugDescription) in database \(name.debugDescription)")
                    }
                }
                // Attachments: write the new or changed ones, delete those no longer there.
                var infos: [DocumentRecord.AttachmentInfo] = []
                if !document.attachments.isEmpty {
                    for (attachmentName, attachment) in document.attachments.sorted(by: { $0.key < $1.key }) {
                        let crc = attachment.data.withUnsafeBytes { CRC32C.checksum($0) }
                        let info = DocumentRecord.AttachmentInfo(name: attachmentName, contentType: attachment.contentType,
                                                                 length: attachment.data.count, crc: crc)
                        infos.append(info)
                        let unchanged = exists && old!.record.attachments.contains { $0 == info }
                        if !unchanged {
                            batch.putRaw(DocumentLayout.attachmentKey(id, documentID, attachmentName), Array(attachment.data))
                        }
                    }
                }
                if let old {
                    for info in old.record.attachments where document.attachments[info.name] == nil {
                        batch.deleteRaw(DocumentLayout.attachmentKey(id, documentID, info.name))
                    }
                    if old.record.changeSequence != 0 { batch.deleteRaw(DocumentLayout.changeKey(id, old.record.changeSequence)) }
                }
                let record = DocumentRecord(
                    isDeleted: false, revision: (old?.record.revision ?? 0) + 1, changeSequence: sequence,
                    createDate: exists ? old!.record.createDate : now, lastChange: now,
                    type: document.metadata.type, channels: document.metadata.channels, attachments: infos)
                document.metadata = record.metadata(id: documentID)
                var value: [UInt8] = []
                value.reserveCapacity(64 + document.fields.count * 24)
                record.appendHeader(to: &value)
                JSON.object(document.fields).appendBinary(to: &value)
                batch.putRaw(key, value)
                batch.putRaw(DocumentLayout.changeKey(id, sequence),
                             DocumentLayout.changeValue(id: documentID, isDeletion: false, revision: record.revision))
                // Index rows.
                if !active.isEmpty {
                    var mapped = document
                    mapped.attachments = [:]
                    var oldDocument: Document?
                    if exists, let fields = old?.fields {
                        var d = Document(id: documentID, fields: fields)
                        d.metadata = old!.record.metadata(id: documentID)
                        oldDocument = d
                    }
                    for index in active {
                        let oldRows = try oldDocument.map { try IndexMaintenance.rows(of: $0, index: index) } ?? []
                        let newRows = try IndexMaintenance.rows(of: mapped, index: index)
                        var keys: [[UInt8]]? = observing ? [] : nil
                        IndexMaintenance.replace(oldRows, with: newRows, in: &batch, touched: &keys)
                        if let keys, !keys.isEmpty { touched[index.name, default: []] += keys.map { Array($0[index.prefix.count...]) } }
                    }
                }
                pending[documentID] = StoredVersion(record: record, fields: active.isEmpty ? nil : document.fields)
                changes.append(DocumentChange(id: documentID, isDeletion: false, revision: record.revision, sequence: sequence))
                sequence += 1
                results.append(document)
            }
            try engine.write(batch)
            w.nextSequence = sequence
            didCommit(changes, touched: touched)
            return results
        }
    }

    /// Deletes document `documentID`: leaves a tombstone (so its revision keeps counting and the
    /// change feed reports the deletion), removes its attachments and index rows.
    func delete(id documentID: String) throws {
        let now = clock()
        try writer.withLock { w in
            guard !w.closed else { throw StrataError.closed }
            let active = Array(indexes.withLock { $0.values })
            let observing = hasObservers
            let snapshot = try engine.snapshot()
            let key = DocumentLayout.documentKey(id, documentID)
            guard let value = try snapshot.get(key) else {
                throw StrataError.notFound("document \(documentID.debugDescription) in database \(name.debugDescription)")
            }
            let (record, oldDocument) = try value.withUnsafeBytes { buffer -> (DocumentRecord, Document?) in
                let record = try DocumentRecord(decoding: buffer, documentID: documentID)
                if record.isDeleted || active.isEmpty { return (record, nil) }
                return (record, try Self.document(id: documentID, record: record, value: buffer))
            }
            guard !record.isDeleted else {
                throw StrataError.notFound("document \(documentID.debugDescription) in database \(name.debugDescription)")
            }
            let sequence = w.nextSequence
            var batch = WriteBatch()
            for info in record.attachments { batch.deleteRaw(DocumentLayout.attachmentKey(id, documentID, info.name)) }
            if record.changeSequence != 0 { batch.deleteRaw(DocumentLayout.changeKey(id, record.changeSequence)) }
            let tombstone = DocumentRecord(isDeleted: true, revision: record.revision + 1, changeSequence: sequence,
                                           createDate: record.createDate, lastChange: now, type: nil, channels: [], attachments: [])
            var tombstoneValue: [UInt8] = []
            tombstone.appendHeader(to: &tombstoneValue)
            batch.putRaw(key, tombstoneValue)
            batch.putRaw(DocumentLayout.changeKey(id, sequence),
                         DocumentLayout.changeValue(id: documentID, isDeletion: true, revision: tombstone.revision))
            var touched: [String: [[UInt8]]] = [:]
            if let oldDocument {
                for index in active {
                    var keys: [[UInt8]]? = observing ? [] : nil
                    IndexMaintenance.replace(try IndexMaintenance.rows(of: oldDocument, index: index), with: [], in: &batch, touched: &keys)
                    if let keys, !keys.isEmpty { touched[index.name] = keys.map { Array($0[index.prefix.count...]) } }
                }
            }
            try engine.write(batch)
            w.nextSequence = sequence + 1
            didCommit([DocumentChange(id: documentID, isDeletion: true, revision: tombstone.revision, sequence: sequence)],
                      touched: touched)
        }
    }
}
