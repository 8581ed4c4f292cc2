@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// What a commit changed, as the collection that made it describes it: the events of a series,
/// the messages of a channel, the documents of a database. Participants read these before the
/// commit (and may add records for them); observers read them after it, in commit order.
///
/// The engine never looks inside a change: each collection (and each feature built on the
/// commit path) defines its own conforming types and recognises its own.
package protocol CommitChange: Sendable {}

/// A committed batch, as observers see it: its sequence number and its logical changes.
package struct Commit: Sendable {
    /// The commit's sequence number (``Engine/write(_:durability:)`` returns it): a snapshot
    /// whose sequence is at least this sees the whole batch, one below it none of it.
    package let sequence: UInt64
    /// The logical changes of the batch, in the order they were added.
    package let changes: [any CommitChange]

    package init(sequence: UInt64, changes: [any CommitChange]) {
        self.sequence = sequence
        self.changes = changes
    }
}

/// A batch on its way through the commit path: the records the engine writes, the logical
/// changes they make, and what the collections do at the instant it becomes visible.
///
/// A collection builds one per write (or a ``Transaction`` one for several collections) and
/// hands it to ``Engine/commit(_:)``: participants see ``changes`` and may add ``records``, then
/// the records commit as one atomic write-ahead-log record, then ``onVisible`` runs, then
/// observers are told.
package struct CommitBatch: Sendable {
    /// The records; they commit all together or not at all.
    package var records = WriteBatch()
    /// The logical changes of the records, for participants and observers.
    package var changes: [any CommitChange] = []
    /// Run by the engine under its commit lock, in commit order, after the batch is durable and
    /// applied and just before readers can see it: where a collection publishes its in-memory
    /// head (a series' next sequence), so that a reader that sees any part of the batch also sees
    /// every collection's head updated for it. Must be short and must not call the engine.
    package var onVisible: [@Sendable (_ sequence: UInt64) -> Void] = []
    /// Run by ``Engine/commit(_:)`` when the batch fails after participants prepared it (a later
    /// participant threw, or the commit did): where a participant releases what its `prepare`
    /// took. A batch that was applied before its commit failed may see both this and
    /// ``onVisible``; each action must tolerate that.
    package var onAbort: [@Sendable () -> Void] = []
    /// Overrides the store's durability for this batch.
    package var durability: Durability?

    package init(durability: Durability? = nil) {
        self.durability = durability
    }

    /// A batch of records with no logical change (catalog entries, index builds).
    package init(records: WriteBatch) {
        self.records = records
    }

    package var isEmpty: Bool { records.isEmpty }

    /// Where the batch ends now, to roll back to (``rollBack(to:)``).
    package struct Mark {
        fileprivate let count: Int
        fileprivate let byteCount: Int
        fileprivate let changes: Int
        fileprivate let onVisible: Int

    package init(count: Int, byteCount: Int, changes: Int, onVisible: Int) {
        self.count = count
        self.byteCount = byteCount
        self.changes = changes
        self.onVisible = onVisible
    }
}

    package var mark: Mark {
        Mark(count: records.count, byteCount: records.operations.count, changes: changes.count, onVisible: onVisible.count)
    }

    /// Removes everything added since `mark` (a failed write of a transaction), without copying
    /// what came before.
    package mutating func rollBack(to mark: Mark) {
        records.truncate(count: mark.count, byteCount: mark.byteCount)
        changes.removeSubrange(mark.changes...)
        onVisible.removeSubrange(mark.onVisible...)
    }
}

/// Takes part in every commit: before a batch is written, it sees the batch's logical changes
/// and may add records to the same batch, so that what it derives (an outbox row, a revision, a
/// feed entry) commits if and only if the change does.
///
/// Registered with ``Engine/register(_:)``; called on the committing thread, before the batch
/// enters the commit queue, while the collection that made the batch holds its writer lock. A
/// participant that throws fails the write (nothing of it commits).
package protocol CommitParticipant: AnyObject, Sendable {
    func prepare(_ batch: inout CommitBatch) throws
    /// Whether the participant needs the logical changes of writes to collection `name` of
    /// `kind` (so that a write nobody needs described describes nothing). Default: every one.
    func wantsChanges(of kind: CollectionKind, name: String) -> Bool
}

extension CommitParticipant {
    package func wantsChanges(of kind: CollectionKind, name: String) -> Bool { true }
}
