import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The writes of one document database that make a revision a child of the winner: saves (of
/// every ``WriteMode``) and deletions, on their own or staged in a transaction, and local
/// documents. Revisions that change the tree otherwise are ``RevisionWriter``'s.
///
/// Invariants (see ``DatabaseState``): writes are ordered by the database's writer lock, and no
/// application code (maps, the id factory, the clock) runs under it.
struct DocumentWriter: Sendable {
    let name: String
    let id: UInt64
    let engine: Engine
    let broadcaster: CommitBroadcaster
    let idFactory: @Sendable () -> String
    let clock: @Sendable () -> Date
    let writer: CollectionLock<DatabaseState.WriterState>
    let indexes: DatabaseIndexes
    let staging: IndexStaging
    let revisions: RevisionWriter

    enum WriteMode {
        case save, add, update
        /// A save that must replace the stored revision the document carries
        /// (``ConcurrencyControl/failOnConflict``).
        case saveIfCurrent
    }

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
        latest.reserveCapacity(pending.count + documents.count)
        var revisions: [String: String] = [:]
        revisions.reserveCapacity(documents.count)
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
                    let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
                    let live = record.isDeleted || !withOldDocuments
                        ? nil : try DocumentReader.document(id: documentID, record: record, value: value)
                    old = (record, live)
                }
                revisions[documentID] = old.map { $0.record.revisionID(documentID: documentID).description } ?? ""
            }
            let exists = old.map { !$0.record.isDeleted } ?? false
            switch mode {
            case .save: break
            case .saveIfCurrent:
                let stored = old.flatMap { $0.record.isDeleted ? nil : $0.record.revisionID(documentID: documentID) }
                if document.metadata.revisionID != stored {
                    let given = document.metadata.revisionID.map { "revision \($0)" } ?? "no revision"
                    let now = stored?.description ?? "none (absent or deleted)"
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
            body.reserveCapacity(128)
            document.appendBody(to: &body)
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
    private func rowChanges(of steps: [Step], indexes: [String: ActiveIndex]) throws -> [IndexStaging.RowChanges] {
        var rows: [IndexStaging.RowChanges] = []
        rows.reserveCapacity(steps.count)
        for step in steps {
            var mapped = step.document
            mapped.attachments = [:]
            var changes: IndexStaging.RowChanges = [:]
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
            var rows: [IndexStaging.RowChanges] = []
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
    private func commit(_ steps: [Step], rows: [IndexStaging.RowChanges], indexes active: [String: ActiveIndex],
                        writer w: inout DatabaseState.WriterState) throws -> [Document] {
        var staged = w
        var batch = CommitBatch()
        let results = stage(steps, rows: rows, indexes: active, writer: &staged, into: &batch)
        try engine.commit(batch)
        w = staged
        return results
    }

    /// Adds the records of checked steps, with their rows, to `batch`, and advances `w` as if they
    /// committed.
    private func stage(_ steps: [Step], rows: [IndexStaging.RowChanges], indexes active: [String: ActiveIndex],
                       writer w: inout DatabaseState.WriterState, into commit: inout CommitBatch) -> [Document] {
        let observing = broadcaster.wantsChanges(of: engine, kind: .documentDatabase, name: name)
        let inTransaction = TransactionScope.current != nil
        // Moved out and back, not copied: `commit.records` may hold a transaction's earlier writes.
        var batch = WriteBatch()
        swap(&batch, &commit.records)
        defer { swap(&batch, &commit.records) }
        let converted = staging.convertUnattachedIndexes(w, into: &batch)
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
                staging.stageRows(rows[i], of: documentID, key: step.key, indexes: active, observing: observing, into: &batch,
                          touched: &touched)
            }
            changes.append(DocumentChange(id: documentID, isDeletion: false, revisionID: step.record.revisionID(documentID: documentID),
                                          sequence: step.record.changeSequence))
            results.append(step.document)
            if inTransaction {
                var mapped = step.document
                mapped.attachments = [:]
                w.uncommitted[documentID] = (step.record, mapped)
                w.visible[documentID] = .some(step.document)
            }
        }
        if converted { w.unconverted = [:] }
        w.nextSequence += UInt64(steps.count)
        commit.changes.append(DatabaseState.Changes(databaseID: id, changes: changes, touched: observing ? touched : nil))
        return results
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
            let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
            let document = record.isDeleted || !withDocument ? nil : try DocumentReader.document(id: documentID, record: record, value: value)
            guard !record.isDeleted else { throw notFound() }
            return (record, document)
        }
        while true {
            // A document in conflict: another leaf wins after the deletion.
            // (Errors are left to the checked load below: inside a transaction holding the
            // database, it is the lock that must answer.)
            if (try? load(try engine.snapshot(), withDocument: false))?.0.tree?.hasConflicts == true {
                return try revisions.deleteInConflict(documentID)
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
                             indexes current: [String: ActiveIndex], now: Date, writer w: inout DatabaseState.WriterState,
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
        let converted = staging.convertUnattachedIndexes(w, into: &batch)
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
        staging.stageRows(rows.mapValues { (old: $0, new: []) }, of: documentID, key: key, indexes: current, observing: observing,
                  into: &batch, touched: &touched)
        if converted { w.unconverted = [:] }
        w.nextSequence = sequence + 1
        if TransactionScope.current != nil {
            w.uncommitted[documentID] = (tombstone, nil)
            w.visible[documentID] = .some(nil)
        }
        commit.changes.append(DatabaseState.Changes(
            databaseID: id,
            changes: [DocumentChange(id: documentID, isDeletion: true, revisionID: tree.winner.revision, sequence: sequence)],
            touched: observing ? touched : nil))
    }

    // MARK: Transactions

    /// Stages a write of `documents` for the transaction holding the writer lock (whose state is
    /// `w`): resolved against the committed versions and the transaction's own earlier writes,
    /// with the index rows of the attached indexes (their maps run here, while the transaction
    /// holds its collections).
    func stageWrite(_ documents: [Document], mode: WriteMode, writer w: inout DatabaseState.WriterState,
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
    func stageDelete(id documentID: String, writer w: inout DatabaseState.WriterState, into batch: inout CommitBatch) throws {
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
            record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
            if !record.isDeleted && !active.isEmpty { old = try DocumentReader.document(id: documentID, record: record, value: value) }
        }
        guard !record.isDeleted else { throw notFound }
        if let tree = record.tree, tree.hasConflicts {
            guard w.uncommitted[documentID] == nil else {
                throw StrataError.invalidArgument(argument: "id", reason: "document \(documentID.debugDescription) is in conflict and was written earlier in "
                                                  + "this transaction: delete it in a transaction of its own")
            }
            let snapshot = try engine.snapshot()
            let tombstone = LeafRevision.tombstone(revision: record.revision &+ 1, createDate: record.createDate, lastChange: clock())
            let deletion = try revisions.child(of: 0, in: tree, documentID: documentID, content: tombstone)
            let plans = try revisions.planRevisions([deletion], snapshot: snapshot)
            try revisions.stage(plans, rows: try revisions.rowChanges(of: plans, indexes: active), indexes: active, isExternal: false,
                                writer: &w, into: &batch)
            return
        }
        var rows: [String: [IndexRow]] = [:]
        if let old {
            for index in active.values { rows[index.name] = try IndexMaintenance.rows(of: old, index: index) }
        }
        try stageDelete(documentID, record: record, rows: rows, indexes: active, now: clock(), writer: &w, into: &batch)
    }

    // MARK: Local documents

    /// Writes (or with nil, removes) the local document `localID`.
    func putLocalDocument(_ localID: String, _ body: JSON?) throws {
        guard !localID.isEmpty else { throw StrataError.invalidArgument(argument: "id", reason: "a local document id must not be empty") }
        var batch = CommitBatch()
        if let body {
            var value: [UInt8] = []
            body.appendBinary(to: &value)
            batch.records.putRaw(DocumentLayout.localKey(id, localID), value)
        } else {
            batch.records.deleteRaw(DocumentLayout.localKey(id, localID))
        }
        try writer.withLock { w in
            guard !w.closed else { throw StrataError.closed }
            try engine.commit(batch)
        }
    }
}
