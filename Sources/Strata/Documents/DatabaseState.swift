import Foundation
import Synchronization
import StrataFormat
import StrataFiles
import StrataEngine

/// The shared state of one open document database: its catalog id, attached indexes, the next
/// change sequence, and its live queries and change subscribers. Every ``DocumentDatabase``
/// handle of the database uses this one object.
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
/// - ``indexes`` changes only while ``writer`` is held.
package final class DatabaseState: CollectionState {
    let name: String
    let id: UInt64
    let engine: Engine
    /// The store's executor, for the `async` twins.
    let executor: StoreExecutor
    /// The store's running replications (Replication/), which the store's close stops.
    let replications: ReplicationRegistry
    let catalog: Catalog
    let idFactory: @Sendable () -> String
    let clock: @Sendable () -> Date

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
    /// The attached indexes by name: those named since the database was opened.
    let indexes = Mutex<[String: ActiveIndex]>([:])
    /// Serializes index builds, catch-ups and drops of this database (IndexBuild.swift).
    let configuration = ConditionLock()

    /// `authorizeCreate` (a session's check) runs before a missing database is created.
    init(name: String, store: Store, authorizeCreate: () throws -> Void = {}) throws {
        try Self.validateName(name)
        self.name = name
        self.engine = store.engine
        self.executor = store.executor
        self.replications = store.replications
        self.catalog = store.catalog
        self.idFactory = store.options.documentIDFactory
        self.clock = store.options.clock
        self.broadcaster = store.broadcaster
        let (entry, _) = try store.catalog.openOrCreate(kind: .documentDatabase, name: name) {
            try authorizeCreate()
            return DocumentLayout.databasePayload()
        }
        try DocumentLayout.checkDatabasePayload(entry.payload, name: name)
        var upgrade: CommitBatch?
        if entry.payload != DocumentLayout.databasePayload() {
            // Layout 1 (FORMAT.md §16.1): from now on records may hold revision trees, which a
            // build reading only layout 1 must refuse rather than call corrupt. Committed once
            // the reads below found nothing wrong: an open that fails writes nothing.
            var batch = CommitBatch()
            Catalog.put(CatalogEntry(id: entry.id, payload: DocumentLayout.databasePayload()), kind: .documentDatabase,
                        name: name, into: &batch.records)
            upgrade = batch
        }
        self.id = entry.id
        // The feed's last key is the highest sequence ever used (a document's newest entry is
        // never removed), so the next one follows it.
        let snapshot = try store.engine.snapshot()
        let prefix = DocumentLayout.changePrefix(entry.id)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix), reverse: true)
        var next: UInt64 = 1
        if try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var decoder = TupleKeyDecoder(key[prefix.count...])
            guard let last = try? decoder.nextUInt(), decoder.isAtEnd else {
                throw StrataError.corrupted(file: "change feed of document database \(name.debugDescription)", offset: 0,
                                            reason: "bad change key \(TupleKey.describe(key))")
            }
            next = try CounterLimit.next(after: last, "change sequence",
                                         file: "change feed of document database \(name.debugDescription)")
        }
        var unconverted: [String: (id: UInt64, payload: DocumentLayout.IndexPayload)] = [:]
        for (indexName, entry, payload) in try Self.storedIndexes(database: name, in: snapshot)
        where payload.state == DocumentLayout.indexReady {
            unconverted[indexName] = (entry.id, payload)
        }
        if let upgrade { try store.engine.commit(upgrade) }
        self.writer = CollectionLock(WriterState(nextSequence: next, unconverted: unconverted),
                                     what: "document database \(name.debugDescription)")
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

    func storeDidClose() {
        // Inside a transaction's body on this task the lock is the transaction's: the engine,
        // closed already, refuses its commit anyway.
        try? writer.withLock { $0.closed = true }
    }

    func storeDidFail(_ error: StrataError) {}

    // MARK: Indexes

    /// The attached, complete index named `indexName`.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` saying whether the index does not exist, is stored
    ///   but not named in this open, or is still being built.
    func activeIndex(_ indexName: String) throws -> ActiveIndex {
        if let index = indexes.withLock({ $0[indexName] }) {
            guard index.pending == nil else {
                throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription) "
                                           + "is being built; query it once the Store.documents(_:indexes:) call naming it returns")
            }
            return index
        }
        let catalogName = DocumentLayout.indexCatalogName(database: name, index: indexName)
        if try catalog.entry(kind: .documentIndex, name: catalogName) != nil {
            throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription) "
                                       + "is stored but not open: name it in Store.documents(_:indexes:) to bring it up to date")
        }
        throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription)")
    }

    // MARK: Reading

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
        guard limit >= 0 else { throw StrataError.invalidArgument(argument: "limit", reason: "changes limit \(limit) is negative") }
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
        /// A save that must replace the stored revision the document carries
        /// (``ConcurrencyControl/failOnConflict``).
        case saveIfCurrent
    }

    /// The index rows a write removes and adds for one document, by index name.
    typealias RowChanges = [String: (old: [IndexRow], new: [IndexRow])]

    /// One document of a write: the version it replaces and the record it writes.
    private struct Step {
        /// The document with its id and new metadata.
        var document: Document
        var key: [UInt8]
        /// The version replaced (stored, or written earlier in the batch), if any.
        var old: DocumentRecord?
        /// The live version replaced, without attachments (only when asked for, to map it).
        var oldDocument: Document?
        var record: DocumentRecord
        /// The fields as binary JSON (FORMAT.md §13.1): the record's body.
        var body: [UInt8]
    }

    /// Resolves a batch against `snapshot`: for each document the version it replaces and the
    /// record it writes, with change sequences from `firstSequence`; checks `mode`. Also returns
    /// the revision of each id's stored record (0: none), which identifies the stored version.
    private func steps(_ documents: [Document], attachments: [[DocumentRecord.AttachmentInfo]], mode: WriteMode, now: Date,
                       snapshot: Snapshot, firstSequence: UInt64, withOldDocuments: Bool,
                       pending: [String: (record: DocumentRecord, document: Document?)] = [:]) throws
        -> (steps: [Step], revisions: [String: String]) {
        var latest = pending
        var revisions: [String: String] = [:]
        var out: [Step] = []
        out.reserveCapacity(documents.count)
        var sequence = firstSequence
        // One change sequence per document, refused before anything is staged past the limit.
        var probe = firstSequence
        try CounterLimit.take(UInt64(documents.count), from: &probe, "change sequence")
        for (i, var document) in documents.enumerated() {
            let documentID = document.metadata.id
            let key = DocumentLayout.documentKey(id, documentID)
            var old = latest[documentID]
            if old == nil {
                if let value = try snapshot.get(key) {
                    old = try value.withUnsafeBytes { buffer in
                        let record = try DocumentRecord(decoding: buffer, documentID: documentID)
                        let live = record.isDeleted || !withOldDocuments
                            ? nil : try Self.document(id: documentID, record: record, value: buffer)
                        return (record, live)
                    }
                }
                revisions[documentID] = old.map { $0.record.revisionID(documentID: documentID).description } ?? ""
            }
            let exists = old.map { !$0.record.isDeleted } ?? false
            switch mode {
            case .save: break
            case .saveIfCurrent:
                let stored = old.flatMap { $0.record.isDeleted ? nil : $0.record.revisionID(documentID: documentID).description } ?? ""
                if document.metadata.revisionID != stored {
                    let given = document.metadata.revisionID.isEmpty ? "no revision" : "revision \(document.metadata.revisionID)"
                    let now = stored.isEmpty ? "none (absent or deleted)" : stored
                    throw StrataError.conflict("document \(documentID.debugDescription) in database \(name.debugDescription) was "
                                               + "saved with \(given), but the stored revision is \(now)")
                }
            case .add:
                if exists {
                    throw StrataError.conflict("document \(documentID.debugDescription) exists in database \(name.debugDescription)")
                }
            case .update:
                if !exists {
                    throw StrataError.notFound(kind: .document, name: documentID, reason: "document \(documentID.debugDescription) in database \(name.debugDescription)")
                }
            }
            var body: [UInt8] = []
            body.reserveCapacity(32 + document.fields.count * 24)
            JSON.object(document.fields).appendBinary(to: &body)
            // The new revision is a child of the winner (last writer wins on this replica).
            var tree = old.map { $0.record.treeOrLegacy(documentID: documentID) } ?? RevisionTree(nodes: [])
            let generation = (old?.record.revision ?? 0) &+ 1
            let digest = RevisionDigest.make(parent: tree.nodes.first?.revision, isDeleted: false, body: body,
                                             type: document.metadata.type, channels: document.metadata.channels,
                                             attachments: attachments[i])
            tree.addChild(of: tree.nodes.isEmpty ? nil : 0, revision: try RevisionDigest.revision(generation, digest),
                          isDeleted: false)
            tree.settle()
            let record = DocumentRecord(
                isDeleted: false, revision: generation, changeSequence: sequence,
                createDate: exists ? (old?.record.createDate ?? now) : now, lastChange: now,
                type: document.metadata.type, channels: document.metadata.channels, attachments: attachments[i], tree: tree)
            document.metadata = record.metadata(id: documentID)
            var mapped = document
            mapped.attachments = [:]
            out.append(Step(document: document, key: key, old: old?.record, oldDocument: exists ? old?.document : nil, record: record,
                            body: body))
            latest[documentID] = (record, withOldDocuments ? mapped : nil)
            sequence += 1
        }
        return (out, revisions)
    }

    /// `documents` with ids from the id factory where they have none, and their attachments'
    /// descriptions (sorted by name).
    private func identified(_ documents: [Document]) throws -> ([Document], [[DocumentRecord.AttachmentInfo]]) {
        var documents = documents
        for i in documents.indices where documents[i].metadata.id.isEmpty {
            documents[i].metadata.id = idFactory()
            guard !documents[i].metadata.id.isEmpty else {
                throw StrataError.invalidArgument(argument: "documentIDFactory", reason: "StoreOptions.documentIDFactory returned an empty id")
            }
        }
        let attachments = documents.map { document in
            document.attachments.sorted { $0.key < $1.key }.map { attachmentName, attachment in
                DocumentRecord.AttachmentInfo(name: attachmentName, contentType: attachment.contentType, length: attachment.data.count,
                                              crc: attachment.data.withUnsafeBytes { CRC32C.checksum($0) })
            }
        }
        return (documents, attachments)
    }

    /// The rows each step removes and adds in each of `indexes` (runs the maps).
    private func rowChanges(of steps: [Step], indexes: [String: ActiveIndex]) throws -> [RowChanges] {
        var rows: [RowChanges] = []
        rows.reserveCapacity(steps.count)
        for step in steps {
            var mapped = step.document
            mapped.attachments = [:]
            var changes: RowChanges = [:]
            for index in indexes.values {
                let old = try step.oldDocument.map { try IndexMaintenance.rows(of: $0, index: index) } ?? []
                changes[index.name] = (old, try IndexMaintenance.rows(of: mapped, index: index))
            }
            rows.append(changes)
        }
        return rows
    }

    /// Saves `documents` in one atomic batch.
    ///
    /// Two phases: the rows are computed from a snapshot without any lock (the maps may read or
    /// write this database), then the commit takes ``writer``, checks that the stored versions and
    /// the attached indexes are those the rows were computed from, and writes; if not, it starts
    /// over. So concurrent saves of other documents never make it start over. When no write of the
    /// database committed since phase 1 read its change sequence (every document write advances it
    /// under ``writer``, after its batch is in the engine), the versions phase 1 read are the stored
    /// ones, and its steps are committed without reading them again.
    func write(_ documents: [Document], mode: WriteMode) throws -> [Document] {
        if documents.isEmpty { return [] }
        let now = clock()
        let (documents, attachments) = try identified(documents)
        while true {
            // Phase 1, no lock: the versions replaced and every attached index's rows (nothing
            // to do without indexes).
            let active = indexes.withLock { $0 }
            var phaseOne: (steps: [Step], revisions: [String: String], firstSequence: UInt64)?
            var rows: [RowChanges] = []
            if !active.isEmpty {
                // Read before the snapshot: a commit it counts is in the snapshot.
                let firstSequence = try writer.withLock { w -> UInt64 in
                    guard !w.closed else { throw StrataError.closed }
                    return w.nextSequence
                }
                let (prepared, stored) = try steps(documents, attachments: attachments, mode: mode, now: now,
                                                   snapshot: try engine.snapshot(), firstSequence: firstSequence,
                                                   withOldDocuments: true)
                phaseOne = (prepared, stored, firstSequence)
                rows = try rowChanges(of: prepared, indexes: active)
            }
            // Phase 2, under the writer lock: check, then commit.
            let committed = try writer.withLock { w -> [Document]? in
                guard !w.closed else { throw StrataError.closed }
                let current = indexes.withLock { $0 }
                guard current.mapValues(\.id) == active.mapValues(\.id) else { return nil }
                if let phaseOne, phaseOne.firstSequence == w.nextSequence {
                    return try commit(phaseOne.steps, rows: rows, indexes: current, writer: &w)
                }
                let (checked, stored) = try steps(documents, attachments: attachments, mode: mode, now: now,
                                                  snapshot: try engine.snapshot(), firstSequence: w.nextSequence,
                                                  withOldDocuments: false)
                if let phaseOne, stored != phaseOne.revisions { return nil }
                return try commit(checked, rows: rows, indexes: current, writer: &w)
            }
            if let committed { return committed }
        }
    }

    /// Writes the steps of a checked write, with their rows, as one batch. Called with the writer
    /// lock held.
    private func commit(_ steps: [Step], rows: [RowChanges], indexes active: [String: ActiveIndex],
                        writer w: inout WriterState) throws -> [Document] {
        var staged = w
        var batch = CommitBatch()
        let results = stage(steps, rows: rows, indexes: active, writer: &staged, into: &batch)
        try engine.commit(batch)
        w = staged
        return results
    }

    /// Adds the records of checked steps, with their rows, to `batch`, and advances `w` as if they
    /// committed.
    private func stage(_ steps: [Step], rows: [RowChanges], indexes active: [String: ActiveIndex],
                       writer w: inout WriterState, into commit: inout CommitBatch) -> [Document] {
        let observing = broadcaster.wantsChanges(of: engine, kind: .documentDatabase, name: name)
        let inTransaction = TransactionScope.current != nil
        // Moved out and back, not copied: `commit.records` may hold a transaction's earlier writes.
        var batch = WriteBatch()
        swap(&batch, &commit.records)
        defer { swap(&batch, &commit.records) }
        let converted = convertUnattachedIndexes(w, into: &batch)
        var results: [Document] = []
        results.reserveCapacity(steps.count)
        var changes: [DocumentChange] = []
        changes.reserveCapacity(steps.count)
        var touched: [String: [[UInt8]]] = [:]
        for (i, step) in steps.enumerated() {
            let documentID = step.document.metadata.id
            let exists = step.old.map { !$0.isDeleted } ?? false
            // Attachments: write the new or changed ones, delete those no longer there.
            for info in step.record.attachments {
                let unchanged = exists && (step.old?.attachments.contains { $0 == info } ?? false)
                if !unchanged, let attachment = step.document.attachments[info.name] {
                    batch.putRaw(DocumentLayout.attachmentKey(id, documentID, info.name), Array(attachment.data))
                }
            }
            if let old = step.old {
                for info in old.attachments where step.document.attachments[info.name] == nil {
                    batch.deleteRaw(DocumentLayout.attachmentKey(id, documentID, info.name))
                }
                if old.changeSequence != 0 { batch.deleteRaw(DocumentLayout.changeKey(id, old.changeSequence)) }
            }
            var value: [UInt8] = []
            value.reserveCapacity(64 + step.body.count)
            step.record.appendHeader(to: &value)
            value.append(contentsOf: step.body)
            batch.putRaw(step.key, value)
            batch.putRaw(DocumentLayout.changeKey(id, step.record.changeSequence),
                         DocumentLayout.changeValue(id: documentID, isDeletion: false, revision: step.record.revision))
            if i < rows.count {
                stageRows(rows[i], of: documentID, key: step.key, indexes: active, observing: observing, into: &batch,
                          touched: &touched)
            }
            changes.append(DocumentChange(id: documentID, isDeletion: false, revision: step.record.revision,
                                          sequence: step.record.changeSequence))
            results.append(step.document)
            if inTransaction {
                var mapped = step.document
                mapped.attachments = [:]
                w.uncommitted[documentID] = (step.record, mapped)
            }
        }
        if converted { w.unconverted = [:] }
        w.nextSequence += UInt64(steps.count)
        commit.changes.append(Changes(databaseID: id, changes: changes, touched: observing ? touched : nil))
        return results
    }

    /// Adds one document's index-row changes to `batch` (a document an index does not hold yet is
    /// left to its build), and the changed keys after each index's prefix to `touched` when
    /// `observing`.
    func stageRows(_ changes: RowChanges, of documentID: String, key: [UInt8], indexes active: [String: ActiveIndex],
                   observing: Bool, into batch: inout WriteBatch, touched: inout [String: [[UInt8]]]) {
        for (indexName, change) in changes {
            guard let index = active[indexName] else { continue }
            if let pending = index.pending, pending.contains(documentID, key: key) { continue }
            var keys: [[UInt8]]? = observing ? [] : nil
            IndexMaintenance.replace(change.old, with: change.new, in: &batch, touched: &keys)
            if let keys, !keys.isEmpty { touched[indexName, default: []] += keys.map { Array($0[index.prefix.count...]) } }
        }
    }

    /// Adds to `batch` the rewrite, as behind at the last committed sequence, of every stored
    /// index that was current when the database was opened and is not attached: the commit being
    /// built does not maintain it. Returns whether there was any (clear them once committed).
    func convertUnattachedIndexes(_ w: WriterState, into batch: inout WriteBatch) -> Bool {
        guard !w.unconverted.isEmpty else { return false }
        for (indexName, stored) in w.unconverted {
            var payload = stored.payload
            if payload.layout == 1 {
                // Its rows may lack `null` keys (FORMAT.md §16.1): rebuilt when next named.
                payload.state = DocumentLayout.indexBuilding
                payload.reflected = 0
            } else {
                payload.state = DocumentLayout.indexBehind
                payload.reflected = w.nextSequence - 1
            }
            Catalog.put(CatalogEntry(id: stored.id, payload: DocumentLayout.indexPayload(payload)), kind: .documentIndex,
                        name: DocumentLayout.indexCatalogName(database: name, index: indexName), into: &batch)
        }
        return true
    }

    /// Deletes document `documentID`: leaves a tombstone (so its revision keeps counting and the
    /// change feed reports the deletion), removes its attachments and index rows. Like ``write``,
    /// the rows are computed before the writer lock is taken.
    func delete(id documentID: String) throws {
        let now = clock()
        let key = DocumentLayout.documentKey(id, documentID)
        func notFound() -> StrataError {
            .notFound(kind: .document, name: documentID, reason: "document \(documentID.debugDescription) in database \(name.debugDescription)")
        }
        func load(_ snapshot: Snapshot, withDocument: Bool) throws -> (DocumentRecord, Document?) {
            guard let value = try snapshot.get(key) else { throw notFound() }
            let (record, document) = try value.withUnsafeBytes { buffer -> (DocumentRecord, Document?) in
                let record = try DocumentRecord(decoding: buffer, documentID: documentID)
                if record.isDeleted || !withDocument { return (record, nil) }
                return (record, try Self.document(id: documentID, record: record, value: buffer))
            }
            guard !record.isDeleted else { throw notFound() }
            return (record, document)
        }
        while true {
            // A document in conflict: another leaf wins after the deletion.
            // (Errors are left to the checked load below: inside a transaction holding the
            // database, it is the lock that must answer.)
            if (try? load(try engine.snapshot(), withDocument: false))?.0.tree?.hasConflicts == true {
                return try deleteInConflict(documentID)
            }
            // Phase 1, no lock: the rows of the stored version (nothing to do without indexes).
            let active = indexes.withLock { $0 }
            var mappedRevision: RevisionID?
            var rows: [String: [IndexRow]] = [:]
            if !active.isEmpty {
                let (record, oldDocument) = try load(try engine.snapshot(), withDocument: true)
                mappedRevision = record.revisionID(documentID: documentID)
                if let oldDocument {
                    for index in active.values { rows[index.name] = try IndexMaintenance.rows(of: oldDocument, index: index) }
                }
            }
            let done = try writer.withLock { w -> Bool in
                guard !w.closed else { throw StrataError.closed }
                let current = indexes.withLock { $0 }
                guard current.mapValues(\.id) == active.mapValues(\.id) else { return false }
                let (record, _) = try load(try engine.snapshot(), withDocument: false)
                if let mappedRevision, record.revisionID(documentID: documentID) != mappedRevision { return false }
                if record.tree?.hasConflicts == true { return false }
                var staged = w
                var batch = CommitBatch()
                try stageDelete(documentID, record: record, rows: rows, indexes: current, now: now, writer: &staged, into: &batch)
                try engine.commit(batch)
                w = staged
                return true
            }
            if done { return }
        }
    }

    /// Adds the deletion of `documentID` (whose stored version is `record`, with index rows
    /// `rows`) to `batch`, and advances `w` as if it committed.
    private func stageDelete(_ documentID: String, record: DocumentRecord, rows: [String: [IndexRow]],
                             indexes current: [String: ActiveIndex], now: Date, writer w: inout WriterState,
                             into commit: inout CommitBatch) throws {
        // The change sequence and the tombstone's revision first: the only steps that can throw,
        // before anything is staged.
        var probe = w.nextSequence
        try CounterLimit.take(from: &probe, "change sequence")
        var tree = record.treeOrLegacy(documentID: documentID)
        let parent = tree.winner.revision
        let digest = RevisionDigest.make(parent: parent, isDeleted: true, body: [], type: nil, channels: [], attachments: [])
        tree.addChild(of: 0, revision: try RevisionDigest.revision(record.revision &+ 1, digest), isDeleted: true)
        tree.settle()
        let key = DocumentLayout.documentKey(id, documentID)
        let observing = broadcaster.wantsChanges(of: engine, kind: .documentDatabase, name: name)
        let sequence = w.nextSequence
        // Moved out and back, not copied: `commit.records` may hold a transaction's earlier writes.
        var batch = WriteBatch()
        swap(&batch, &commit.records)
        defer { swap(&batch, &commit.records) }
        let converted = convertUnattachedIndexes(w, into: &batch)
        for info in record.attachments { batch.deleteRaw(DocumentLayout.attachmentKey(id, documentID, info.name)) }
        if record.changeSequence != 0 { batch.deleteRaw(DocumentLayout.changeKey(id, record.changeSequence)) }
        // Every leaf is a deletion now; the winner may be another one, of a higher generation.
        let tombstone = DocumentRecord(isDeleted: true, revision: tree.winner.revision.generation, changeSequence: sequence,
                                       createDate: record.createDate, lastChange: now, type: nil, channels: [], attachments: [],
                                       tree: tree)
        var tombstoneValue: [UInt8] = []
        tombstone.appendHeader(to: &tombstoneValue)
        batch.putRaw(key, tombstoneValue)
        batch.putRaw(DocumentLayout.changeKey(id, sequence),
                     DocumentLayout.changeValue(id: documentID, isDeletion: true, revision: tombstone.revision))
        var touched: [String: [[UInt8]]] = [:]
        stageRows(rows.mapValues { (old: $0, new: []) }, of: documentID, key: key, indexes: current, observing: observing,
                  into: &batch, touched: &touched)
        if converted { w.unconverted = [:] }
        w.nextSequence = sequence + 1
        if TransactionScope.current != nil { w.uncommitted[documentID] = (tombstone, nil) }
        commit.changes.append(Changes(
            databaseID: id,
            changes: [DocumentChange(id: documentID, isDeletion: true, revision: tombstone.revision, sequence: sequence)],
            touched: observing ? touched : nil))
    }

    // MARK: Transactions

    /// Stages a write of `documents` for the transaction holding the writer lock (whose state is
    /// `w`): resolved against the committed versions and the transaction's own earlier writes,
    /// with the index rows of the attached indexes (their maps run here, while the transaction
    /// holds its collections).
    func stageWrite(_ documents: [Document], mode: WriteMode, writer w: inout WriterState,
                    into batch: inout CommitBatch) throws -> [Document] {
        guard !w.closed else { throw StrataError.closed }
        if documents.isEmpty { return [] }
        let now = clock()
        let (documents, attachments) = try identified(documents)
        let active = indexes.withLock { $0 }
        let (prepared, _) = try steps(documents, attachments: attachments, mode: mode, now: now,
                                      snapshot: try engine.snapshot(), firstSequence: w.nextSequence,
                                      withOldDocuments: !active.isEmpty, pending: w.uncommitted)
        let rows = active.isEmpty ? [] : try rowChanges(of: prepared, indexes: active)
        return stage(prepared, rows: rows, indexes: active, writer: &w, into: &batch)
    }

    /// Stages the deletion of `documentID` for the transaction holding the writer lock.
    func stageDelete(id documentID: String, writer w: inout WriterState, into batch: inout CommitBatch) throws {
        guard !w.closed else { throw StrataError.closed }
        let notFound = StrataError.notFound(kind: .document, name: documentID, reason: "document \(documentID.debugDescription) in database \(name.debugDescription)")
        let active = indexes.withLock { $0 }
        let record: DocumentRecord
        var old: Document?
        if let pending = w.uncommitted[documentID] {
            record = pending.record
            old = pending.document
        } else {
            guard let value = try engine.snapshot().get(DocumentLayout.documentKey(id, documentID)) else { throw notFound }
            (record, old) = try value.withUnsafeBytes { buffer -> (DocumentRecord, Document?) in
                let record = try DocumentRecord(decoding: buffer, documentID: documentID)
                if record.isDeleted || active.isEmpty { return (record, nil) }
                return (record, try Self.document(id: documentID, record: record, value: buffer))
            }
        }
        guard !record.isDeleted else { throw notFound }
        if let tree = record.tree, tree.hasConflicts {
            guard w.uncommitted[documentID] == nil else {
                throw StrataError.invalidArgument(argument: "id", reason: "document \(documentID.debugDescription) is in conflict and was written earlier in "
                                                  + "this transaction: delete it in a transaction of its own")
            }
            let snapshot = try engine.snapshot()
            let tombstone = LeafRevision.tombstone(revision: record.revision &+ 1, createDate: record.createDate, lastChange: clock())
            let plans = try planRevisions([try child(of: 0, in: tree, documentID: documentID, content: tombstone)], snapshot: snapshot)
            try stage(plans, rows: try rowChanges(of: plans, indexes: active), indexes: active, isExternal: false, writer: &w, into: &batch)
            return
        }
        var rows: [String: [IndexRow]] = [:]
        if let old {
            for index in active.values { rows[index.name] = try IndexMaintenance.rows(of: old, index: index) }
        }
        try stageDelete(documentID, record: record, rows: rows, indexes: active, now: clock(), writer: &w, into: &batch)
    }
}
