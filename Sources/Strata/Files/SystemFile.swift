import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls Strata makes, named for error messages and fault injection.
enum IOOperation: String, Sendable {
    case open, read, write, fsync, ftruncate, fstat, close, rename, unlink, mkdir, mmap, flock, readdir
}

/// A test seam: when set, called before each system call; a non-nil result is returned as that
/// call's errno instead of making the call. Production code never sets it.
enum IOFaultInjection {
    nonisolated(unsafe) private static var hook: (@Sendable (IOOperation, String) -> Int32?)?
    private static let lock = NSLock()

    static func set(_ newHook: (@Sendable (IOOperation, String) -> Int32?)?) {
        lock.lock(); defer { lock.unlock() }
        hook = newHook
    }

    @inline(__always)
    static func check(_ op: IOOperation, _ path: String) throws {
        lock.lock()
        let h = hook
        lock.unlock()
        if let h, let code = h(op, path) { throw StrataError.io(path: path, errno: code, operation: op.rawValue) }
    }
}

/// The one owner of an open file descriptor, with the path it was opened from. Every call retries
/// `EINTR`, and every failure is a ``StrataError/io(path:errno:operation:)`` naming the path and
/// the call.
///
/// The descriptor is closed exactly once: by ``close()`` or, failing that, when the last reference
/// goes away. A call that is under way when another thread closes the file keeps the descriptor
/// open until it returns, so a number is never used after it may belong to another file; calls
/// that start after ``close()`` fail with `EBADF`.
package final class SystemFile: Sendable {
    let path: String
    private let state: Mutex<State>

    private struct State {
        var descriptor: Int32
        /// Calls under way on `descriptor`.
        var users = 0
        var closeRequested = false
    }

    private init(descriptor: Int32, path: String) {
        self.path = path
        self.state = Mutex(State(descriptor: descriptor))
    }

    deinit { close() }

    /// The raw descriptor, or -1 once closed: only for calls this type does not wrap (`mmap`,
    /// `flock`), made while the caller keeps the file open.
    var descriptor: Int32 { state.withLock { $0.closeRequested ? -1 : $0.descriptor } }

    static func open(_ path: String, flags: Int32, mode: mode_t = 0o644) throws -> SystemFile {
        try IOFaultInjection.check(.open, path)
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 {
                if flags & (O_CREAT | O_TRUNC) != 0 { IOObserver.report(.opened(path: path, descriptor: fd)) }
                return SystemFile(descriptor: fd, path: path)
            }
            if errno != EINTR { throw StrataError.io(path: path, errno: errno, operation: "open") }
        }
    }

    /// Runs `body` with the descriptor, which stays open until `body` returns.
    private func using<R>(_ op: String, _ body: (Int32) throws -> R) throws -> R {
        let fd: Int32? = state.withLock { s in
            guard !s.closeRequested else { return nil }
            s.users += 1
            return s.descriptor
        }
        guard let fd else { throw StrataError.io(path: path, errno: EBADF, operation: op) }
        defer { release() }
        return try body(fd)
    }

    /// Ends a call or a close; whichever comes last closes the descriptor.
    private func release(closing: Bool = false) {
        let fd: Int32? = state.withLock { s in
            if closing {
                guard !s.closeRequested else { return nil }
                s.closeRequested = true
            } else {
                s.users -= 1
            }
            guard s.closeRequested, s.users == 0, s.descriptor >= 0 else { return nil }
            defer { s.descriptor = -1 }
            return s.descriptor
        }
        if let fd { _ = Glibc.close(fd) }  // not retried on EINTR on Linux: the fd is gone either way
    }

    /// Writes all of `bytes` at the current offset.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        try IOFaultInjection.check(.write, path)
        try using("write") { descriptor in
            var done = 0
            while done < bytes.count {
                let n = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw StrataError.io(path: path, errno: errno, operation: "write")
                }
                done += n
            }
            IOObserver.report(.wrote(path: path, descriptor: descriptor, count: bytes.count))
        }
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (b) in try write(b) }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    package func read(at offset: Int, count: Int) throws -> [UInt8] {
        try IOFaultInjection.check(.read, path)
        return try using("read") { descriptor in
            var out = [UInt8](repeating: 0, count: count)
            var done = 0
            let err: Int32? = out.withUnsafeMutableBytes { buf in
                while done < count {
                    let n = pread(descriptor, buf.baseAddress! + done, count - done, off_t(offset + done))
                    if n < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    if n == 0 { break }
                    done += n
                }
                return nil
            }
            if let err { throw StrataError.io(path: path, errno: err, operation: "read") }
            out.removeLast(count - done)
            return out
        }
    }

    /// `fdatasync`: the file's data (and the size) on stable storage.
    func sync() throws {
        try IOFaultInjection.check(.fsync, path)
        try using("fsync") { descriptor in
            while fdatasync(descriptor) != 0 {
                if errno != EINTR { throw StrataError.io(path: path, errno: errno, operation: "fsync") }
            }
            IOObserver.report(.synced(path: path, descriptor: descriptor))
        }
    }

    /// `fsync`: the file and its metadata; for a directory, the entries created, renamed or
    /// removed in it.
    func syncAll() throws {
        try IOFaultInjection.check(.fsync, path)
        try using("fsync") { descriptor in
            while fsync(descriptor) != 0 {
                if errno != EINTR { throw StrataError.io(path: path, errno: errno, operation: "fsync") }
            }
        }
    }

    func truncate(to size: Int) throws {
        try IOFaultInjection.check(.ftruncate, path)
        try using("ftruncate") { descriptor in
            while ftruncate(descriptor, off_t(size)) != 0 {
                if errno != EINTR { throw StrataError.io(path: path, errno: errno, operation: "ftruncate") }
            }
            IOObserver.report(.truncated(path: path, descriptor: descriptor, size: size))
        }
    }

    package func size() throws -> Int {
        try IOFaultInjection.check(.fstat, path)
        return try using("fstat") { descriptor in
            var st = stat()
            guard fstat(descriptor, &st) == 0 else { throw StrataError.io(path: path, errno: errno, operation: "fstat") }
            return Int(st.st_size)
        }
    }

    func seekToEnd() throws {
        try using("lseek") { descriptor in
            if lseek(descriptor, 0, SEEK_END) < 0 { throw StrataError.io(path: path, errno: errno, operation: "lseek") }
        }
    }

    /// Closes the descriptor, at once or when the calls under way return. Later calls, a second
    /// `close()` included, do nothing to it.
    func close() {
        release(closing: true)
    }

    /// Runs `body` with the file, closing it afterwards whatever happens.
    package static func withFile<R>(
        _ path: String, flags: Int32, mode: mode_t = 0o644,
        _ body: (SystemFile) throws -> R
    ) throws -> R {
        let file = try open(path, flags: flags, mode: mode)
        defer { file.close() }
        return try body(file)
    }
}

