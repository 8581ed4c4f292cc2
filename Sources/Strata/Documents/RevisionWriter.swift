import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Writes that change a document's revision tree beyond "a child of the winner": revisions from
/// other replicas, conflict resolution, and deleting a document in conflict (whose winner then
/// becomes another leaf). Same two phases as `write`: plan and map without the writer lock, then
/// check under it that every planned document's stored record is byte for byte the one planned
/// from, and commit; else plan again.
///
/// Also the reads that check a tree against its conflicting-revision entries.
struct RevisionWriter: Sendable {
    let name: String
    let id: UInt64
    let engine: Engine
    let broadcaster: CommitBroadcaster
    let clock: @Sendable () -> Date
    let writer: CollectionLock<DatabaseState.WriterState>
    let indexes: DatabaseIndexes
    let staging: IndexStaging
    let reader: DocumentReader

    /// One document's new revision tree and what must be written for it.
    struct RevisionPlan {
        var documentID: String
        var key: [UInt8]
        /// The stored record planned from (nil: none); the commit checks it is still the stored one.
        var oldValue: [UInt8]?
        var old: DocumentRecord?
        /// The new record; its change sequence is set when staged.
        var record: DocumentRecord
        var body: [UInt8]
        /// The winner's attachments when the winner changed (written to keyspace 7); nil when the
        /// winner stays and so do its attachments.
        var winnerAttachments: [String: Attachment]?
        var conflictPuts: [(RevisionID, [UInt8])] = []
        var conflictDeletes: [RevisionID] = []
        /// The old and new winners as live documents, when the winner changed (for index rows).
        var oldDocument: Document?
        var newDocument: Document?
        var winnerChanged: Bool
    }

