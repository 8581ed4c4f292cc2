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

/// Awaits `body` (run in a task of its own) at most `seconds`: nil if it did not finish (a hang;
/// the task is left behind), else its result. For `async` code, what ``runBounded(seconds:_:)``
/// is for threads: a guard against hanging the suite, not a measure of speed.
func awaitBounded<R: Sendable>(seconds: Double = 20,
                               _ body: @escaping @Sendable () async throws -> R) async -> Result<R, any Error>? {
    let waiter = BoundedWaiter<R>()
    return await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, any Error>?, Never>) in
        waiter.continuation.withLock { $0 = continuation }
        let timer = Task {
            do { try await Task.sleep(for: .seconds(seconds)) } catch { return }  // cancelled: body finished
            waiter.resume(nil)
        }
        Task {
            let result: Result<R, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            waiter.resume(result)
            timer.cancel()
        }
    }
}

/// The continuation of ``awaitBounded(seconds:_:)``, resumed by whichever comes first.
private final class BoundedWaiter<R: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<Result<R, any Error>?, Never>?>(nil)

    func resume(_ result: Result<R, any Error>?) {
        continuation.withLock { $0.take() }?.resume(returning: result)
    }
}
