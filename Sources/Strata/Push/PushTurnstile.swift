import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Lets one commit that changes push state through at a time, from a participant's `prepare`
/// to the instant the batch becomes visible (or fails): so that each commit's matching reads the
/// state every earlier commit left, and counters and item states reach the log in the order
/// they were computed. Writes of items nobody subscribes to never enter it.
final class PushTurnstile: Sendable {
    private let lock = ConditionLock()
    private let held = Mutex(false)

    /// Waits until no commit holds the turnstile, then holds it; the pass lets it go once.
    func enter() -> Pass {
        lock.withLock {
            while held.withLock({ $0 }) { lock.wait() }
            held.withLock { $0 = true }
        }
        return Pass(turnstile: self)
    }

    fileprivate func leave() {
        lock.withLock {
            held.withLock { $0 = false }
            lock.broadcast()
        }
    }

    /// A hold of the turnstile. ``leave()`` lets it go the first time it is called (a batch may
    /// reach both its visibility and its abort actions).
    final class Pass: Sendable {
        private let turnstile: PushTurnstile
        private let left = Atomic<Bool>(false)

        fileprivate init(turnstile: PushTurnstile) { self.turnstile = turnstile }

        func leave() {
            if !left.exchange(true, ordering: .acquiringAndReleasing) { turnstile.leave() }
        }
    }
}
