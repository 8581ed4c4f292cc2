import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How many commits' change batches a ``DocumentDatabase/changes(bufferSize:)`` subscriber may
/// have pending before its stream ends, by default (the default of `bufferSize`).
let documentChangesBufferLimit = 1024

/// The last result a live query yielded; touched only on the broadcaster's delivery queue (and
/// by `observe` while it holds that queue).
private final class LiveResult: @unchecked Sendable {
    var last: IndexQueryResult?
}

/// The streams of one document database: live queries, and the change stream of its commits.
final class DatabaseObservers: Sendable {
    let name: String
    let id: UInt64
    let engine: Engine
    let broadcaster: CommitBroadcaster
    let writer: CollectionLock<DatabaseState.WriterState>
    let indexes: DatabaseIndexes

    init(name: String, id: UInt64, engine: Engine, broadcaster: CommitBroadcaster,
         writer: CollectionLock<DatabaseState.WriterState>, indexes: DatabaseIndexes) {
        self.name = name
        self.id = id
        self.engine = engine
        self.broadcaster = broadcaster
        self.writer = writer
        self.indexes = indexes
    }

    /// Starts a live query: yields the current result at once, then a new result after each
    /// commit that changes it. Results are the newest only (a consumer that falls behind gets
    /// the latest result, never a stale one, and never an overflow).
    ///
    /// The query runs again, on the broadcaster's delivery queue, for each commit that touched
    /// the row keys it reads (or whose touched keys were not collected), and when its index is
    /// rebuilt; a live query whose index was dropped ends; one that cannot be read ends by
    /// throwing the error.
    func observe(_ indexName: String, _ query: IndexQuery) throws -> AsyncThrowingStream<IndexQueryResult, any Error> {
        if let e = engine.failure { throw e }
        let index = try indexes.activeIndex(indexName)
        _ = try IndexReader.validate(query, index: indexName, hasReduction: index.definition.reduce != nil)
        let spans = try IndexReader.spans(of: query, collation: index.definition.collation)
        let state = LiveResult()
        let id = self.id
        // On the delivery queue: nothing is delivered between the registration and the first
        // result, and a commit visible after the registration is queued behind this.
        return try broadcaster.synchronized {
            try broadcaster.subscribe(
                after: 0, buffering: .newest,
                initial: { [self] in
                    let result = try run(indexName, query)
                    state.last = result
                    return [result]
                },
                overflow: { "" }
            ) { [weak self] commit in
                guard let self else { throw CommitBroadcaster.EndOfStream() }
                var hit = false
                for change in commit.changes {
                    if let c = change as? DatabaseState.Changes, c.databaseID == id {
                        guard let touched = c.touched else {
                            hit = true
                            break
                        }
                        if let keys = touched[indexName],
                           keys.contains(where: { key in key.withUnsafeBytes { k in spans.contains { $0.contains(k) } } }) {
                            hit = true
                            break
                        }
                    } else if let c = change as? DatabaseState.IndexesChanged, c.databaseID == id, c.names.contains(indexName) {
                        hit = true
                        break
                    }
                }
                guard hit else { return [] }
                guard let current = indexes.withLock({ $0[indexName] }) else { throw CommitBroadcaster.EndOfStream() }
                if current.pending != nil { return [] }  // rebuilding: runs again when it is done
                let result = try run(indexName, query)
                if result == state.last { return [] }
                state.last = result
                return [result]
            }
        }
    }

    /// Runs `query` on the attached index `indexName` in a new snapshot.
    private func run(_ indexName: String, _ query: IndexQuery) throws -> IndexQueryResult {
        guard let index = indexes.withLock({ $0[indexName] }) else { throw CommitBroadcaster.EndOfStream() }
        return try IndexReader.run(query, index: indexName, prefix: index.prefix, reduction: index.definition.reduce,
                                   collation: index.definition.collation, snapshot: try engine.snapshot())
    }

    /// A stream of the changes of each later commit of the database, of which a subscriber may
    /// have `bufferSize` commits pending before its stream ends.
    func changeStream(bufferSize: Int) throws -> AsyncThrowingStream<[DocumentChange], any Error> {
        if let e = engine.failure { throw e }
        let id = self.id
        let name = self.name
        // Under the writer lock, every later commit of the database comes after `after`.
        return try writer.withLock { w in
            guard !w.closed else { throw StrataError.closed }
            return try broadcaster.subscribe(
                after: try engine.snapshot().sequence, buffering: .bounded(bufferSize),
                overflow: {
                    "changes() of document database \(name.debugDescription): more than \(bufferSize) "
                        + "commits pending; resume with changes(since:)"
                }
            ) { commit in
                var out: [[DocumentChange]] = []
                for change in commit.changes {
                    if let c = change as? DatabaseState.Changes, c.databaseID == id { out.append(c.changes) }
                }
                return out
            }
        }
    }
}
