#if canImport(Glibc)
import Glibc
#endif

/// A mutex with one condition variable (pthread), for the commit queue and background work.
final class ConditionLock: @unchecked Sendable {
    // Heap-allocated so the pthread objects never move.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for a broadcast; the lock must be held, and is held again on return.
    func wait() { pthread_cond_wait(condition, mutex) }
    /// Waits at most `seconds`; returns false on timeout.
    @discardableResult
    func wait(seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + seconds
        var deadline = timespec(tv_sec: Int(total), tv_nsec: Int((total - Double(Int(total))) * 1e9))
        return pthread_cond_timedwait(condition, mutex, &deadline) == 0
    }
    func broadcast() { pthread_cond_broadcast(condition) }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
