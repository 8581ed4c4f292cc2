import Foundation
import Synchronization
@_spi(Layers) import StrataFormat

/// The one owner of an open file descriptor, with the path it was opened from. Every call goes
/// through ``SystemCalls`` (which retries `EINTR`), and every failure is a
/// ``StrataError/io(path:errno:operation:)`` naming the path and the call.
///
/// The descriptor is closed exactly once: by ``close()`` or, failing that, when the last reference
/// goes away. A call that is under way when another thread closes the file keeps the descriptor
/// open until it returns, so a number is never used after it may belong to another file; calls
/// that start after ``close()`` fail with `EBADF`.
package final class SystemFile: Sendable {
    package let path: String
    /// The store's environment, consulted on every call (IOEnvironment.swift).
    package let environment: IOEnvironment
    private let state: Mutex<State>

    private struct State {
        var descriptor: Int32
        /// Calls under way on `descriptor`.
        var users = 0
        var closeRequested = false
    }

    private init(descriptor: Int32, path: String, environment: IOEnvironment) {
        self.path = path
        self.environment = environment
        self.state = Mutex(State(descriptor: descriptor))
    }

    deinit { close() }

    /// The raw descriptor, or -1 once closed: only for the calls of ``SystemCalls`` this type does
    /// not wrap (`mmap`, `flock`), made while the caller keeps the file open.
    package var descriptor: Int32 { state.withLock { $0.closeRequested ? -1 : $0.descriptor } }

    package static func open(_ path: String, flags: OpenFlags, permissions: UInt32 = 0o644,
                             environment: IOEnvironment) throws -> SystemFile {
        try environment.check(.open, path)
        let fd = try failing(path, "open") { () throws(Errno) in
            try SystemCalls.open(path, flags, permissions: permissions)
        }
        if !flags.isDisjoint(with: [.create, .truncate]) { environment.report(.opened(path: path, descriptor: fd)) }
        return SystemFile(descriptor: fd, path: path, environment: environment)
    }

    /// Runs a system call, turning its `Errno` into a ``StrataError/io(path:errno:operation:)``.
    private static func failing<R>(_ path: String, _ op: String, _ call: () throws(Errno) -> R) throws -> R {
        do {
            return try call()
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: op)
        }
    }

    /// Runs `body` with the descriptor, which stays open until `body` returns.
    private func using<R>(_ op: String, _ body: (Int32) throws(Errno) -> R) throws -> R {
        let fd: Int32? = state.withLock { s in
            guard !s.closeRequested else { return nil }
            s.users += 1
            return s.descriptor
        }
        guard let fd else { throw StrataError.io(path: path, errno: Errno.badFileDescriptor.code, operation: op) }
        defer { release() }
        return try Self.failing(path, op) { () throws(Errno) in try body(fd) }
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
        if let fd { SystemCalls.close(fd) }
    }

    /// Writes all of `bytes` at the current offset.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        try environment.check(.write, path)
        try using("write") { (descriptor) throws(Errno) in
            try SystemCalls.writeAll(descriptor, bytes)
            environment.report(.wrote(path: path, descriptor: descriptor, count: bytes.count))
        }
    }

    package func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (b) in try write(b) }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    package func read(at offset: Int, count: Int) throws -> [UInt8] {
        try environment.check(.read, path)
        return try using("read") { (descriptor) throws(Errno) in
            var out = [UInt8](repeating: 0, count: count)
            var failure: Errno?
            let done = out.withUnsafeMutableBytes { buffer in
                do throws(Errno) {
                    return try SystemCalls.read(descriptor, into: buffer, at: offset)
                } catch {
                    failure = error
                    return 0
                }
            }
            if let failure { throw failure }
            out.removeLast(count - done)
            return out
        }
    }

    /// Reads into `buffer` from `offset` until it is full or the file ends; returns the count
    /// read (fewer only at the end of the file).
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        try environment.check(.read, path)
        return try using("read") { (descriptor) throws(Errno) in
            try SystemCalls.read(descriptor, into: buffer, at: offset)
        }
    }

    /// The file's data (and the size) on stable storage: ``SystemCalls/syncData(_:)``, which is
    /// `fdatasync` on Linux and `fcntl(F_FULLFSYNC)` on Darwin.
    package func sync() throws {
        try environment.check(.fsync, path)
        try using("fsync") { (descriptor) throws(Errno) in
            try SystemCalls.syncData(descriptor)
            environment.report(.synced(path: path, descriptor: descriptor))
        }
    }

    /// The file and its metadata; for a directory, the entries created, renamed or removed in
    /// it: ``SystemCalls/syncAll(_:)``, which is `fsync` on Linux and `fcntl(F_FULLFSYNC)` on Darwin.
    package func syncAll() throws {
        try environment.check(.fsync, path)
        try using("fsync") { (descriptor) throws(Errno) in try SystemCalls.syncAll(descriptor) }
    }

    package func truncate(to size: Int) throws {
        try environment.check(.ftruncate, path)
        try using("ftruncate") { (descriptor) throws(Errno) in
            try SystemCalls.truncate(descriptor, to: size)
            environment.report(.truncated(path: path, descriptor: descriptor, size: size))
        }
    }

    package func size() throws -> Int {
        try environment.check(.fstat, path)
        return try using("fstat") { (descriptor) throws(Errno) in try SystemCalls.size(descriptor) }
    }

    package func seekToEnd() throws {
        try using("lseek") { (descriptor) throws(Errno) in try SystemCalls.seekToEnd(descriptor) }
    }

    /// Closes the descriptor, at once or when the calls under way return. Later calls, a second
    /// `close()` included, do nothing to it.
    package func close() {
        release(closing: true)
    }

}

