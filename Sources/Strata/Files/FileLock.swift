#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's `LOCK` file, held with `flock(LOCK_EX | LOCK_NB)` while the store is open.
///
/// The file's content is the owning process id (for people; the lock is the `flock`). The lock
/// goes away with the process, so a store left by `kill -9` can be opened again at once.
final class FileLock: Sendable {
    let path: String
    private let file: SystemFile

    init(path: String) throws {
        let f = try SystemFile.open(path, flags: O_RDWR | O_CREAT)
        try IOFaultInjection.check(.flock, path)
        while flock(f.descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            f.close()
            if code == EWOULDBLOCK { throw StrataError.locked(path: path) }
            throw StrataError.io(path: path, errno: code, operation: "flock")
        }
        self.path = path
        self.file = f
        try? f.truncate(to: 0)
        _ = try? f.write(Array("\(getpid())\n".utf8))
    }

    /// Releases the lock (closing the descriptor releases the `flock`).
    func release() {
        file.close()
    }
}
