// The one file of the library that talks to the operating system (README, "Platforms").
//
// Everything Strata asks of the OS — files, directories, mappings, the store lock, the
// condition variable of the commit queue, errno and its messages — goes through `SystemCalls`,
// so that a port to another system is a change to this file alone. Every other file of the
// library imports nothing OS-specific. The calls here are thin: they retry `EINTR` and turn a
// failure into an `Errno`; naming the path, fault injection and the `IOObserver` reports are the
// business of `SystemFile` and `FileSystem` above them.
//
// Durability differs by platform. On Linux `fdatasync` and `fsync` reach stable storage. On
// Darwin `fsync` only hands the data to the drive, whose cache may lose it at a power cut; only
// `fcntl(F_FULLFSYNC)` asks the drive to flush, so both syncs use it there, falling back to
// `fsync` when the file system does not support it.

@_spi(Layers) import StrataFormat

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Strata has no system-call branch for this platform: add one to Files/SystemCalls.swift")
#endif

/// An error number of a failed system call, with the ones Strata tells apart named.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    package let code: Int32

    package init(code: Int32) { self.code = code }

    /// The calling thread's `errno`, right after a call failed.
    package static var current: Errno {
        #if canImport(Glibc)
        Errno(code: Glibc.errno)
        #else
        Errno(code: Darwin.errno)
        #endif
    }

    package static let interrupted = Errno(code: EINTR)
    package static let badFileDescriptor = Errno(code: EBADF)
    package static let noSuchFileOrDirectory = Errno(code: ENOENT)
    package static let ioError = Errno(code: EIO)
    package static let notDirectory = Errno(code: ENOTDIR)
    package static let fileExists = Errno(code: EEXIST)
    package static let wouldBlock = Errno(code: EWOULDBLOCK)
    package static let noSpace = Errno(code: ENOSPC)
    package static let notSupported = Errno(code: ENOTSUP)
    package static let invalidArgument = Errno(code: EINVAL)
    package static let inappropriateIOControl = Errno(code: ENOTTY)
    package static let crossDevice = Errno(code: EXDEV)
    package static let notPermitted = Errno(code: EPERM)

    /// The failures of `link(2)` that say no second name can be made here, where a copy will do:
    /// across file systems (`EXDEV`), on a file system without hard links (`EPERM`, `ENOTSUP`,
    /// `EOPNOTSUPP`, `ENOSYS`), or with too many links to the file already (`EMLINK`).
    package static let hardLinkRefusals: Set<Errno> = [
        crossDevice, notPermitted, notSupported, Errno(code: EOPNOTSUPP), Errno(code: ENOSYS), Errno(code: EMLINK),
    ]

    /// The system's message for an error number (`strerror`).
    package static func message(_ code: Int32) -> String { StrataError.systemMessage(code) }

    package var description: String { Errno.message(code) }
}

/// The `open(2)` flags Strata uses, spelled the same on every platform. `O_CLOEXEC` is always
/// added. ``readOnly`` is the empty set (its raw value, `O_RDONLY`, is 0 everywhere).
package struct OpenFlags: OptionSet, Sendable {
    package let rawValue: Int32

    package init(rawValue: Int32) { self.rawValue = rawValue }

    package static let readOnly = OpenFlags(rawValue: O_RDONLY)
    package static let writeOnly = OpenFlags(rawValue: O_WRONLY)
    package static let readWrite = OpenFlags(rawValue: O_RDWR)
    package static let create = OpenFlags(rawValue: O_CREAT)
    package static let truncate = OpenFlags(rawValue: O_TRUNC)
    package static let exclusive = OpenFlags(rawValue: O_EXCL)
    package static let append = OpenFlags(rawValue: O_APPEND)
    package static let directory = OpenFlags(rawValue: O_DIRECTORY)
}

/// What `stat(2)` says about a path, as far as Strata needs it.
package struct FileStatus: Sendable {
    package enum Kind: Sendable { case regularFile, directory, other }

    package var kind: Kind
    package var size: Int

    package var isDirectory: Bool { kind == .directory }

    package init(kind: Kind, size: Int) {
        self.kind = kind
        self.size = size
    }
}

