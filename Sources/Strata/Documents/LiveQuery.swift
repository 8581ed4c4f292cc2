import Foundation
import Synchronization

/// The live queries and change subscribers of a database.
struct LiveState {
    struct Observer {
        let index: String
        let query: IndexQuery
        /// The row-key suffixes the query reads; a commit that touches none of them cannot
        /// change its result.
        let spans: [IndexReader.Span]
        let continuation: AsyncThrowingStream<IndexQueryResult, any Error>.Continuation
        var last: IndexQueryResult?
        var dirty = false
    }

    var observers: [UInt64: Observer] = [:]
    var subscribers: [UInt64: AsyncThrowingStream<[DocumentChange], any Error>.Continuation] = [:]
    var nextToken: UInt64 = 0
    /// A refresh is queued on the live queue.
    var refreshScheduled = false
    var closed = false
    /// The engine failed: streams ended by throwing this, and new ones throw it.
    var failure: StrataError?

    /// Why a stream cannot start, if it cannot.
    var refusal: StrataError? { failure ?? (closed ? .closed : nil) }
}

/// Marks each database's live queue with the database's id, to tell when code runs on it.
let liveQueueKey = DispatchSpecificKey<UInt64>()

/// How many commits' change batches a ``DocumentDatabase/changes()`` subscriber may have
/// pending before its stream ends.
let documentChangesBufferLimit = 1024

extension DatabaseState {
    /// Whether any live query is registered (writes then collect the row keys they touch).
    var hasObservers: Bool { live.withLock { !$0.observers.isEmpty } }

    /// Starts a live query: yields the current result at once, then a new result after each
    /// commit that changes it.
    func observe(_ indexName: String, _ query: IndexQuery) throws -> AsyncThrowingStream<IndexQueryResult, any Error> {
        if let e = engine.failure { throw e }
        let index = try activeIndex(indexName)
        _ = try IndexReader.validate(query, index: indexName, hasReduction: index.definition.reduce != nil)
        let spans = try IndexReader.spans(of: query, collation: index.definition.collation)
        let (stream, continuation) = AsyncThrowingStream<IndexQueryResult, any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let token = try live.withLock { state -> UInt64 in
            if let e = state.refusal { throw e }
            state.nextToken += 1
            state.observers[state.nextToken] = LiveState.Observer(index: indexName, query: query,
                                                                  spans: spans, continuation: continuation,
                                                                  last: nil, dirty: true)
            return state.nextToken
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.live.withLock { $0.observers.removeValue(forKey: token) }
        }
        // The first result is computed at once by the refresh (the observer starts dirty); run
        // it synchronously so that the current result is in the stream when observe returns
        // (directly when called from a refresh, e.g. by a custom reduce).
        if DispatchQueue.getSpecific(key: liveQueueKey) == id {
            refresh()
        } else {
            liveQueue.sync { refresh() }
        }
        return stream
    }

