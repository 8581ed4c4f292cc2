import Dispatch
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// The one deliverer of commits to stream subscribers: time-series subscriptions, channels' live
/// messages, live queries and document change streams are all subscriptions of the store's one
/// broadcaster.
///
/// The engine hands it every commit that carries logical changes, under its lock and in commit
/// order (``Engine/setCommitObserver(_:)``); the broadcaster queues it and delivers it on a
/// serial queue of its own, off the writer's critical path, so subscribers see commits in commit
/// order. Each subscription filters and decodes a commit into its stream's elements with its
/// `transform`, and has a bounded buffer: when a subscriber falls that far behind, its stream
/// ends by throwing ``StrataError/subscriberOverflow(_:)`` (never grows, never skips silently).
/// When the store closes, every stream ends by throwing ``StrataError/closed``; when the engine
/// fails, by throwing its failure.
///
/// Subscribing atomically with a collection's writes: a collection computes the stream's initial
/// elements from a snapshot at sequence `s` while it holds its writer lock, and subscribes with
/// `after: s`; commits at or below `s` (already in the snapshot, perhaps still queued here) are
/// then skipped, and every later commit of the collection is delivered.
package final class CommitBroadcaster: Sendable {
    /// How a subscription's stream buffers elements its consumer has not taken yet.
    package enum Buffering: Sendable {
        /// At most this many; one more ends the stream with ``StrataError/subscriberOverflow(_:)``.
        case bounded(Int)
        /// Only the newest element (a live query's result supersedes the one before): never
        /// overflows.
        case newest
    }

    /// Thrown by a transform to end its stream normally (e.g. a live query whose index was
    /// dropped).
    package struct EndOfStream: Error {

    package init() {
    }
}

    private final class Subscription: Sendable {
        let after: UInt64
        /// Delivers a commit; false when the stream has ended (remove it).
        let deliver: @Sendable (Commit) -> Bool
        let finish: @Sendable (StrataError) -> Void

        init(after: UInt64, deliver: @escaping @Sendable (Commit) -> Bool,
             finish: @escaping @Sendable (StrataError) -> Void) {
            self.after = after
            self.deliver = deliver
            self.finish = finish
        }
    }

    private struct Registry {
        var all: [UInt64: Subscription] = [:]
        var nextToken: UInt64 = 0
        /// Why new subscriptions are refused: the store closed or the engine failed.
        var refusal: StrataError?
    }

    private let registry = Mutex(Registry())
    /// `registry.all.count`, read without the lock on every commit.
    private let subscriberCount = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "strata.broadcast")
    private let queueKey = DispatchSpecificKey<Bool>()

    package init() {
        queue.setSpecific(key: queueKey, value: true)
    }

    /// Whether any stream is subscribed (a writer then includes what subscribers decode in its
    /// commit's changes).
    package var hasSubscribers: Bool { subscriberCount.load(ordering: .relaxed) > 0 }

    /// Whether a commit of collection `name` of `kind` must describe its changes: someone
    /// subscribes, or a participant of `engine` wants this collection's
    /// (``CommitParticipant/wantsChanges(of:name:)``). Collections skip building the description
    /// otherwise.
    package func wantsChanges(of engine: Engine, kind: CollectionKind, name: String) -> Bool {
        hasSubscribers || engine.participantsWantChanges(of: kind, name: name)
    }

    /// The number of live subscriptions (for tests and tools).
    package var count: Int { subscriberCount.load(ordering: .relaxed) }

    /// Queues `commit` for delivery. Called by the engine under its lock, in commit order.
    package func publish(_ commit: Commit) {
        guard hasSubscribers else { return }
        queue.async { [self] in deliver(commit) }
    }

    /// Queues changes that come from no commit (an index rebuilt or dropped), delivered in order
    /// with the commits around them to every subscriber.
    package func notify(_ changes: [any CommitChange]) {
        guard hasSubscribers else { return }
        queue.async { [self] in deliver(Commit(sequence: .max, changes: changes)) }
    }

    /// Runs `body` on the delivery queue (directly when already on it), so that nothing is
    /// delivered meanwhile.
    package func synchronized<R>(_ body: () throws -> R) rethrows -> R {
        if DispatchQueue.getSpecific(key: queueKey) == true { return try body() }
        return try queue.sync { try body() }
    }

    /// Waits until every commit queued so far has been delivered (for tests).
    package func waitForDeliveries() {
        synchronized {}
    }

    private func deliver(_ commit: Commit) {
        let all = registry.withLock { Array($0.all) }
        for (token, subscription) in all where commit.sequence > subscription.after {
            if !subscription.deliver(commit) { remove(token) }
        }
    }

    private func remove(_ token: UInt64) {
        registry.withLock { r in
            r.all[token] = nil
            subscriberCount.store(r.all.count, ordering: .relaxed)
        }
    }

    /// A stream that first yields what `initial` returns, then the elements `transform` makes of
    /// every commit after sequence `after`, in commit order.
    ///
    /// `initial` runs once the subscription is registered, before anything is delivered to it
    /// from the queue only if the caller keeps deliveries out (by holding the writer lock of the
    /// collection every relevant commit needs, or by calling from ``synchronized(_:)``); a commit
    /// that became visible before it ran was either queued after the registration (and is
    /// delivered) or is in what it reads.
    ///
    /// `transform` runs on the delivery queue; it returns no elements for a commit that does not
    /// concern the stream, throws ``EndOfStream`` to end it normally, or throws an error to end it
    /// by throwing that error. `overflow` describes the subscriber for the overflow error.
    ///
    /// - Throws: ``StrataError/closed`` after the store closed, or the engine's failure.
    package func subscribe<Element: Sendable>(
        after: UInt64, buffering: Buffering, initial: () throws -> [Element] = { [] },
        overflow: @escaping @Sendable () -> String,
        transform: @escaping @Sendable (Commit) throws -> [Element]
    ) throws -> AsyncThrowingStream<Element, any Error> {
        if let refusal = registry.withLock({ $0.refusal }) { throw refusal }
        // The stream is made once `initial` has run (its size is part of the bound); nothing is
        // delivered before (see above), and the sink is empty until then.
        let sink = Mutex<AsyncThrowingStream<Element, any Error>.Continuation?>(nil)
        let subscription = Subscription(
            after: after,
            deliver: { commit in
                let elements: [Element]
                do {
                    elements = try transform(commit)
                } catch is EndOfStream {
                    sink.withLock { $0 }?.finish()
                    return false
                } catch {
                    sink.withLock { $0 }?.finish(throwing: error)
                    return false
                }
                guard !elements.isEmpty, let continuation = sink.withLock({ $0 }) else { return true }
                for element in elements {
                    switch continuation.yield(element) {
                    case .enqueued: continue
                    case .dropped:
                        // Under `.newest` the superseded element is dropped, as meant.
                        if case .newest = buffering { continue }
                        continuation.finish(throwing: StrataError.subscriberOverflow(overflow()))
                        return false
                    case .terminated:
                        return false
                    @unknown default:
                        return false
                    }
                }
                return true
            },
            finish: { error in sink.withLock { $0 }?.finish(throwing: error) })
        let token = try registry.withLock { r -> UInt64 in
            if let refusal = r.refusal { throw refusal }
            r.nextToken += 1
            r.all[r.nextToken] = subscription
            subscriberCount.store(r.all.count, ordering: .relaxed)
            return r.nextToken
        }
        let first: [Element]
        do {
            first = try initial()
        } catch {
            remove(token)
            throw error
        }
        let policy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy
        switch buffering {
        case .bounded(let n):
            let (sum, overflowed) = max(1, n).addingReportingOverflow(first.count)
            policy = .bufferingOldest(overflowed ? .max : sum)
        case .newest: policy = .bufferingNewest(1)
        }
        let (stream, continuation) = AsyncThrowingStream<Element, any Error>.makeStream(bufferingPolicy: policy)
        for element in first { continuation.yield(element) }
        continuation.onTermination = { [weak self] _ in self?.remove(token) }
        sink.withLock { $0 = continuation }
        // Ended (closed or failed) while `initial` ran: its finish found no sink.
        if registry.withLock({ $0.all[token] == nil }), let refusal = registry.withLock({ $0.refusal }) {
            continuation.finish(throwing: refusal)
        }
        return stream
    }

    /// Ends every stream by throwing `error` once the commits queued before are delivered, and
    /// refuses later subscriptions with it: ``StrataError/closed`` when the store closes (which
    /// replaces an earlier failure as the refusal), the engine's failure when it fails.
    package func finishAll(throwing error: StrataError) {
        registry.withLock { r in
            if error == .closed || r.refusal == nil { r.refusal = error }
        }
        queue.async { [self] in
            let all = registry.withLock { r -> [Subscription] in
                defer {
                    r.all.removeAll()
                    subscriberCount.store(0, ordering: .relaxed)
                }
                return Array(r.all.values)
            }
            for s in all { s.finish(error) }
        }
    }
}
