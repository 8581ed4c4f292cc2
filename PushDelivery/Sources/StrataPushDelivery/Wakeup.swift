import Synchronization

/// A signal one task waits for and any task gives: `signal()` wakes the waiter, or, when
/// nobody waits, makes the next `wait()` return at once (signals do not count; one is enough
/// to make the waiter look at the shared state again). Cancelling the waiter wakes it.
final class Wakeup: Sendable {
    private struct State {
        var signaled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// Wakes the waiter, or the next one.
    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { s in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.signaled = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns after a signal (at once if one came since the last wait) or when the task is
    /// cancelled. One waiter at a time.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = state.withLock { s in
                    if s.signaled || Task.isCancelled {
                        s.signaled = false
                        return true
                    }
                    s.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }
}
