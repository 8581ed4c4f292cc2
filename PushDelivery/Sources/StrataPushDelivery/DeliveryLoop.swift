import Foundation
import Logging
import Strata
import Synchronization

/// One run of a ``PushDelivery``: three kinds of tasks in one task group around a
/// ``DeliveryQueue``.
///
/// - The feeder reads `push.notifications(bufferSize:)` and queues each notification by device
///   (or counts it as unconfigured). On ``StrataError/subscriberOverflow(_:)`` it opens a new
///   stream, which yields everything pending again: ids at or below the queue's watermark are
///   skipped (they are queued, in flight, or done). On ``StrataError/closed`` the run ends.
/// - The dispatcher (the group's body) takes ready notifications as the in-flight window allows
///   and starts one child task per notification; the task sends it, applies the answer, and,
///   for a retry, sleeps out the device's backoff before making the device ready again (the
///   device's other notifications wait; other devices go on).
/// - The acknowledger collects definitive answers and commits them with `push.acknowledge([...])`
///   when a batch is full or `acknowledgementInterval` has passed.
///
/// A configuration error stops everything: the notification concerned is not acknowledged,
/// the answered ones are (`flush()`), and `run()` throws.
final class DeliveryLoop: Sendable {
    /// What a ``PushDelivery`` keeps under its lock: the statistics (across runs) and the
    /// current run's queue.
    struct State {
        var queue: DeliveryQueue
        var statistics = PushDeliveryStatistics()
        /// Devices this delivery suspended, until a notification to them is delivered.
        var suspended: Set<String> = []
        /// The run is ending (the store closed, or a configuration error).
        var stopping = false
        /// A run is under way.
        var running = false
        /// Platforms whose notifications were found without a configuration (logged once).
        var unconfiguredPlatforms: Set<PushDevice.Platform> = []
    }

    /// ``State`` under a lock, shared by a ``PushDelivery`` and its runs.
    final class Shared: Sendable {
        private let mutex: Mutex<State>

        init(_ state: State) { mutex = Mutex(state) }

