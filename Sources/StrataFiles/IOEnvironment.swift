import Synchronization
@_spi(Layers) import StrataFormat

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
    /// `link` gave the file named `from` a second name, `to`.
    case linked(from: String, to: String)
    case removed(path: String)
    /// A sync of a directory returned (``SystemCalls/syncAll(_:)``).
    case syncedDirectory(path: String)
    case createdDirectory(path: String)
}

/// The system calls Strata makes, named for error messages and fault injection.
package enum IOOperation: String, Sendable {
    case open, read, write, fsync, ftruncate, fstat, stat, close, rename, link, unlink, mkdir, mmap, flock, readdir
}

/// A store's environment of the system-call seam (LevelDB's `Env`, Pebble's `vfs.FS`): what
/// every ``SystemFile`` and ``FileSystem`` call of that store consults besides the OS. Each store
/// or engine has its own (``FileSystem/environment``), so that tests injecting faults into one
/// store run beside others, and the real one, ``real``, costs a `nil` check per call.
package struct IOEnvironment: Sendable {
    /// Consulted before each system call: an error number it returns is that call's failure,
    /// and the call is not made.
    package var faults: IOFaults?
    /// Told of each successful system call that changes files, right after it returns and on
    /// the thread that made it (the power-loss simulator of the tests records what is durable
    /// from it).
    package var observer: (@Sendable (IOEvent) -> Void)?

    /// The operating system alone: no faults, no observer.
    package static let real = IOEnvironment()

    package init(faults: IOFaults? = nil, observer: (@Sendable (IOEvent) -> Void)? = nil) {
        self.faults = faults
        self.observer = observer
    }

    /// Throws the fault injected for `op` on `path`, if any.
    @inlinable @inline(__always)
    package func check(_ op: IOOperation, _ path: String) throws {
        guard let faults else { return }
        if let code = faults.errorNumber(op, path) {
            throw StrataError.io(path: path, errno: code, operation: op.rawValue)
        }
    }

    @inlinable @inline(__always)
    package func report(_ event: @autoclosure () -> IOEvent) {
        guard let observer else { return }
        observer(event())
    }
}

/// A switchable fault hook for one environment: a test installs a hook for a stretch of a
/// workload (``set(_:)``) and removes it. Only test environments have one.
package final class IOFaults: Sendable {
    private let hook: Mutex<(@Sendable (IOOperation, String) -> Int32?)?>

    package init(_ hook: (@Sendable (IOOperation, String) -> Int32?)? = nil) {
        self.hook = Mutex(hook)
    }

    package func set(_ newHook: (@Sendable (IOOperation, String) -> Int32?)?) {
        hook.withLock { $0 = newHook }
    }

    /// Installs `newHook`, runs `body`, removes the hook.
    package func with<R>(_ newHook: @escaping @Sendable (IOOperation, String) -> Int32?, _ body: () throws -> R) rethrows -> R {
        set(newHook)
        defer { set(nil) }
        return try body()
    }

    /// The error number the hook injects for `op` on `path`, or nil to make the call.
    package func errorNumber(_ op: IOOperation, _ path: String) -> Int32? {
        hook.withLock { $0 }?(op, path)
    }
}