/// The file system as one store sees it: opening files and the directory-level operations (the
/// directory sync after creates, renames and deletes), every call through the store's
/// ``IOEnvironment``. An engine holds one (``EngineOptions/fileSystem``); tools that read files
/// without a store use ``real``.
package struct FileSystem: Sendable {
    package let environment: IOEnvironment

    /// The operating system's, with no faults and no observer.
    package static let real = FileSystem(environment: .real)

    package init(environment: IOEnvironment) {
        self.environment = environment
    }

    package func open(_ path: String, flags: OpenFlags, permissions: UInt32 = 0o644) throws -> SystemFile {
        try SystemFile.open(path, flags: flags, permissions: permissions, environment: environment)
    }

    /// Runs `body` with the file, closing it afterwards whatever happens.
    package func withFile<R>(
        _ path: String, flags: OpenFlags, permissions: UInt32 = 0o644,
        _ body: (SystemFile) throws -> R
    ) throws -> R {
        let file = try open(path, flags: flags, permissions: permissions)
        defer { file.close() }
        return try body(file)
    }

    package func syncDirectory(_ path: String) throws {
        let dir = try open(path, flags: [.readOnly, .directory])
        defer { dir.close() }
        try dir.syncAll()
        environment.report(.syncedDirectory(path: path))
    }

    package func rename(_ from: String, _ to: String) throws {
        try environment.check(.rename, to)
        do {
            try SystemCalls.rename(from, to)
        } catch {
            throw StrataError.io(path: to, errno: error.code, operation: "rename")
        }
        environment.report(.renamed(from: from, to: to))
    }

    /// Gives the file `from` names a second name, `to` (`link(2)`): both then name one file, whose
    /// data is not copied. Fails with `EXDEV` across file systems, and with `EPERM`, `ENOTSUP` or
    /// others where the file system has no hard links; `EEXIST` if `to` exists.
    package func link(_ from: String, _ to: String) throws {
        try environment.check(.link, to)
        do {
            try SystemCalls.link(from, to)
        } catch {
            throw StrataError.io(path: to, errno: error.code, operation: "link")
        }
        environment.report(.linked(from: from, to: to))
    }

    /// The absolute path of an existing file or directory, with symbolic links, `.` and `..`
    /// resolved (`realpath(3)`).
    package func realPath(_ path: String) throws -> String {
        try environment.check(.stat, path)
        do {
            return try SystemCalls.realPath(path)
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "realpath")
        }
    }

    package func remove(_ path: String) throws {
        try environment.check(.unlink, path)
        do {
            try SystemCalls.unlink(path)
            environment.report(.removed(path: path))
        } catch where error != .noSuchFileOrDirectory {
            throw StrataError.io(path: path, errno: error.code, operation: "unlink")
        } catch {}
    }

    /// Removes an empty directory.
    package func removeDirectory(_ path: String) throws {
        do {
            try SystemCalls.removeDirectory(path)
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "rmdir")
        }
    }

    package func createDirectory(_ path: String) throws {
        if let status = try? SystemCalls.status(path) {
            if status.isDirectory { return }
            throw StrataError.io(path: path, errno: Errno.notDirectory.code, operation: "mkdir")
        }
        // Create parents first, like `mkdir -p`.
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path && parent != "/" { try createDirectory(parent) }
        try environment.check(.mkdir, path)
        do {
            try SystemCalls.makeDirectory(path, permissions: 0o755)
        } catch where error == .fileExists {
            return
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "mkdir")
        }
        environment.report(.createdDirectory(path: path))
        // A new directory's entry is durable only once its parent is synced (FORMAT.md §9.1).
        try syncDirectory(parent.isEmpty ? "." : parent)
    }

    /// Whether `path` names something: false only when it does not exist (`ENOENT`, or
    /// `ENOTDIR` for a component that is not a directory); any other failure of `stat` (`EACCES`,
    /// `EIO`, …) is thrown, so that a file that cannot be seen is never taken for a missing one (a
    /// store whose manifest cannot be read is not a new store, and a destroy that cannot see its
    /// files does not report them gone).
    package func exists(_ path: String) throws -> Bool {
        try environment.check(.stat, path)
        do {
            _ = try SystemCalls.status(path)
            return true
        } catch where error == .noSuchFileOrDirectory || error == .notDirectory {
            return false
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "stat")
        }
    }

    /// Whether the existing `path` is a directory (following symbolic links).
    package func isDirectory(_ path: String) throws -> Bool {
        try environment.check(.stat, path)
        do {
            return try SystemCalls.status(path).isDirectory
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "stat")
        }
    }

    package func fileSize(_ path: String) throws -> Int {
        do {
            return try SystemCalls.status(path).size
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "stat")
        }
    }

    package func listDirectory(_ path: String) throws -> [String] {
        try environment.check(.readdir, path)
        do {
            return try SystemCalls.directoryEntries(path)
        } catch {
            throw StrataError.io(path: path, errno: error.code, operation: "opendir")
        }
    }

    /// Writes `bytes` to `path` atomically: a temporary file, synced, renamed over `path`,
    /// then the directory synced.
    package func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws {
        var mayHaveReplaced = false
        try writeAtomically(bytes, to: path, directory: directory, mayHaveReplaced: &mayHaveReplaced)
    }

    /// ``writeAtomically(_:to:directory:)``, telling a failure before the rename (`path` is
    /// surely unchanged) from one at or after it (`mayHaveReplaced` is true: `path` may hold the
    /// old bytes or the new ones, durably or not).
    package func writeAtomically(_ bytes: [UInt8], to path: String, directory: String,
                                mayHaveReplaced: inout Bool) throws {
        let temp = path + ".tmp"
        try withFile(temp, flags: [.writeOnly, .create, .truncate]) { (f) in
            try f.write(bytes)
            try f.sync()
        }
        // A failed rename may still have happened (EIO): from here on the outcome is unknown.
        mayHaveReplaced = true
        try rename(temp, path)
        try syncDirectory(directory)
    }
}