        func withLock<R: Sendable, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
            try mutex.withLock { (state: inout State) throws(E) -> R in try body(&state) }
        }
    }

    private let push: PushNotifications
    private let senders: NotificationSenders
    private let options: PushDeliveryOptions
    private let state: Shared
    private let dispatch = Wakeup()
    private let acknowledgements = Wakeup()
    private let backoff: RetryBackoff
    private var logger: Logger { options.logger }

    /// The most notifications taken from the queue under one lock.
    static let dispatchBatch = 64

    init(push: PushNotifications, senders: NotificationSenders, options: PushDeliveryOptions, state: Shared) {
        self.push = push
        self.senders = senders
        self.options = options
        self.state = state
        backoff = RetryBackoff(baseDelay: options.retryBaseDelay, maxDelay: options.retryMaxDelay)
    }

    /// Delivers until the task is cancelled or the store closes; throws a configuration error.
    func run() async throws {
        do {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await self.feed() }
                group.addTask { await self.acknowledge() }
                var batch: [PushNotification] = []
                batch.reserveCapacity(Self.dispatchBatch)
                while !Task.isCancelled && !group.isCancelled {
                    let stopping = state.withLock { s in
                        guard !s.stopping else { return true }
                        while batch.count < Self.dispatchBatch, let n = s.queue.next() { batch.append(n) }
                        return s.stopping
                    }
                    if stopping { break }
                    if batch.isEmpty {
                        await dispatch.wait()
                        continue
                    }
                    for notification in batch {
                        group.addTask { try await self.deliver(notification) }
                    }
                    batch.removeAll(keepingCapacity: true)
                }
                group.cancelAll()
            }
        } catch {
            flush()
            throw error
        }
        flush()
    }

    // MARK: The feeder

    private func feed() async {
        let bufferSize = options.streamBufferSize ?? max(4_096, 4 * options.maxInFlight)
        var failures = 0
        while !Task.isCancelled {
            do {
                for try await notification in push.notifications(bufferSize: bufferSize) {
                    failures = 0
                    take(notification)
                }
                if Task.isCancelled { return }
                stop()   // a stream ends without an error only when the store closes
                return
            } catch StrataError.subscriberOverflow {
                logger.info("push delivery: the outbox stream overflowed; reopening it (notifications already held are skipped)")
            } catch StrataError.closed {
                stop()
                return
            } catch {
                if Task.isCancelled || error is CancellationError { return }
                failures += 1
                let delay = backoff.delay(attempt: failures, retryAfter: nil)
                logger.error("push delivery: the outbox stream failed; reopening it", metadata: ["error": "\(error)", "delay": "\(delay)"])
                do { try await Task.sleep(for: delay) } catch { return }
            }
        }
    }

    /// Queues a notification from the stream, or counts it as unconfigured.
    private func take(_ notification: PushNotification) {
        let configured = senders.sender(for: notification.platform) != nil
        let (queued, firstUnconfigured): (Bool, Bool) = state.withLock { s in
            guard s.queue.see(notification.id) else { return (false, false) }
            if configured {
                s.queue.enqueue(notification)
                return (true, false)
            }
            s.statistics.unconfigured += 1
            return (false, s.unconfiguredPlatforms.insert(notification.platform).inserted)
        }
        if queued {
            dispatch.signal()
        } else if firstUnconfigured {
            logger.info("push delivery: no configuration for this platform; its notifications stay in the outbox",
                        metadata: ["platform": "\(notification.platform.rawValue)"])
        }
    }

    private func stop() {
        state.withLock { $0.stopping = true }
        dispatch.signal()
    }

    // MARK: One notification

    private func deliver(_ notification: PushNotification) async throws {
        guard let sender = senders.sender(for: notification.platform) else { return }
        let answer = await sender.send(notification)
        if Task.isCancelled && !answer.isDefinitive { return }   // ending: it stays in the outbox
        switch answer {
        case .delivered:
            logger.debug("push delivery: delivered", metadata: metadata(notification))
            state.withLock { s in
                s.queue.settle(notification)
                s.statistics.delivered += 1
                if !s.suspended.isEmpty { s.suspended.remove(notification.deviceID) }
            }
            answered()
        case .rejected(let reason):
            logger.info("push delivery: the service rejected a notification; acknowledged unsent",
                        metadata: metadata(notification, ["reason": "\(reason)"]))
            state.withLock { s in
                s.queue.settle(notification)
                s.statistics.rejected[reason, default: 0] += 1
            }
            answered()
        case .suspendDevice(let reason):
            try await suspend(notification, reason: reason)
        case .retry(let reason, let after):
            await retry(notification, reason: reason, retryAfter: after)
        case .renewToken(let reason):
            await retry(notification, reason: reason, retryAfter: nil)
        case .configurationError(let message):
            logger.error("push delivery: configuration error; stopping (the notification stays in the outbox)",
                         metadata: metadata(notification, ["error": "\(message)"]))
            stop()
            throw StrataError.network(message)
        }
    }

    /// The service refused the device's token: suspend the device, acknowledge this
    /// notification and the device's waiting ones (counted rejected with the same reason).
    private func suspend(_ notification: PushNotification, reason: String) async throws {
        do {
            try await push.suspend(device: notification.deviceID)
        } catch StrataError.notFound {
            // The device is gone: nothing to suspend; its notifications are still acknowledged.
        } catch StrataError.closed {
            stop()
            return
        } catch {
            if Task.isCancelled { return }
            logger.error("push delivery: could not suspend a device; will try again",
                         metadata: metadata(notification, ["error": "\(error)"]))
            await retry(notification, reason: "suspend failed", retryAfter: nil)
            return
        }
        let (dropped, newly): ([PushNotification], Bool) = state.withLock { s in
            let dropped = s.queue.dropWaiting(device: notification.deviceID)
            s.queue.settle(notification, alsoAcknowledge: dropped)
            s.statistics.rejected[reason, default: 0] += 1 + dropped.count
            let newly = s.suspended.insert(notification.deviceID).inserted
            if newly { s.statistics.devicesSuspended += 1 }
            return (dropped, newly)
        }
        logger.info("push delivery: the service refused a device's token; device suspended until it registers again",
                    metadata: metadata(notification, ["reason": "\(reason)", "acknowledgedUnsent": "\(dropped.count)",
                                                      "firstSuspension": "\(newly)"]))
        answered()
    }

    /// Not answered for good: back to the front of its device's queue; the device waits out
    /// its backoff (this task sleeps it), the others go on.
    private func retry(_ notification: PushNotification, reason: String, retryAfter: Duration?) async {
        let failures = state.withLock { s in
            s.statistics.retried += 1
            return s.queue.retry(notification)
        }
        dispatch.signal()
        let delay = backoff.delay(attempt: failures, retryAfter: retryAfter)
        logger.debug("push delivery: retrying", metadata: metadata(notification, ["reason": "\(reason)", "delay": "\(delay)",
                                                                                 "failures": "\(failures)"]))
        do { try await Task.sleep(for: delay) } catch { return }
        state.withLock { $0.queue.endBackoff(device: notification.deviceID) }
        dispatch.signal()
    }

    /// A slot in flight freed and an acknowledgement waits.
    private func answered() {
        dispatch.signal()
        acknowledgements.signal()
    }

    private func metadata(_ n: PushNotification, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        var m: Logger.Metadata = ["notification": "\(n.id)", "device": "\(n.deviceID)", "platform": "\(n.platform.rawValue)"]
        m.merge(extra) { $1 }
        return m
    }

    // MARK: Acknowledgements

    private func acknowledge() async {
        var failures = 0
        while !Task.isCancelled {
            await acknowledgements.wait()
            if Task.isCancelled { return }
            // Wait for company: until the interval has passed or a batch is full (checked every
            // millisecond at most: a full batch waits no longer than that).
            let deadline = ContinuousClock.now + options.acknowledgementInterval
            while !state.withLock({ $0.queue.batchIsFull }) {
                let left = deadline - ContinuousClock.now
                if left <= .zero { break }
                do { try await Task.sleep(for: min(left, .milliseconds(1))) } catch { return }
            }
            while true {
                let batch = state.withLock { $0.queue.takeBatch() }
                if batch.isEmpty { break }
                do {
                    try await push.acknowledge(batch)
                    failures = 0
                    state.withLock { s in
                        s.queue.endCommit()
                        s.statistics.acknowledgementCommits += 1
                    }
                    options.onAcknowledged?(batch)
                    dispatch.signal()
                } catch {
                    state.withLock { $0.queue.endCommit(restore: batch) }
                    if case StrataError.closed = error { stop(); return }
                    if Task.isCancelled || error is CancellationError { return }
                    failures += 1
                    let delay = backoff.delay(attempt: failures, retryAfter: nil)
                    logger.error("push delivery: an acknowledgement commit failed; trying again",
                                 metadata: ["error": "\(error)", "notifications": "\(batch.count)", "delay": "\(delay)"])
                    do { try await Task.sleep(for: delay) } catch { return }
                    continue
                }
                if !state.withLock({ $0.queue.batchIsFull }) { break }
            }
        }
    }

    /// Commits every answered notification still waiting (at the end of a run; synchronous, so
    /// that a cancelled task still does it). A closed store keeps them: they are sent again.
    private func flush() {
        while true {
            let batch = state.withLock { $0.queue.takeBatch() }
            if batch.isEmpty { return }
            do {
                try push.acknowledge(batch)
                state.withLock { s in
                    s.queue.endCommit()
                    s.statistics.acknowledgementCommits += 1
                }
                options.onAcknowledged?(batch)
            } catch {
                state.withLock { $0.queue.endCommit() }
                if case StrataError.closed = error { return }
                logger.error("push delivery: the last acknowledgements could not be committed; they will be sent again",
                             metadata: ["error": "\(error)", "notifications": "\(batch.count)"])
                return
            }
        }
    }
}
