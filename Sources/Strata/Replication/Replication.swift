import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A running replication of a document database with a gateway: its events, its status, and
/// the means to stop it. ``DocumentDatabase/startReplication(with:)`` starts one.
///
/// ```swift
/// let replication = try db.startReplication(with: .oneTimeBidirectionalReplication(with: url))
/// do {
///     for try await event in try replication.events() { print(event) }
/// } catch {
///     print("failed: \(error)")
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

    /// How a consumer's stream of events ended, or ends when the replication does.
    private enum StreamEnd {
        /// Completed or stopped: the stream finishes.
        case finished
        /// Failed, or the store closed: the stream ends by throwing the error.
        case failed(StrataError)
    }

    private struct Consumer {
        let continuation: AsyncThrowingStream<ReplicationEvent, any Error>.Continuation
        let bufferSize: Int
    }

    private struct State {
        var status: ReplicationStatus = .active
        var task: Task<Void, Never>?
        var stopRequested = false
        var closedByStore = false
        var pullCaughtUp = false
        var pushCaughtUp = false
        var received = ReplicationEvent.Progress(completed: 0, total: 0)
        var sent = ReplicationEvent.Progress(completed: 0, total: 0)
        var rejected: [String] = []
        var waiters: [CheckedContinuation<ReplicationStatus, Never>] = []
        /// The open event streams; events are yielded to them under the lock, so every stream
        /// sees them in the order they happened.
        var consumers: [UInt64: Consumer] = [:]
        var nextConsumer: UInt64 = 0
        /// Set when the replication has ended: how its streams ended, and how a stream made
        /// later ends after its catch-up.
        var streamEnd: StreamEnd?
    }

    private let state = Mutex(State())

    /// The most documents ``rejectedDocuments`` lists.
    static let rejectedLimit = 1_000

    init(configuration: ReplicationConfiguration) {
        self.configuration = configuration
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

    /// A stream of the replication's events, in order: ``ReplicationEvent/sending(_:)`` and
    /// ``ReplicationEvent/receiving(_:)`` after each batch, ``ReplicationEvent/completed`` when
    /// every direction has caught up (the last event of a one-time replication; a repeating one
    /// reports it each time it catches up), ``ReplicationEvent/failed(_:)`` as the last event of a
    /// failed replication.
    ///
    /// A stream starts with where the replication is, so that one made after the replication
    /// started misses nothing (progress is cumulative): the latest ``ReplicationEvent/sending(_:)``
    /// and ``ReplicationEvent/receiving(_:)`` if any documents moved, then
    /// ``ReplicationEvent/completed`` if the replication has caught up or completed, or
    /// ``ReplicationEvent/failed(_:)`` if it failed; then every later event. Each call makes a
    /// stream of its own, so several consumers may follow one replication.
    ///
    /// The stream finishes when the replication completes or stops, and ends by throwing the
    /// replication's error when it fails (after ``ReplicationEvent/failed(_:)``),
    /// ``StrataError/closed`` when the store's close stopped it, and
    /// ``StrataError/subscriberOverflow(_:)`` when its consumer falls more than `bufferSize`
    /// events behind (no event is ever dropped silently; ``status`` still tells where the
    /// replication is). Cancelling the consuming task ends the stream, not the replication.
    ///
    /// ```swift
    /// for try await event in try replication.events() {
    ///     if case .receiving(let p) = event { print("\(p.completed)/\(p.total)") }
    /// }
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for `bufferSize` < 1.
    public func events(bufferSize: Int = 1_024) throws -> AsyncThrowingStream<ReplicationEvent, any Error> {
        guard bufferSize >= 1 else {
            throw StrataError.invalidArgument(argument: "bufferSize", reason: "replication events: bufferSize \(bufferSize) must be at least 1")
        }
        return makeEvents(bufferSize: bufferSize)
    }

    /// The same as ``events(bufferSize:)`` with its default buffer of 1,024 events: a new stream
    /// at each use.
    ///
    /// ```swift
    /// for try await event in replication.events { print(event) }
    /// ```
    public var events: AsyncThrowingStream<ReplicationEvent, any Error> {
        makeEvents(bufferSize: 1_024)
    }

    private func makeEvents(bufferSize: Int) -> AsyncThrowingStream<ReplicationEvent, any Error> {
        let (stream, continuation, ended) = state.withLock { s in
            var catchUp: [ReplicationEvent] = []
            if s.sent.completed > 0 { catchUp.append(.sending(s.sent)) }
            if s.received.completed > 0 { catchUp.append(.receiving(s.received)) }
            switch s.status {
            case .completed, .idle: catchUp.append(.completed)
            case .failed(let error): catchUp.append(.failed(error))
            case .active, .offline, .stopped: break
            }
            // The catch-up is buffered on top of `bufferSize`.
            let (limit, overflowed) = bufferSize.addingReportingOverflow(catchUp.count)
            let (stream, continuation) = AsyncThrowingStream.makeStream(
                of: ReplicationEvent.self, throwing: (any Error).self,
                bufferingPolicy: .bufferingOldest(overflowed ? .max : limit))
            for event in catchUp { continuation.yield(event) }
            if let end = s.streamEnd { return (stream, continuation, Optional(end)) }
            s.nextConsumer += 1
            let token = s.nextConsumer
            s.consumers[token] = Consumer(continuation: continuation, bufferSize: bufferSize)
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.consumers.removeValue(forKey: token) }
            }
            return (stream, continuation, nil)
        }
        if let ended { Self.finish(continuation, ended) }
        return stream
    }

    /// Stops the replication: the task ends at its next step (a batch being committed commits
    /// first) and the event streams finish. The status becomes ``ReplicationStatus/stopped``
    /// unless it had ended already. Idempotent.
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

    /// Stops the replication because the store closes: its streams end by throwing
    /// ``StrataError/closed``.
    /// Runs a replicator's work and ends the replication as the work ended: completed, or
    /// stopped when a stop was asked; after an error, with the status
    /// ``Replicator/finalStatus(of:stopRequested:)`` gives it.
    func runToEnd(_ work: () async throws -> Void) async {
        do {
            try await work()
            end(isStopRequested ? .stopped : .completed)
        } catch {
            end(Replicator.finalStatus(of: error, stopRequested: isStopRequested), closed: (error as? StrataError) == .closed)
        }
    }

    func stopForClose() {
        state.withLock { $0.closedByStore = true }
        stop()
    }

    private func taskEnded() {
        let (waiters, status, consumers, end) = state.withLock { s in
            if !s.status.isFinal { s.status = .stopped }
            s.task = nil
            defer { s.waiters = [] }
            let (consumers, end) = Self.endStreams(&s)
            return (s.waiters, s.status, consumers, end)
        }
        for consumer in consumers { Self.finish(consumer.continuation, end) }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    var isStopRequested: Bool { state.withLock { $0.stopRequested } }

    /// A direction has started work (`caughtUp` false) or caught up (true). When every direction
    /// has caught up, a repeating replication goes idle and reports ``ReplicationEvent/completed``.
    func direction(pull: Bool, caughtUp: Bool) {
        let overflowed = state.withLock { s -> [Consumer] in
            guard !s.status.isFinal else { return [] }
            if pull { s.pullCaughtUp = caughtUp } else { s.pushCaughtUp = caughtUp }
            if s.pullCaughtUp && s.pushCaughtUp {
                guard configuration.repeating, s.status != .idle else { return [] }
                s.status = .idle
                return Self.yield(.completed, &s)
            }
            s.status = .active
            return []
        }
        Self.finishOverflowed(overflowed)
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
        let overflowed = state.withLock { s -> [Consumer] in
            guard !s.status.isFinal else { return [] }
            if pull {
                s.received.total += total
                s.received.completed += completed
                return completed > 0 ? Self.yield(.receiving(s.received), &s) : []
            }
            s.sent.total += total
            s.sent.completed += completed
            return completed > 0 ? Self.yield(.sending(s.sent), &s) : []
        }
        Self.finishOverflowed(overflowed)
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
    /// ``ReplicationEvent/failed(_:)``, and ends the event streams. `closed`: the store's close
    /// ended it.
    func end(_ status: ReplicationStatus, closed: Bool = false) {
        let (overflowed, consumers, end) = state.withLock { s -> ([Consumer], [Consumer], StreamEnd) in
            if closed { s.closedByStore = true }
            var overflowed: [Consumer] = []
            if !s.status.isFinal {
                s.status = status
                switch status {
                case .completed: overflowed = Self.yield(.completed, &s)
                case .failed(let error): overflowed = Self.yield(.failed(error), &s)
                default: break
                }
            }
            let (consumers, end) = Self.endStreams(&s)
            return (overflowed, consumers, end)
        }
        Self.finishOverflowed(overflowed)
        for consumer in consumers { Self.finish(consumer.continuation, end) }
    }

    // MARK: Streams

    /// Yields `event` to every stream; returns the streams it overflowed (removed, to be ended
    /// outside the lock: ending one runs its termination handler, which takes the lock).
    private static func yield(_ event: ReplicationEvent, _ s: inout State) -> [Consumer] {
        var overflowed: [Consumer] = []
        for (token, consumer) in s.consumers {
            switch consumer.continuation.yield(event) {
            case .enqueued: continue
            case .dropped: overflowed.append(consumer)
            case .terminated: break
            @unknown default: break
            }
            s.consumers[token] = nil
        }
        return overflowed
    }

    private static func finishOverflowed(_ consumers: [Consumer]) {
        for consumer in consumers {
            consumer.continuation.finish(throwing: StrataError.subscriberOverflow(
                "replication events: a consumer fell more than \(consumer.bufferSize) events behind"))
        }
    }

    /// Marks the streams ended (once): returns the open ones, to be ended outside the lock, and
    /// how they end.
    private static func endStreams(_ s: inout State) -> ([Consumer], StreamEnd) {
        if let end = s.streamEnd { return ([], end) }
        let end: StreamEnd
        if case .failed(let error) = s.status {
            end = .failed(error)
        } else if s.closedByStore {
            end = .failed(.closed)
        } else {
            end = .finished
        }
        s.streamEnd = end
        defer { s.consumers = [:] }
        return (Array(s.consumers.values), end)
    }

    private static func finish(_ continuation: AsyncThrowingStream<ReplicationEvent, any Error>.Continuation, _ end: StreamEnd) {
        switch end {
        case .finished: continuation.finish()
        case .failed(let error): continuation.finish(throwing: error)
        }
    }
}
