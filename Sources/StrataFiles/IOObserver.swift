import Synchronization
import StrataFormat

/// A change to the file system that a system call has just made, as reported to ``IOObserver``.
package enum IOEvent: Sendable {
    /// `open` with `O_CREAT` or `O_TRUNC` returned `descriptor`: `path` may be a new or emptied file.
    case opened(path: String, descriptor: Int32)
    /// `write` handed `count` bytes to the OS.
    case wrote(path: String, descriptor: Int32, count: Int)
    /// A data sync of a file returned (``SystemCalls/syncData(_:)``: `fdatasync`, or
    /// `F_FULLFSYNC` on Darwin).
    case synced(path: String, descriptor: Int32)
    /// `ftruncate` to `size` returned.
    case truncated(path: String, descriptor: Int32, size: Int)
    case renamed(from: String, to: String)
    case removed(path: String)
    /// A sync of a directory returned (``SystemCalls/syncAll(_:)``).
    case syncedDirectory(path: String)
    case createdDirectory(path: String)
}

/// A test seam: when set, told of each successful system call that changes files, right after it
/// returns and on the thread that made it (the power-loss simulator of the tests records what is
/// durable from it). Production code never sets it; unset, a report costs one relaxed atomic load.
package enum IOObserver {
    private static let active = Atomic<Bool>(false)
    private static let observer = Mutex<(@Sendable (IOEvent) -> Void)?>(nil)

    package static func set(_ newObserver: (@Sendable (IOEvent) -> Void)?) {
        observer.withLock {
            $0 = newObserver
            active.store(newObserver != nil, ordering: .relaxed)
        }
    }

    @inline(__always)
    package static func report(_ event: @autoclosure () -> IOEvent) {
        guard active.load(ordering: .relaxed) else { return }
        deliver(event())
    }

    @inline(never)
    private static func deliver(_ event: IOEvent) {
        guard let o = observer.withLock({ $0 }) else { return }
        o(event)
    }
}
