/// A mutex with one condition variable (pthread, through ``SystemCalls``), for the commit queue
/// and background work.
final class ConditionLock: @unchecked Sendable {
    // Heap-allocated so the pthread objects never move.
    private let mutex: UnsafeMutablePointer<SystemCalls.MutexStorage>
    private let condition: UnsafeMutablePointer<SystemCalls.ConditionStorage>

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        SystemCalls.initialize(mutex, condition)
    }

    deinit {
        SystemCalls.destroy(mutex, condition)
        mutex.deallocate()
        condition.deallocate()
    }

    func lock() { SystemCalls.lock(mutex) }
    func unlock() { SystemCalls.unlock(mutex) }
    /// Waits for a broadcast; the lock must be held, and is held again on return.
    func wait() { SystemCalls.wait(condition, mutex) }
    /// Waits at most `seconds`; returns false on timeout.
    @discardableResult
    func wait(seconds: Double) -> Bool { SystemCalls.wait(condition, mutex, seconds: seconds) }
    func broadcast() { SystemCalls.broadcast(condition) }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
