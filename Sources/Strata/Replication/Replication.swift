import Synchronization
import StrataFormat
import StrataFiles
import StrataEngine

/// A running replication of a document database with a gateway: its events, its status, and
/// the means to stop it. ``DocumentDatabase/startReplication(with:)`` starts one.
///
/// ```swift
/// let replication = try db.startReplication(with: .oneTimeBidirectionalReplication(with: url))
/// for await event in replication.events {
///     if case .failed(let error) = event { print(error) }
/// }
/// print(replication.status)     // .completed
/// ```
///
/// The replication runs in a task of its own until it completes (one-time), fails, or is
/// stopped by ``stop()``, by ``DocumentDatabase/stopReplication()`` or by the store's close.
/// Stopping never leaves half a batch: each batch of received revisions is one atomic commit,
/// and checkpoints are saved only after the batch they cover committed, so the next replication
/// with the same configuration resumes where this one got to.
public final class Replication: Sendable {
    /// The configuration it was started with.
    public let configuration: ReplicationConfiguration
    /// The events, in order: ``ReplicationEvent/sending(_:)`` and
    /// ``ReplicationEvent/receiving(_:)`` after each batch, ``ReplicationEvent/completed`` when
    /// every direction has caught up (the last event of a one-time replication; a repeating one
    /// reports it each time it catches up), ``ReplicationEvent/failed(_:)`` as the last event of a
    /// failed replication. The stream ends when the replication ends. One consumer; it keeps the
    /// newest 1,024 events when the consumer falls behind (so the final event is never lost).
    public let events: AsyncStream<ReplicationEvent>

    private let continuation: AsyncStream<ReplicationEvent>.Continuation

    private struct State {
        var status: ReplicationStatus = .active
        var task: Task<Void, Never>?
        var stopRequested = false
        var pullCaughtUp = false
        var pushCaughtUp = false
        var received = ReplicationEvent.Progress(completed: 0, total: 0)
        var sent = ReplicationEvent.Progress(completed: 0, total: 0)
        var rejected: [String] = []
        var waiters: [CheckedContinuation<ReplicationStatus, Never>] = []
    }

    private let state = Mutex(State())

    /// The most documents ``rejectedDocuments`` lists.
    static let rejectedLimit = 1_000

    init(configuration: ReplicationConfiguration) {
        self.configuration = configuration
        (events, continuation) = AsyncStream.makeStream(of: ReplicationEvent.self, bufferingPolicy: .bufferingNewest(1_024))
        state.withLock {
            $0.pushCaughtUp = !configuration.pushes
            $0.pullCaughtUp = !configuration.pulls
        }
    }

    /// Where the replication is now.
    public var status: ReplicationStatus { state.withLock { $0.status } }

    /// The documents the gateway refused to take and that are not sent again (each as
    /// `"<id> <rev>: <status> <reason>"`, e.g. a write into a channel the user may not write; the
    /// newest 1,000).
    public var rejectedDocuments: [String] { state.withLock { $0.rejected } }

    /// Stops the replication: the task ends at its next step (a batch being committed commits
    /// first) and the event stream ends. The status becomes ``ReplicationStatus/stopped`` unless it
    /// had ended already. Idempotent.
    ///
    /// ```swift
    /// replication.stop()
    /// _ = await replication.finished()   // once it has really ended
    /// ```
    public func stop() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.stopRequested = true
            return s.task
        }
        task?.cancel()
    }

    /// Waits until the replication has ended and returns its final status
    /// (``ReplicationStatus/completed``, ``ReplicationStatus/stopped`` or
    /// ``ReplicationStatus/failed(_:)``).
    ///
    /// ```swift
    /// let replication = try db.startReplication(with: .oneTimeServerToClientReplication(with: url))
    /// guard await replication.finished() == .completed else { … }
    /// ```
    public func finished() async -> ReplicationStatus {
        await withCheckedContinuation { continuation in
            let done = state.withLock { s -> ReplicationStatus? in
                if s.status.isFinal, s.task == nil { return s.status }
                s.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    // MARK: For the replicator

    /// Starts `body` as the replication's task (once).
    func start(_ body: @escaping @Sendable (Replication) async -> Void) {
        state.withLock { s in
            s.task = Task { [self] in
                await body(self)
                self.taskEnded()
            }
            if s.stopRequested { s.task?.cancel() }
        }
    }

    private func taskEnded() {
        let (waiters, status) = state.withLock { s -> ([CheckedContinuation<ReplicationStatus, Never>], ReplicationStatus) in
            if !s.status.isFinal { s.status = .stopped }
            s.task = nil
            defer { s.waiters = [] }
            return (s.waiters, s.status)
        }
        continuation.finish()
        for waiter in waiters { waiter.resume(returning: status) }
    }

    var isStopRequested: Bool { state.withLock { $0.stopRequested } }

    /// A direction has started work (`caughtUp` false) or caught up (true). When every direction
    /// has caught up, a repeating replication goes idle and reports ``ReplicationEvent/completed``.
    func direction(pull: Bool, caughtUp: Bool) {
        let event = state.withLock { s -> ReplicationEvent? in
            guard !s.status.isFinal else { return nil }
            if pull { s.pullCaughtUp = caughtUp } else { s.pushCaughtUp = caughtUp }
            if s.pullCaughtUp && s.pushCaughtUp {
                guard configuration.repeating, s.status != .idle else { return nil }
                s.status = .idle
                return .completed
            }
            s.status = .active
            return nil
        }
        if let event { continuation.yield(event) }
    }

    /// Waiting to retry (``ReplicationStatus/offline``) or working again.
    func setOffline(_ offline: Bool) {
        state.withLock { s in
            guard !s.status.isFinal else { return }
            if offline {
                s.status = .offline
            } else if s.status == .offline {
                s.status = .active
            }
        }
    }

    /// Counts documents read from a change feed (`total`) and done (`completed`), and reports the
    /// progress of that direction.
    func progress(pull: Bool, total: Int = 0, completed: Int = 0) {
        let event = state.withLock { s -> ReplicationEvent? in
            guard !s.status.isFinal else { return nil }
            if pull {
                s.received.total += total
                s.received.completed += completed
                return completed > 0 ? .receiving(s.received) : nil
            }
            s.sent.total += total
            s.sent.completed += completed
            return completed > 0 ? .sending(s.sent) : nil
        }
        if let event { continuation.yield(event) }
    }

    /// Records a document the gateway refused.
    func reject(_ description: String) {
        state.withLock { s in
            if s.rejected.count >= Self.rejectedLimit { s.rejected.removeFirst(s.rejected.count - Self.rejectedLimit + 1) }
            s.rejected.append(description)
        }
    }

    /// Ends with `status` (``ReplicationStatus/completed``, ``ReplicationStatus/stopped`` or
    /// ``ReplicationStatus/failed(_:)``), reporting ``ReplicationEvent/completed`` or
    /// ``ReplicationEvent/failed(_:)``.
    func end(_ status: ReplicationStatus) {
        let event = state.withLock { s -> ReplicationEvent? in
            guard !s.status.isFinal else { return nil }
            s.status = status
            switch status {
            case .completed: return .completed
            case .failed(let error): return .failed(error)
            default: return nil
            }
        }
        if let event { continuation.yield(event) }
        continuation.finish()
    }
}