/// Directory-level operations: the directory sync after creates, renames and deletes.
package enum FileSystem {
    static func syncDirectory(_ path: String) throws {
        let dir = try SystemFile.open(path, flags: O_RDONLY | O_DIRECTORY)
        defer { dir.close() }
        try dir.syncAll()
        IOObserver.report(.syncedDirectory(path: path))
    }

    static func rename(_ from: String, _ to: String) throws {
        try IOFaultInjection.check(.rename, to)
        if Glibc.rename(from, to) != 0 { throw StrataError.io(path: to, errno: errno, operation: "rename") }
        IOObserver.report(.renamed(from: from, to: to))
    }

    static func remove(_ path: String) throws {
        try IOFaultInjection.check(.unlink, path)
        if unlink(path) == 0 {
            IOObserver.report(.removed(path: path))
        } else if errno != ENOENT {
            throw StrataError.io(path: path, errno: errno, operation: "unlink")
        }
    }

    static func createDirectory(_ path: String) throws {
        var st = stat()
        if stat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR { return }
            throw StrataError.io(path: path, errno: ENOTDIR, operation: "mkdir")
        }
        // Create parents first, like `mkdir -p`.
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path && parent != "/" { try createDirectory(parent) }
        try IOFaultInjection.check(.mkdir, path)
        if mkdir(path, 0o755) == 0 {
            IOObserver.report(.createdDirectory(path: path))
            // A new directory's entry is durable only once its parent is synced (FORMAT.md §9.1).
            try syncDirectory(parent.isEmpty ? "." : parent)
        } else if errno != EEXIST {
            throw StrataError.io(path: path, errno: errno, operation: "mkdir")
        }
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    static func fileSize(_ path: String) throws -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { throw StrataError.io(path: path, errno: errno, operation: "stat") }
        return Int(st.st_size)
    }

    package static func listDirectory(_ path: String) throws -> [String] {
        try IOFaultInjection.check(.readdir, path)
        guard let dir = opendir(path) else { throw StrataError.io(path: path, errno: errno, operation: "opendir") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Writes `bytes` to `path` atomically: a temporary file, synced, renamed over `path`,
    /// then the directory synced.
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws {
        var mayHaveReplaced = false
        try writeAtomically(bytes, to: path, directory: directory, mayHaveReplaced: &mayHaveReplaced)
    }

    /// ``writeAtomically(_:to:directory:)``, telling a failure before the rename (`path` is
    /// surely unchanged) from one at or after it (`mayHaveReplaced` is true: `path` may hold the
    /// old bytes or the new ones, durably or not).
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String,
                                mayHaveReplaced: inout Bool) throws {
        let temp = path + ".tmp"
        try SystemFile.withFile(temp, flags: O_WRONLY | O_CREAT | O_TRUNC) { (f) in
            try f.write(bytes)
            try f.sync()
        }
        // A failed rename may still have happened (EIO): from here on the outcome is unknown.
        mayHaveReplaced = true
        try rename(temp, path)
        try syncDirectory(directory)
    }
}