    /// Plans the insertion of `revisions` (grouped by document, in order of first appearance)
    /// against `snapshot`. Revisions already held are skipped; documents with nothing new get no
    /// plan.
    func planRevisions(_ revisions: [ReplicatedRevision], snapshot: Snapshot) throws -> [RevisionPlan] {
        var order: [String] = []
        var byDocument: [String: [ReplicatedRevision]] = [:]
        for r in revisions {
            guard !r.documentID.isEmpty else { throw StrataError.invalidArgument(argument: "revisions", reason: "a replicated revision has an empty document id") }
            guard r.history.first == r.revisionID.digest else {
                throw StrataError.invalidArgument(argument: "revisions", reason: "revision \(r.revisionID) of document \(r.documentID.debugDescription): "
                                                  + "its history does not start with its own digest")
            }
            if byDocument[r.documentID] == nil { order.append(r.documentID) }
            byDocument[r.documentID, default: []].append(r)
        }
        var plans: [RevisionPlan] = []
        for documentID in order {
            let key = DocumentLayout.documentKey(id, documentID)
            let oldValue = try snapshot.get(key)
            let old = try oldValue.map { v in try v.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) } }
            let oldTree = old?.treeOrLegacy(documentID: documentID)
            var tree = oldTree ?? RevisionTree(nodes: [])
            var incoming: [RevisionID: ReplicatedRevision] = [:]
            for r in byDocument[documentID] ?? [] where tree.graft(r.revisionID, history: r.history, isDeleted: r.isDeleted) != nil {
                incoming[r.revisionID] = r
            }
            guard !incoming.isEmpty else { continue }
            tree.settle()
            plans.append(try plan(documentID, key: key, oldValue: oldValue, old: old, oldTree: oldTree, tree: tree,
                                  contents: incoming.mapValues { LeafRevision($0) }, snapshot: snapshot))
        }
        return plans
    }

    /// The plan that stores `tree` (settled) for `documentID`, whose stored record is `old` with
    /// tree `oldTree`; `contents` are the new leaves' contents.
    func plan(_ documentID: String, key: [UInt8], oldValue: [UInt8]?, old: DocumentRecord?, oldTree: RevisionTree?,
              tree: RevisionTree, contents: [RevisionID: LeafRevision], snapshot: Snapshot) throws -> RevisionPlan {
        try checkConflictEntries(of: documentID, tree: oldTree, snapshot: snapshot)
        let winner = tree.winner
        let oldWinner = oldTree?.winner
        let winnerChanged = oldWinner?.revision != winner.revision
        var oldWinnerContent: LeafRevision?
        func oldWinnerLeaf() throws -> LeafRevision {
            if let oldWinnerContent { return oldWinnerContent }
            guard let oldValue else { throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0, reason: "no record") }
            let content = try LeafRevision.winner(of: documentID, database: id, value: oldValue, snapshot: snapshot)
            oldWinnerContent = content
            return content
        }
        func stored(_ revision: RevisionID) throws -> LeafRevision {
            guard let value = try snapshot.get(DocumentLayout.conflictKey(id, documentID, revision)) else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                            reason: "conflicting revision \(revision) is in the tree but not stored")
            }
            return try LeafRevision(decoding: value, documentID: documentID, revision: revision)
        }
        // The winner's contents.
        let content: LeafRevision
        if !winnerChanged, let oldValue, let old {
            // The record is rewritten with its body; its attachments stay in keyspace 7 untouched.
            var plain = old
            plain.tree = nil
            plain.changeSequence = 0
            content = LeafRevision(record: plain, body: Array(oldValue[old.bodyOffset...]), attachments: [:])
        } else if let new = contents[winner.revision] {
            content = new
        } else if winner.isDeleted {
            content = .tombstone(revision: winner.revision.generation, createDate: old?.createDate ?? Date(timeIntervalSinceReferenceDate: 0),
                                 lastChange: old?.lastChange ?? Date(timeIntervalSinceReferenceDate: 0))
        } else {
            content = try stored(winner.revision)
        }
        // Losing leaves that are not deletions live in keyspace 12.
        func losers(_ t: RevisionTree?) -> Set<RevisionID> {
            guard let t else { return [] }
            return Set(t.nodes.dropFirst().filter { $0.isLeaf && !$0.isDeleted }.map(\.revision))
        }
        let before = losers(oldTree), after = losers(tree)
        var plan = RevisionPlan(documentID: documentID, key: key, oldValue: oldValue, old: old, record: content.record,
                                body: content.body, winnerAttachments: winnerChanged ? content.attachments : nil,
                                winnerChanged: winnerChanged)
        plan.conflictDeletes = before.subtracting(after).sorted()
        for revision in after.subtracting(before).sorted() {
            if let new = contents[revision] {
                plan.conflictPuts.append((revision, new.encoded()))
            } else if revision == oldWinner?.revision {
                plan.conflictPuts.append((revision, try oldWinnerLeaf().encoded()))
            }
        }
        var record = content.record
        record.isDeleted = winner.isDeleted
        record.revision = winner.revision.generation
        record.tree = tree
        record.changeSequence = 0
        if winner.isDeleted {
            record.type = nil
            record.channels = []
            record.attachments = []
            plan.body = []
        }
        plan.record = record
        if winnerChanged {
            if let old, !old.isDeleted { plan.oldDocument = try oldWinnerLeaf().document(id: documentID, revision: oldWinner?.revision ?? winner.revision) }
            plan.newDocument = try content.document(id: documentID, revision: winner.revision)
            plan.newDocument?.metadata = record.metadata(id: documentID)
        }
        return plan
    }

    /// The rows each plan removes and adds (maps run here: call without the writer lock).
    func rowChanges(of plans: [RevisionPlan], indexes: [String: ActiveIndex]) throws -> [IndexStaging.RowChanges] {
        try plans.map { plan in
            var changes: IndexStaging.RowChanges = [:]
            guard plan.winnerChanged, !indexes.isEmpty else { return changes }
            var newDocument = plan.newDocument
            newDocument?.attachments = [:]
            var oldDocument = plan.oldDocument
            oldDocument?.attachments = [:]
            for index in indexes.values {
                changes[index.name] = (try oldDocument.map { try IndexMaintenance.rows(of: $0, index: index) } ?? [],
                                       try newDocument.map { try IndexMaintenance.rows(of: $0, index: index) } ?? [])
            }
            return changes
        }
    }

    /// Commits `plans` with their `rows` as one batch once their stored records are checked;
    /// returns false (nothing written) when one changed or the attached indexes did since they
    /// were planned.
    func commit(_ plans: [RevisionPlan], rows: [IndexStaging.RowChanges], indexes active: [String: ActiveIndex], isExternal: Bool) throws -> Bool {
        try writer.withLock { w -> Bool in
            guard !w.closed else { throw StrataError.closed }
            let current = indexes.withLock { $0 }
            guard current.mapValues(\.id) == active.mapValues(\.id) else { return false }
            let snapshot = try engine.snapshot()
            for plan in plans where try snapshot.get(plan.key) != plan.oldValue { return false }
            var staged = w
            var batch = CommitBatch()
            try stage(plans, rows: rows, indexes: current, isExternal: isExternal, writer: &staged, into: &batch)
            try engine.commit(batch)
            w = staged
            return true
        }
    }

    /// Adds the records of checked plans to `commit`, and advances `w` as if they committed.
    func stage(_ plans: [RevisionPlan], rows: [IndexStaging.RowChanges], indexes active: [String: ActiveIndex], isExternal: Bool,
               writer w: inout DatabaseState.WriterState, into commit: inout CommitBatch) throws {
        // One change sequence per plan, refused before anything is staged past the limit.
        var probe = w.nextSequence
        try CounterLimit.take(UInt64(plans.count), from: &probe, "change sequence")
        let observing = broadcaster.wantsChanges(of: engine, kind: .documentDatabase, name: name)
        var batch = WriteBatch()
        swap(&batch, &commit.records)
        defer { swap(&batch, &commit.records) }
        let converted = staging.convertUnattachedIndexes(w, into: &batch)
        var changes: [DocumentChange] = []
        var touched: [String: [[UInt8]]] = [:]
        for (i, plan) in plans.enumerated() {
            let sequence = w.nextSequence + UInt64(i)
            let documentID = plan.documentID
            var record = plan.record
            record.changeSequence = sequence
            if let old = plan.old, old.changeSequence != 0 { batch.deleteRaw(DocumentLayout.changeKey(id, old.changeSequence)) }
            if let attachments = plan.winnerAttachments {
                for info in plan.old?.attachments ?? [] where attachments[info.name] == nil || record.isDeleted {
                    batch.deleteRaw(DocumentLayout.attachmentKey(id, documentID, info.name))
                }
                for info in record.attachments {
                    if let a = attachments[info.name] { batch.putRaw(DocumentLayout.attachmentKey(id, documentID, info.name), Array(a.data)) }
                }
            }
            var value: [UInt8] = []
            value.reserveCapacity(96 + plan.body.count)
            record.appendHeader(to: &value)
            value.append(contentsOf: plan.body)
            batch.putRaw(plan.key, value)
            for revision in plan.conflictDeletes { batch.deleteRaw(DocumentLayout.conflictKey(id, documentID, revision)) }
            for (revision, content) in plan.conflictPuts { batch.putRaw(DocumentLayout.conflictKey(id, documentID, revision), content) }
            batch.putRaw(DocumentLayout.changeKey(id, sequence),
                         DocumentLayout.changeValue(id: documentID, isDeletion: record.isDeleted, revision: record.revision,
                                                    isExternal: isExternal))
            if i < rows.count {
                staging.stageRows(rows[i], of: documentID, key: plan.key, indexes: active, observing: observing, into: &batch,
                          touched: &touched)
            }
            changes.append(DocumentChange(id: documentID, isDeletion: record.isDeleted, revisionID: record.revisionID(documentID: documentID),
                                          sequence: sequence, isExternal: isExternal))
            if TransactionScope.current != nil {
                var mapped = plan.newDocument
                mapped?.attachments = [:]
                w.uncommitted[documentID] = (record, plan.winnerChanged ? mapped : nil)
                if plan.winnerChanged {
                    w.visible[documentID] = .some(record.isDeleted ? nil : plan.newDocument)
                } else {
                    // The winner stays: a read finds the stored one.
                    w.visible[documentID] = nil
                }
                if plan.winnerChanged {
                    w.visible[documentID] = .some(record.isDeleted ? nil : plan.newDocument)
                } else {
                    // The winner stays: a read finds the stored one.
                    w.visible[documentID] = nil
                }
            }
        }
        if converted { w.unconverted = [:] }
        w.nextSequence += UInt64(plans.count)
        commit.changes.append(DatabaseState.Changes(databaseID: id, changes: changes, touched: observing ? touched : nil))
    }

    /// Plans with `make` from a fresh snapshot, maps, and commits, until the commit's check passes.
    func commitPlans(isExternal: Bool, _ make: (Snapshot) throws -> [RevisionPlan]) throws -> [RevisionPlan] {
        while true {
            let active = indexes.withLock { $0 }
            try writer.withLock { w in if w.closed { throw StrataError.closed } }
            let plans = try make(try engine.snapshot())
            if plans.isEmpty { return [] }
            let rows = try rowChanges(of: plans, indexes: active)
            if try commit(plans, rows: rows, indexes: active, isExternal: isExternal) { return plans }
        }
    }

    // MARK: Operations

    func insertReplicated(_ revisions: [ReplicatedRevision]) throws {
        if revisions.isEmpty { return }
        _ = try commitPlans(isExternal: true) { try planRevisions(revisions, snapshot: $0) }
    }

    /// The new revision of `documentID` that is a child of leaf `parent` of `tree` with contents
    /// `content` (a deletion when `content` is a tombstone).
    func child(of parent: Int, in tree: RevisionTree, documentID: String, content: LeafRevision) throws -> ReplicatedRevision {
        let parentRevision = tree.nodes[parent].revision
        let digest = RevisionDigest.make(parent: parentRevision, isDeleted: content.record.isDeleted, body: content.body,
                                         type: content.record.type, channels: content.record.channels,
                                         attachments: content.record.attachments)
        let revision = try RevisionDigest.revision(parentRevision.generation &+ 1, digest)
        var fields: [String: JSON] = [:]
        if !content.record.isDeleted, case .object(let f) = try content.body.withUnsafeBytes({ try JSON(binary: $0) }) { fields = f }
        return ReplicatedRevision(documentID: documentID, revisionID: revision,
                                  history: [digest] + tree.history(of: parent, limit: 1), isDeleted: content.record.isDeleted,
                                  fields: fields, type: content.record.type, channels: content.record.channels,
                                  createDate: content.record.createDate, lastChange: content.record.lastChange,
                                  attachments: content.attachments)
    }

    /// Deletes `documentID` whose tree has other leaves that are not deletions: a tombstone on the
    /// winner's branch, after which another leaf wins (CouchDB's rule).
    func deleteInConflict(_ documentID: String) throws {
        let now = clock()
        _ = try commitPlans(isExternal: false) { snapshot in
            guard let value = try snapshot.get(DocumentLayout.documentKey(id, documentID)) else { return [] }
            let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
            guard !record.isDeleted else {
                throw StrataError.notFound(kind: .document, name: documentID, reason: "document \(documentID.debugDescription) in database \(name.debugDescription)")
            }
            let tree = record.treeOrLegacy(documentID: documentID)
            let tombstone = LeafRevision.tombstone(revision: record.revision &+ 1, createDate: record.createDate, lastChange: now)
            return try planRevisions([try child(of: 0, in: tree, documentID: documentID, content: tombstone)], snapshot: snapshot)
        }
    }

    /// Ends the conflicts of `documentID`: `document` becomes a new revision on the winner's branch
    /// and every other leaf that is not a deletion gets a deletion, in one batch.
    func resolveConflict(_ documentID: String, with document: Document) throws -> Document {
        let now = clock()
        let plans = try commitPlans(isExternal: false) { snapshot in
            guard let value = try snapshot.get(DocumentLayout.documentKey(id, documentID)) else {
                throw StrataError.notFound(kind: .document, name: documentID, reason: "document \(documentID.debugDescription) in database \(name.debugDescription)")
            }
            let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
            let tree = record.treeOrLegacy(documentID: documentID)
            var resolved = document
            resolved.metadata.id = documentID
            var content = LeafRevision(ReplicatedRevision(
                documentID: documentID, revisionID: tree.winner.revision, history: [tree.winner.revision.digest], isDeleted: false,
                fields: resolved.fields, type: resolved.metadata.type, channels: resolved.metadata.channels,
                createDate: record.isDeleted ? now : record.createDate, lastChange: now, attachments: resolved.attachments))
            content.record.revision = tree.winner.revision.generation &+ 1
            var revisions = [try child(of: 0, in: tree, documentID: documentID, content: content)]
            for i in tree.nodes.indices.dropFirst() where tree.nodes[i].isLeaf && !tree.nodes[i].isDeleted {
                let tombstone = LeafRevision.tombstone(revision: tree.nodes[i].revision.generation &+ 1, createDate: record.createDate,
                                                       lastChange: now)
                revisions.append(try child(of: i, in: tree, documentID: documentID, content: tombstone))
            }
            return try planRevisions(revisions, snapshot: snapshot)
        }
        let stored = plans.first?.newDocument == nil ? try reader.document(id: documentID) : nil
        guard let plan = plans.first, var result = plan.newDocument ?? stored else {
            throw StrataError.notFound(kind: .document, name: documentID, reason: "document \(documentID.debugDescription) in database \(name.debugDescription)")
        }
        result.metadata.revisionID = plan.record.revisionID(documentID: documentID)
        return result
    }

    /// The losing leaves of `documentID` that are not deletions, as documents.
    func conflicts(of documentID: String) throws -> [Document] {
        let snapshot = try engine.snapshot()
        guard let value = try snapshot.get(DocumentLayout.documentKey(id, documentID)) else { return [] }
        let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
        try checkConflictEntries(of: documentID, tree: record.tree, snapshot: snapshot)
        guard let tree = record.tree else { return [] }
        var out: [Document] = []
        for node in tree.nodes.dropFirst() where node.isLeaf && !node.isDeleted {
            guard let stored = try snapshot.get(DocumentLayout.conflictKey(id, documentID, node.revision)) else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                            reason: "conflicting revision \(node.revision) is in the tree but not stored")
            }
            if let d = try LeafRevision(decoding: stored, documentID: documentID, revision: node.revision)
                .document(id: documentID, revision: node.revision) {
                out.append(d)
            }
        }
        return out
    }

    // MARK: Conflicting-revision entries

    /// Checks that the conflicting-revision entries `(12, id, documentID, …)` are exactly for
    /// losing leaves of `tree` that are not deletions (FORMAT.md 16.6: "one entry per leaf … and
    /// none other"). A missing entry is found where its contents are read; this finds the entries
    /// no leaf names, which readers — who get entries by the tree's revisions — would otherwise
    /// skip without a word. One scan of the document's entries (none, for a document without
    /// conflicts). Throws a corruption naming the document and the revision.
    func checkConflictEntries(of documentID: String, tree: RevisionTree?, snapshot: Snapshot) throws {
        try Self.checkConflictEntries(database: id, of: documentID, tree: tree, snapshot: snapshot)
    }

    /// ``checkConflictEntries(of:tree:snapshot:)`` for database `id` (also `strata-dump verify`'s).
    static func checkConflictEntries(database id: UInt64, of documentID: String, tree: RevisionTree?, snapshot: Snapshot) throws {
        let prefix = DocumentLayout.conflictPrefix(id, documentID)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[prefix.count...])
            let text = try? d.nextString()
            let revision = text.flatMap { d.isAtEnd ? RevisionID($0) : nil }
            let losing = revision.flatMap { r in tree?.index(of: r) }.map { i in
                i > 0 && tree!.nodes[i].isLeaf && !tree!.nodes[i].isDeleted
            } ?? false
            guard losing else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                            reason: "conflicting-revision entry \(text.map { $0.debugDescription } ?? TupleKey.describe(key)) is not a losing leaf of the document's tree")
            }
        }
    }
}
