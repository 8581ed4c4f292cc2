import Synchronization

/// Wakes a replication's push when its collection has something new to upload: a counter that
/// writers bump after a commit that adds to the outbox, and that the push waits on.
///
/// A bump may come before its commit is visible (a transaction stages before it commits); the
/// push then finds nothing new and waits again, so every wait is also bounded by a timeout after
/// which the push looks again.
final class ReplicationSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The current generation, to wait past.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Something new: wakes every waiter.
    func bump() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.generation &+= 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the generation is past `generation`, after `timeout`, or when the task is
    /// cancelled, whichever comes first.
    func wait(after generation: UInt64, timeout: Duration) async {
        let token = state.withLock { s -> UInt64 in
            s.nextWaiter &+= 1
            return s.nextWaiter
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.resume(token)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { s -> Bool in
                    if s.generation != generation || Task.isCancelled { return true }
                    s.waiters[token] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            resume(token)
        }
    }

    private func resume(_ token: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: token) }?.resume()
    }
}
