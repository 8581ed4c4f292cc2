import Dispatch
import Foundation
import Synchronization

/// A one-shot signal between threads, waited for with a generous bound so that a deadlock
/// fails a test instead of hanging the suite.
final class Signal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let fired = Mutex(false)

    func fire() {
        let first = fired.withLock { f -> Bool in
            defer { f = true }
            return !f
        }
        if first { semaphore.signal() }
    }

    /// Whether the signal fired within `seconds`.
    func wait(seconds: Double = 20) -> Bool {
        if semaphore.wait(timeout: .now() + seconds) == .timedOut { return false }
        semaphore.signal()  // stay fired for later waiters
        return true
    }
}

/// Runs `body` on a new thread and waits at most `seconds` for it: nil if it did not finish (a
/// deadlock; the thread is left behind), else its result.
func runBounded<R: Sendable>(seconds: Double = 20, _ body: @escaping @Sendable () throws -> R) -> Result<R, any Error>? {
    let result = Mutex<Result<R, any Error>?>(nil)
    let done = Signal()
    let thread = Thread {
        let r = Result { try body() }
        result.withLock { $0 = r }
        done.fire()
    }
    thread.stackSize = 4 << 20
    thread.start()
    guard done.wait(seconds: seconds) else { return nil }
    return result.withLock { $0 }
}