    /// A stream of the changes of each commit.
    func changeStream() throws -> AsyncThrowingStream<[DocumentChange], any Error> {
        if let e = engine.failure { throw e }
        let (stream, continuation) = AsyncThrowingStream<[DocumentChange], any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(documentChangesBufferLimit))
        let token = try live.withLock { state -> UInt64 in
            if let e = state.refusal { throw e }
            state.nextToken += 1
            state.subscribers[state.nextToken] = continuation
            return state.nextToken
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.live.withLock { $0.subscribers.removeValue(forKey: token) }
        }
        return stream
    }

    /// Called by a writer, with the writer lock held, right after a commit: delivers the change
    /// batch to subscribers (in commit order) and marks the live queries whose rows it touched.
    func didCommit(_ changes: [DocumentChange], touched: [String: [[UInt8]]]) {
        var overflowed: [AsyncThrowingStream<[DocumentChange], any Error>.Continuation] = []
        let schedule = live.withLock { state -> Bool in
            for (token, continuation) in state.subscribers {
                if case .dropped = continuation.yield(changes) {
                    // The subscriber fell behind by more than the buffer: its stream ends (it can
                    // resume from the persistent feed with `changes(since:)`).
                    state.subscribers.removeValue(forKey: token)
                    overflowed.append(continuation)
                }
            }
            var any = false
            for (token, observer) in state.observers where !observer.dirty {
                guard let keys = touched[observer.index] else { continue }
                let hit = keys.contains { key in key.withUnsafeBytes { k in observer.spans.contains { $0.contains(k) } } }
                if hit {
                    state.observers[token]?.dirty = true
                    any = true
                }
            }
            guard any, !state.refreshScheduled else { return false }
            state.refreshScheduled = true
            return true
        }
        // Outside the lock: finishing runs the stream's onTermination, which takes it.
        for continuation in overflowed {
            continuation.finish(throwing: StrataError.subscriberOverflow(
                "changes() of document database \(name.debugDescription): more than \(documentChangesBufferLimit) commits pending; "
                + "resume with changes(since:)"))
        }
        if schedule { liveQueue.async { [self] in refresh() } }
    }

    /// Indexes were built, rebuilt or dropped: their live queries must be re-run.
    func indexesDidChange(_ names: [String]) {
        let schedule = live.withLock { state -> Bool in
            var any = false
            for (token, observer) in state.observers where names.contains(observer.index) {
                state.observers[token]?.dirty = true
                any = true
            }
            guard any, !state.refreshScheduled else { return false }
            state.refreshScheduled = true
            return true
        }
        if schedule { liveQueue.async { [self] in refresh() } }
    }

    /// Re-runs every dirty live query on a fresh snapshot and yields the results that changed.
    /// Bursts of commits coalesce: one refresh serves every commit before it starts. Runs on
    /// ``liveQueue`` only, so that results are yielded in commit order. A live query whose index
    /// was dropped ends; one whose index is being rebuilt waits for the rebuild (which marks it
    /// dirty again); one that cannot be read ends by throwing the error.
    func refresh() {
        let dirty = live.withLock { state -> [(UInt64, String, IndexQuery)] in
            state.refreshScheduled = false
            var out: [(UInt64, String, IndexQuery)] = []
            for (token, observer) in state.observers where observer.dirty {
                state.observers[token]?.dirty = false
                out.append((token, observer.index, observer.query))
            }
            return out
        }
        if dirty.isEmpty { return }
        let snapshot: Snapshot
        do {
            snapshot = try engine.snapshot()
        } catch {
            for (token, _, _) in dirty { end(token, throwing: error) }
            return
        }
        for (token, indexName, query) in dirty {
            guard let index = indexes.withLock({ $0[indexName] }) else {
                end(token, throwing: nil)  // dropped
                continue
            }
            if index.pending != nil { continue }  // rebuilding: re-run when it is done
            let result: IndexQueryResult
            do {
                result = try IndexReader.run(query, index: indexName, prefix: index.prefix,
                                             reduction: index.definition.reduce,
                                             collation: index.definition.collation, snapshot: snapshot)
            } catch {
                end(token, throwing: error)
                continue
            }
            live.withLock { state in
                guard var observer = state.observers[token] else { return }
                if observer.last != result {
                    observer.last = result
                    observer.continuation.yield(result)
                    state.observers[token] = observer
                }
            }
        }
    }

    /// Ends a live query: normally (`error` nil) or by throwing `error`.
    private func end(_ token: UInt64, throwing error: (any Error)?) {
        guard let observer = live.withLock({ $0.observers.removeValue(forKey: token) }) else { return }
        observer.continuation.finish(throwing: error)
    }

    /// Ends every stream: normally when the store is closing (`error` nil), else by throwing
    /// `error` (the engine failed), which later streams then throw at once.
    func endStreams(throwing error: StrataError? = nil) {
        let (observers, subscribers) = live.withLock { state in
            if let error {
                if state.failure == nil { state.failure = error }
            } else {
                state.closed = true
            }
            defer {
                state.observers.removeAll()
                state.subscribers.removeAll()
            }
            return (Array(state.observers.values), Array(state.subscribers.values))
        }
        for o in observers { o.continuation.finish(throwing: error) }
        for s in subscribers { s.finish(throwing: error) }
    }
}
