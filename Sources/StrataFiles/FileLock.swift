@_spi(Layers) import StrataFormat

/// The store's `LOCK` file, held with `flock(LOCK_EX | LOCK_NB)` while the store is open.
///
/// The file's content is the owning process id (for people; the lock is the `flock`). The lock
/// goes away with the process, so a store left by `kill -9` can be opened again at once.
package final class FileLock: Sendable {
    package let path: String
    private let file: SystemFile

    package init(path: String, fileSystem: FileSystem) throws {
        let f = try fileSystem.open(path, flags: [.readWrite, .create])
        try fileSystem.environment.check(.flock, path)
        do {
            try SystemCalls.lockExclusive(f.descriptor)
        } catch {
            f.close()
            if error == .wouldBlock { throw StrataError.locked(path: path) }
            throw StrataError.io(path: path, errno: error.code, operation: "flock")
        }
        self.path = path
        self.file = f
        // Written over the old content, cut only past its end: ext4 flushes a file truncated to
        // zero when it is closed (auto_da_alloc), which cost every open a disk write.
        let content = Array("\(SystemCalls.processID)\n".utf8)
        let size = (try? f.size()) ?? 0
        if size != content.count || (try? f.read(at: 0, count: size)) != content {
            if (try? f.write(content)) != nil, size > content.count { try? f.truncate(to: content.count) }
        }
    }

    /// Releases the lock.
    ///
    /// Unlocks before closing: closing alone releases the `flock` only when no other descriptor
    /// refers to the same open file, and a child that another thread of this process is spawning
    /// holds a copy of every descriptor until its `exec` closes the close-on-exec ones. In that
    /// window a close-then-reopen of the store in this process failed with `.locked`.
    package func release() {
        SystemCalls.unlock(file.descriptor)
        file.close()
    }
}
