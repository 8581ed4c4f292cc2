import Foundation
import StrataFormat
import StrataFiles
import StrataEngine

extension DocumentDatabase {
    // MARK: Conflicts

    /// The losing revisions of a document in conflict (not deletions), each with its
    /// ``DocumentMetadata/revisionID``; empty when the document has no conflict or does not exist.
    ///
    /// Replication keeps concurrent changes of a document made on two replicas as conflicting
    /// revisions, never a lost write: ``document(id:)`` returns the winner, the same on every
    /// replica (CouchDB's rule: a revision that is not a deletion before one that is, then the
    /// higher generation, then the greater digest), and this returns the others.
    ///
    /// ```swift
    /// if let current = try db.document(id: "invoice-1"), case let others = try db.conflicts(id: "invoice-1"), !others.isEmpty {
    ///     var merged = current
    ///     merged["TotalCost"] = .int(others.compactMap { $0["TotalCost"]?.int64Value }.max() ?? 0)
    ///     try db.resolveConflict(id: "invoice-1", with: merged)
    /// }
    /// ```
    ///
    /// Needs ``Permission/readTopic`` in a session.
    public func conflicts(id: String) throws -> [Document] {
        try access?.require(.readTopic, state.name)
        return try state.conflicts(of: id)
    }

    /// Ends a document's conflicts in one atomic batch: `document`'s fields, metadata (`type`,
    /// `channels`) and attachments become a new revision on the winner's branch, and every other
    /// leaf gets a deletion, so that every replica this replicates to sees the same resolution.
    ///
    /// Needs ``Permission/updateTopic`` in a session.
    ///
    /// - Returns: the document as stored.
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if no document has the id.
    @discardableResult
    public func resolveConflict(id: String, with document: Document) throws -> Document {
        try access?.require(.updateTopic, state.name)
        return try state.resolveConflict(id, with: document)
    }

    // MARK: Replication (package API; the replicator, Sources/Strata/Replication, is its user)

    /// Change-feed entries after `since`, at most `limit`, each with the document's leaf revisions.
    package func revisionChanges(since: UInt64, limit: Int) throws -> [RevisionChange] {
        let (changes, _) = try state.changes(since: since, limit: limit)
        let snapshot = try state.engine.snapshot()
        var out: [RevisionChange] = []
        out.reserveCapacity(changes.count)
        for change in changes {
            guard let record = try state.record(change.id, snapshot: snapshot) else { continue }
            let tree = record.treeOrLegacy(documentID: change.id)
            out.append(RevisionChange(sequence: change.sequence, documentID: change.id,
                                      leaves: tree.leaves.map { tree.nodes[$0].revision }, isDeletion: record.isDeleted))
        }
        return out
    }

    /// Of `revisions` (document id → revision ids), those this database does not hold.
    /// Documents with nothing missing are left out.
    package func missingRevisions(_ revisions: [String: [RevisionID]]) throws -> [String: [RevisionID]] {
        let snapshot = try state.engine.snapshot()
        var out: [String: [RevisionID]] = [:]
        for (documentID, wanted) in revisions {
            let tree = try state.record(documentID, snapshot: snapshot)?.treeOrLegacy(documentID: documentID)
            let missing = wanted.filter { tree?.index(of: $0) == nil }
            if !missing.isEmpty { out[documentID] = missing }
        }
        return out
    }

    /// The leaf revision `revision` of document `id` with at most `historyLimit` digests of
    /// history, or nil when this database holds no such leaf.
    package func replicatedRevision(id: String, revision: RevisionID, historyLimit: Int) throws -> ReplicatedRevision? {
        try state.replicatedRevision(id, revision: revision, historyLimit: historyLimit)
    }

    /// Inserts revisions made elsewhere into their documents' revision trees (CouchDB's
    /// `new_edits: false`), all in ONE atomic commit: revisions already held are skipped, conflicting
    /// branches are kept, each document's winner is recomputed, and every change is reported with
    /// ``DocumentChange/isExternal`` true. Index rows follow the winners.
    package func insertReplicatedRevisions(_ revisions: [ReplicatedRevision]) throws {
        try state.insertReplicated(revisions)
    }

    /// The local document `id` (replication checkpoints: never in the change feed, never
    /// replicated), or nil.
    package func localDocument(id: String) throws -> JSON? {
        try state.localDocument(id)
    }

    /// Writes (or with nil, removes) the local document `id`; committed when it returns.
    package func putLocalDocument(id: String, _ body: JSON?) throws {
        try state.putLocalDocument(id, body)
    }
}

extension DatabaseState {
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
