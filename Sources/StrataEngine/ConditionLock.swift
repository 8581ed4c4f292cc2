@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A mutex with one condition variable (pthread, through ``SystemCalls``), for the commit queue
/// and background work.
package final class ConditionLock: @unchecked Sendable {
    // Heap-allocated so the pthread objects never move.
    private let mutex: UnsafeMutablePointer<SystemCalls.MutexStorage>
    private let condition: UnsafeMutablePointer<SystemCalls.ConditionStorage>

    package init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        SystemCalls.initialize(mutex, condition)
    }

    deinit {
        SystemCalls.destroy(mutex, condition)
        mutex.deallocate()
        condition.deallocate()
    }

    package func lock() { SystemCalls.lock(mutex) }
    package func unlock() { SystemCalls.unlock(mutex) }
    /// Waits for a broadcast; the lock must be held, and is held again on return.
    package func wait() { SystemCalls.wait(condition, mutex) }
    /// Waits at most `seconds`; returns false on timeout.
    @discardableResult
    package func wait(seconds: Double) -> Bool { SystemCalls.wait(condition, mutex, seconds: seconds) }
    package func broadcast() { SystemCalls.broadcast(condition) }

    package func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
