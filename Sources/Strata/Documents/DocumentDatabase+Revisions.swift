import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
        return try state.revisions.conflicts(of: id)
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
        return try state.revisions.resolveConflict(id, with: document)
    }

    // MARK: Replication (package API; the replicator, Sources/Strata/Replication, is its user)

    /// Change-feed entries after `since`, at most `limit`, each with the document's leaf revisions.
    package func revisionChanges(since: UInt64, limit: Int) throws -> [RevisionChange] {
        let (changes, _, snapshot) = try state.reader.feed(since: since, limit: limit)
        var out: [RevisionChange] = []
        out.reserveCapacity(changes.count)
        for change in changes {
            guard let record = try state.reader.record(change.id, snapshot: snapshot) else { continue }
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
            let tree = try state.reader.record(documentID, snapshot: snapshot)?.treeOrLegacy(documentID: documentID)
            let missing = wanted.filter { tree?.index(of: $0) == nil }
            if !missing.isEmpty { out[documentID] = missing }
        }
        return out
    }

    /// The leaf revision `revision` of document `id` with at most `historyLimit` digests of
    /// history, or nil when this database holds no such leaf.
    package func replicatedRevision(id: String, revision: RevisionID, historyLimit: Int) throws -> ReplicatedRevision? {
        try state.reader.replicatedRevision(id, revision: revision, historyLimit: historyLimit)
    }

    /// Inserts revisions made elsewhere into their documents' revision trees (CouchDB's
    /// `new_edits: false`), all in ONE atomic commit: revisions already held are skipped, conflicting
    /// branches are kept, each document's winner is recomputed, and every change is reported with
    /// ``DocumentChange/isExternal`` true. Index rows follow the winners.
    package func insertReplicatedRevisions(_ revisions: [ReplicatedRevision]) throws {
        try state.revisions.insertReplicated(revisions)
    }

    /// The local document `id` (replication checkpoints: never in the change feed, never
    /// replicated), or nil.
    package func localDocument(id: String) throws -> JSON? {
        try state.reader.localDocument(id)
    }

    /// Writes (or with nil, removes) the local document `id`; committed when it returns.
    package func putLocalDocument(id: String, _ body: JSON?) throws {
        try state.writes.putLocalDocument(id, body)
    }
}
