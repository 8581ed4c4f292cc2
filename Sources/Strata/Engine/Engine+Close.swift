import Dispatch

// Durability of buffered writes (the sync timer and `sync()`) and closing.
extension Engine {
    func startSyncTimer() {
        let t = DispatchSource.makeTimerSource(queue: syncQueue)
        let ms = Int(options.syncInterval * 1000)
        t.schedule(deadline: .now() + .milliseconds(ms), repeating: .milliseconds(ms))
        t.setEventHandler { [weak self] in self?.syncIfDirty() }
        t.resume()
        syncTimer = t
    }

    func syncIfDirty() {
        let target: LogWriter? = lock.withLock {
            guard logDirty, !closed, writeError == nil else { return nil }
            logDirty = false
            return log
        }
        guard let target else { return }
        do { try target.sync() } catch {
            let e = Self.strataError(error, path: target.path, operation: "fsync")
            lock.withLock { fail(e) }
        }
    }


    // MARK: Sync and close

    /// Makes every acknowledged write durable.
    func sync() throws {
        let log: LogWriter = try lock.withLock {
            if closed { throw StrataError.closed }
            if let e = writeError { throw e }
            logDirty = false
            return self.log
        }
        do { try log.sync() } catch {
            let e = Self.strataError(error, path: log.path, operation: "fsync")
            lock.withLock { fail(e) }
            throw e
        }
    }

    /// Waits for background work, syncs and closes the log and releases the lock file.
    /// Idempotent. Throws the failure of the final sync, or the one that failed the engine
    /// earlier (writes acknowledged under `.buffered` may then be lost); either way everything
    /// is released.
    func close() throws {
        lock.lock()
        if closed { lock.unlock(); return }
        closed = true
        shuttingDown.store(true, ordering: .relaxed)
        while !writers.isEmpty || flushing || compacting { lock.wait() }
        lock.unlock()
        // No timer sync runs after this: the one under way, if any, finishes first.
        syncTimer?.cancel()
        syncQueue.sync {}
        syncTimer = nil
        let (log, failed) = lock.withLock {
            // Segment files stay open only while a snapshot or iterator of the caller uses them.
            version = Version(runs: [])
            return (self.log, writeError)
        }
        defer {
            log.close()
            fileLock.release()
            diagnostics.drain()
        }
        if let failed { throw failed }
        do { try log.sync() } catch {
            let e = Self.strataError(error, path: log.path, operation: "fsync")
            lock.withLock { fail(e) }
            throw e
        }
    }
}