/// The system calls, one thin function each. Each retries `EINTR` (but for `close`), and throws
/// the `errno` of a failure.
package enum SystemCalls {
    // MARK: - Descriptors

    package static func open(_ path: String, _ flags: OpenFlags, permissions: UInt32) throws(Errno) -> Int32 {
        while true {
            let fd = callOpen(path, flags.rawValue | O_CLOEXEC, mode_t(permissions))
            if fd >= 0 { return fd }
            let e = Errno.current
            if e != .interrupted { throw e }
        }
    }

    /// Not retried on `EINTR`: on Linux and Darwin the descriptor is released either way, and a
    /// retry could close a number another thread has just been given.
    package static func close(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    /// Writes all of `bytes` at the current offset (or at the end, with ``OpenFlags/append``).
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = callWrite(fd, base + done, bytes.count - done)
            if n < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                throw e
            }
            done += n
        }
    }

    /// Reads into `buffer` from `offset` until it is full or the file ends; returns the count read.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = pread(fd, base + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                throw e
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// The file's data, and the metadata needed to read it back (its size), on stable storage:
    /// `fdatasync` on Linux, `fcntl(F_FULLFSYNC)` on Darwin.
    package static func syncData(_ fd: Int32) throws(Errno) {
        #if canImport(Glibc)
        try retrying { fdatasync(fd) }
        #else
        try fullSync(fd)
        #endif
    }

    /// The file and all its metadata on stable storage; for a directory, the entries created,
    /// renamed or removed in it: `fsync` on Linux, `fcntl(F_FULLFSYNC)` on Darwin.
    package static func syncAll(_ fd: Int32) throws(Errno) {
        #if canImport(Glibc)
        try retrying { fsync(fd) }
        #else
        try fullSync(fd)
        #endif
    }

    #if !canImport(Glibc)
    /// Darwin's `fsync` leaves the data in the drive's cache; `F_FULLFSYNC` also flushes that.
    /// A file system that does not implement it (some network and FUSE ones) answers `ENOTSUP`,
    /// `EINVAL` or `ENOTTY`; only then `fsync` is the best there is. Any other failure (`EIO`)
    /// is the sync's failure and is never papered over by a later `fsync`.
    private static func fullSync(_ fd: Int32) throws(Errno) {
        while fcntl(fd, F_FULLFSYNC) == -1 {
            let e = Errno.current
            if e == .interrupted { continue }
            guard e == .notSupported || e == .invalidArgument || e == .inappropriateIOControl else { throw e }
            try retrying { fsync(fd) }
            return
        }
    }
    #endif

    package static func truncate(_ fd: Int32, to size: Int) throws(Errno) {
        try retrying { ftruncate(fd, off_t(size)) }
    }

    package static func size(_ fd: Int32) throws(Errno) -> Int {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Errno.current }
        return Int(st.st_size)
    }

    package static func seekToEnd(_ fd: Int32) throws(Errno) {
        if lseek(fd, 0, SEEK_END) < 0 { throw Errno.current }
    }

    // MARK: - Paths

    package static func rename(_ from: String, _ to: String) throws(Errno) {
        #if canImport(Glibc)
        if Glibc.rename(from, to) != 0 { throw Errno.current }
        #else
        if Darwin.rename(from, to) != 0 { throw Errno.current }
        #endif
    }

    /// `link(2)`: a second name, `to`, for the file `from` names (both on one file system, or
    /// `EXDEV`). `to` must not exist.
    package static func link(_ from: String, _ to: String) throws(Errno) {
        #if canImport(Glibc)
        if Glibc.link(from, to) != 0 { throw Errno.current }
        #else
        if Darwin.link(from, to) != 0 { throw Errno.current }
        #endif
    }

    /// `realpath(3)`: the absolute path of an existing file or directory, every symbolic link,
    /// `.` and `..` resolved.
    package static func realPath(_ path: String) throws(Errno) -> String {
        guard let resolved = realpath(path, nil) else { throw Errno.current }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    package static func unlink(_ path: String) throws(Errno) {
        #if canImport(Glibc)
        if Glibc.unlink(path) != 0 { throw Errno.current }
        #else
        if Darwin.unlink(path) != 0 { throw Errno.current }
        #endif
    }

    package static func removeDirectory(_ path: String) throws(Errno) {
        if rmdir(path) != 0 { throw Errno.current }
    }

    package static func makeDirectory(_ path: String, permissions: UInt32) throws(Errno) {
        #if canImport(Glibc)
        if Glibc.mkdir(path, mode_t(permissions)) != 0 { throw Errno.current }
        #else
        if Darwin.mkdir(path, mode_t(permissions)) != 0 { throw Errno.current }
        #endif
    }

    /// `stat(2)` of a path, following symbolic links.
    package static func status(_ path: String) throws(Errno) -> FileStatus {
        var st = stat()
        guard stat(path, &st) == 0 else { throw Errno.current }
        let kind: FileStatus.Kind
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regularFile
        case S_IFDIR: kind = .directory
        default: kind = .other
        }
        return FileStatus(kind: kind, size: Int(st.st_size))
    }

    /// The names in a directory, without `.` and `..`, in no particular order.
    package static func directoryEntries(_ path: String) throws(Errno) -> [String] {
        guard let dir = opendir(path) else { throw Errno.current }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // `d_name` is a fixed array of C characters: 256 on Linux, 1024 on Darwin.
            let name = withUnsafePointer(to: entry.pointee.d_name) { field in
                field.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: field.pointee)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    // MARK: - Locks and processes

    /// `flock(LOCK_EX | LOCK_NB)`: throws ``Errno/wouldBlock`` when another open file holds it.
    package static func lockExclusive(_ fd: Int32) throws(Errno) {
        try retrying { flock(fd, LOCK_EX | LOCK_NB) }
    }

    package static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
    }

    package static var processID: Int32 { getpid() }

    // MARK: - Mappings

    /// Maps `count` bytes of a file read-only and shared. The file must be at least that long
    /// and must never shrink while mapped (a touch past its end is a SIGBUS).
    package static func mapReadOnly(_ fd: Int32, count: Int) throws(Errno) -> UnsafeRawBufferPointer {
        guard let p = mmap(nil, count, PROT_READ, MAP_SHARED, fd, 0),
              p != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED
        else { throw Errno.current }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(p), count: count)
    }

    package static func unmap(_ mapping: UnsafeRawBufferPointer) {
        guard let base = mapping.baseAddress else { return }
        _ = munmap(UnsafeMutableRawPointer(mutating: base), mapping.count)
    }

    /// `count` bytes of zeroed private memory, page-aligned, with its pages faulted in by this
    /// call (Linux `MAP_POPULATE`): one system call instead of a fault per page at first write.
    /// Nil when the system has no memory to give.
    package static func mapMemory(count: Int) -> UnsafeMutableRawPointer? {
        #if os(Linux)
        let flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE
        #elseif canImport(Glibc)
        let flags = MAP_PRIVATE | MAP_ANONYMOUS
        #else
        let flags = MAP_PRIVATE | MAP_ANON
        #endif
        guard let p = mmap(nil, count, PROT_READ | PROT_WRITE, flags, -1, 0),
              p != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED
        else { return nil }
        return p
    }

    /// Gives back memory ``mapMemory(count:)`` returned, with the same `count`.
    package static func unmapMemory(_ memory: UnsafeMutableRawPointer, count: Int) {
        _ = munmap(memory, count)
    }

    // MARK: - Mutex and condition variable

    package typealias MutexStorage = pthread_mutex_t
    package typealias ConditionStorage = pthread_cond_t

    package static func initialize(_ mutex: UnsafeMutablePointer<MutexStorage>,
                           _ condition: UnsafeMutablePointer<ConditionStorage>) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    package static func destroy(_ mutex: UnsafeMutablePointer<MutexStorage>,
                        _ condition: UnsafeMutablePointer<ConditionStorage>) {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
    }

    package static func lock(_ mutex: UnsafeMutablePointer<MutexStorage>) { pthread_mutex_lock(mutex) }
    package static func unlock(_ mutex: UnsafeMutablePointer<MutexStorage>) { pthread_mutex_unlock(mutex) }

    package static func wait(_ condition: UnsafeMutablePointer<ConditionStorage>,
                     _ mutex: UnsafeMutablePointer<MutexStorage>) {
        pthread_cond_wait(condition, mutex)
    }

    /// Waits at most `seconds` (of the real-time clock, which `pthread_cond_timedwait` measures
    /// by default on Linux and Darwin); false on timeout.
    package static func wait(_ condition: UnsafeMutablePointer<ConditionStorage>,
                     _ mutex: UnsafeMutablePointer<MutexStorage>, seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + seconds
        var deadline = timespec(tv_sec: Int(total), tv_nsec: Int((total - Double(Int(total))) * 1e9))
        return pthread_cond_timedwait(condition, mutex, &deadline) == 0
    }

    package static func broadcast(_ condition: UnsafeMutablePointer<ConditionStorage>) {
        pthread_cond_broadcast(condition)
    }

    // MARK: - Helpers

    /// Repeats a call that returns 0 or -1 until it succeeds or fails with another error than `EINTR`.
    private static func retrying(_ call: () -> Int32) throws(Errno) {
        while call() != 0 {
            let e = Errno.current
            if e != .interrupted { throw e }
        }
    }

    private static func callOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(Glibc)
        Glibc.open(path, flags, mode)
        #else
        Darwin.open(path, flags, mode)
        #endif
    }

    private static func callWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(fd, p, count)
        #else
        Darwin.write(fd, p, count)
        #endif
    }
}
