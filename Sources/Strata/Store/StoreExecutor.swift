import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The threads that run a store's `async` twins (`try await series.append(1.5)`), so that a Swift
/// concurrency task never blocks a thread of the cooperative pool in `fdatasync`, on a commit
/// lock or in recovery: the task suspends, a thread of this executor runs the synchronous
/// method, and the task resumes with its result.
///
/// - A small pool of dedicated threads (at most ``maximumThreads``), started when work arrives
///   and every started thread is busy; jobs run in the order they were queued.
/// - Each ``Store`` has one (its engine holds it); ``Store/close()`` stops it. After ``stop()``
///   a new job throws ``StrataError/closed`` without running, and every job still queued is
///   failed with ``StrataError/closed`` at once: none waits forever. Jobs already running finish.
/// - ``global`` runs what has no store yet (``Store/open(at:options:)``, ``Store/destroy(at:)``)
///   and is never stopped.
/// - Cancellation: a job whose task is cancelled before a thread picks it up is dropped, and the
///   task gets `CancellationError` at once; a job that has started runs to the end and
///   its result is returned (a committed write is never reported as failed).
final class StoreExecutor: Sendable {
    /// The most threads one executor starts.
    static let maximumThreads = 4

    /// The executor of the static operations (open, destroy, shutdown), shared by every store.
    static let global = StoreExecutor(name: "strata.open")

    private let name: String
    /// Wakes idle threads; guards nothing itself (the state is in `queue`).
    private let wakeup = ConditionLock()
    private let queue = Mutex(JobQueue())

    private struct JobQueue {
        var jobs: [any ExecutorJob] = []
        var head = 0
        var threads = 0
        var idle = 0
        var stopped = false

        var count: Int { jobs.count - head }

        mutating func pop() -> (any ExecutorJob)? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1_024, head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }

        mutating func drain() -> [any ExecutorJob] {
            defer {
                jobs = []
                head = 0
            }
            return Array(jobs[head...])
        }
    }

    init(name: String = "strata.executor") {
        self.name = name
    }

    /// Runs `work` on one of the executor's threads and returns its result (or throws its error).
    ///
    /// - Parameter cancellable: whether a cancelled task drops the job before it starts
    ///   (`CancellationError`); false for work that must run once asked for (shutdown).
    /// - Throws: what `work` throws; ``StrataError/closed`` if the executor is stopped (before the
    ///   job started); `CancellationError` if the task was cancelled before it started.
    func run<T: Sendable>(cancellable: Bool = true, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        let job = Job(work)
        guard cancellable else {
            return try await withCheckedThrowingContinuation { continuation in
                if job.attach(continuation) { submit(job) }
            }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if job.attach(continuation) { submit(job) }
            }
        } onCancel: {
            job.cancel()
        }
    }

    /// The jobs waiting for a thread (cancelled ones included until a thread passes them).
    var queuedCount: Int { queue.withLock { $0.count } }

    /// Stops the executor: later jobs throw ``StrataError/closed``, queued ones are failed with
    /// it now, running ones finish; each thread ends when it has no job. Idempotent; never waits
    /// for a thread (it may be called from one of them, by an `async` close).
    func stop() {
        let queued = queue.withLock { q -> [any ExecutorJob] in
            q.stopped = true
            return q.drain()
        }
        wakeup.withLock { wakeup.broadcast() }
        for job in queued { job.fail(.closed) }
    }

    private func submit(_ job: any ExecutorJob) {
        enum Outcome { case rejected, queued, startThread }
        let outcome = queue.withLock { q -> Outcome in
            if q.stopped { return .rejected }
            q.jobs.append(job)
            guard q.count > q.idle, q.threads < Self.maximumThreads else { return .queued }
            q.threads += 1
            return .startThread
        }
        if case .rejected = outcome {
            job.fail(.closed)
            return
        }
        wakeup.withLock { wakeup.broadcast() }
        if case .startThread = outcome {
            let thread = Thread { [self] in
                // Named here: on Linux a name set before `start()` does not reach the thread.
                Thread.current.name = name
                work()
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    /// A thread's loop: run queued jobs, wait while there is none, end once stopped.
    private func work() {
        while true {
            let next: (any ExecutorJob)? = wakeup.withLock {
                while true {
                    enum Step { case run(any ExecutorJob), exit, wait }
                    let step = queue.withLock { q -> Step in
                        if let job = q.pop() { return .run(job) }
                        if q.stopped {
                            q.threads -= 1
                            return .exit
                        }
                        q.idle += 1
                        return .wait
                    }
                    switch step {
                    case .run(let job): return job
                    case .exit: return nil
                    case .wait:
                        wakeup.wait()
                        queue.withLock { $0.idle -= 1 }
                    }
                }
            }
            guard let next else { return }
            next.run()
        }
    }
}

/// A queued unit of work, type-erased for the queue.
private protocol ExecutorJob: Sendable {
    /// Runs the work and resumes its task, unless the job was cancelled or failed meanwhile.
    func run()
    /// Resumes the task with `error` unless the job started or ended already.
    func fail(_ error: StrataError)
}

/// One call of ``StoreExecutor/run(cancellable:_:)``: its work, and its task's continuation once
/// attached. The phase decides, under its lock, which of the thread (`run`), the cancellation
/// handler (`cancel`) and `stop` (`fail`) resumes the task: exactly one of them does.
private final class Job<T: Sendable>: ExecutorJob {
    private enum Phase {
        /// Created; the continuation is not attached yet.
        case created
        /// Cancelled before the continuation was attached: `attach` resumes it at once.
        case cancelledEarly
        case queued(CheckedContinuation<T, any Error>)
        case running
        case ended
    }

    private let phase = Mutex(Phase.created)
    private let work: @Sendable () throws -> T

    init(_ work: @escaping @Sendable () throws -> T) {
        self.work = work
    }

    /// Attaches the task's continuation; false (having resumed it with `CancellationError`) if the task
    /// was cancelled already, true if the job is to be queued.
    func attach(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let cancelled = phase.withLock { p -> Bool in
            guard case .created = p else {
                p = .ended
                return true
            }
            p = .queued(continuation)
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// The task was cancelled: drop the job if it has not started.
    func cancel() {
        let continuation = phase.withLock { p -> CheckedContinuation<T, any Error>? in
            switch p {
            case .created:
                p = .cancelledEarly
                return nil
            case .queued(let c):
                p = .ended
                return c
            case .cancelledEarly, .running, .ended:
                return nil
            }
        }
        continuation?.resume(throwing: CancellationError())
    }

    func fail(_ error: StrataError) {
        let continuation = phase.withLock { p -> CheckedContinuation<T, any Error>? in
            guard case .queued(let c) = p else { return nil }
            p = .ended
            return c
        }
        continuation?.resume(throwing: error)
    }

    func run() {
        let continuation = phase.withLock { p -> CheckedContinuation<T, any Error>? in
            guard case .queued(let c) = p else { return nil }
            p = .running
            return c
        }
        guard let continuation else { return }
        let result = Result { try work() }
        phase.withLock { $0 = .ended }
        continuation.resume(with: result)
    }
}
