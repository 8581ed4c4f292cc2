import Foundation

// What replication needs from a database (package API; the replicator, Sources/Strata/Replication,
// is its only user). Every method is thread-safe and reads or writes through the engine.
extension DocumentDatabase {
    /// Change-feed entries after `since`, at most `limit`, each with the document's leaf revisions.
    package func revisionChanges(since: UInt64, limit: Int) throws -> [RevisionChange] {
        throw StrataError.invalidArgument("revisionChanges: not implemented yet")
    }

    /// Of `revisions` (document id → revision ids), those this database does not hold.
    /// Documents with nothing missing are left out.
    package func missingRevisions(_ revisions: [String: [RevisionID]]) throws -> [String: [RevisionID]] {
        throw StrataError.invalidArgument("missingRevisions: not implemented yet")
    }

    /// The leaf revision `revision` of document `id` with at most `historyLimit` digests of
    /// history, or nil when this database holds no such leaf.
    package func replicatedRevision(id: String, revision: RevisionID, historyLimit: Int) throws -> ReplicatedRevision? {
        throw StrataError.invalidArgument("replicatedRevision: not implemented yet")
    }

    /// Inserts revisions made elsewhere into their documents' revision trees (CouchDB's
    /// `new_edits: false`), all in ONE atomic commit: revisions already held are skipped, conflicting
    /// branches are kept, each document's winner is recomputed, and every change is reported with
    /// ``DocumentChange/isExternal`` true. Index rows follow the winners.
    package func insertReplicatedRevisions(_ revisions: [ReplicatedRevision]) throws {
        throw StrataError.invalidArgument("insertReplicatedRevisions: not implemented yet")
    }

    /// The local document `id` (replication checkpoints: never in the change feed, never
    /// replicated), or nil.
    package func localDocument(id: String) throws -> JSON? {
        throw StrataError.invalidArgument("localDocument: not implemented yet")
    }

    /// Writes (or with nil, removes) the local document `id`, durably before returning.
    package func putLocalDocument(id: String, _ body: JSON?) throws {
        throw StrataError.invalidArgument("putLocalDocument: not implemented yet")
    }
}
