import Dispatch
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// Durability of buffered writes (the sync timer and `sync()`) and closing.
extension Engine {
    package func startSyncTimer() {
        let t = DispatchSource.makeTimerSource(queue: syncQueue)
        let ms = Int(options.syncInterval * 1000)
        t.schedule(deadline: .now() + .milliseconds(ms), repeating: .milliseconds(ms))
        t.setEventHandler { [weak self] in self?.syncIfDirty() }
        t.resume()
        syncTimer = t
    }

    package func syncIfDirty() {
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
    package func sync() throws {
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

    /// Memtables holding less than this (together) stay in their logs at close: replaying them
    /// takes a few milliseconds, less than writing them to a segment, and a store opened and
    /// closed with a few writes each time does not pile up tiny runs.
    package static let closeFlushMinimumBytes = 1 << 20

    /// Waits for background work, syncs the log, writes the memtables to segments when they hold
    /// `flushMinimum` bytes or more (so that the next open has little to replay), closes the log
    /// and releases the lock file. Idempotent. Throws the failure of the final sync, or the one
    /// that failed the engine earlier (writes acknowledged under `.buffered` may then be lost);
    /// either way everything is released.
    ///
    /// The flush comes after the final sync, so every acknowledged write is durable in the log
    /// before it starts: a flush that fails (a full disk, say) is reported to the logger and
    /// leaves the log, which the next open replays; only one that leaves the engine in the failed
    /// state (a manifest replacement whose outcome is unknown) makes close throw.
    package func close(flushMinimum: Int = Engine.closeFlushMinimumBytes) throws {
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
        let (log, failed) = lock.withLock { (self.log, writeError) }
        defer {
            let current = lock.withLock {
                // Segment files stay open only while a snapshot or iterator of the caller uses them.
                version = Version(runs: [])
                return self.log
            }
            if current !== log { current.close() }
            log.close()
            fileLock.release()
            diagnostics.drain()
        }
        if let failed { throw failed }
        // A log nothing was appended to (a store only read) is as durable as its open or rotation
        // made it: not synced again.
        do { if log.hasAppended { try log.sync() } } catch {
            let e = Self.strataError(error, path: log.path, operation: "fsync")
            lock.withLock { fail(e) }
            throw e
        }
        let bytes = lock.withLock { ([active] + immutables).reduce(0) { $0 + $1.approximateSize } }
        guard bytes >= flushMinimum else { return }
        flushMemtablesOnClose()
        if let e = lock.withLock({ writeError }) { throw e }
    }

    /// Writes every memtable to segments (FORMAT.md 9.2), oldest first, after a rotation of the
    /// active memtable to a new, empty log that the last manifest replacement names as the log to
    /// replay. Called by `close` once the log is synced and no other thread writes, flushes or
    /// compacts. Stops at the first failure, which leaves the memtable's logs (synced) to the next
    /// open. Bounded: at most `maxImmutableMemtables` + 1 memtables.
    private func flushMemtablesOnClose() {
        let start = DispatchTime.now().uptimeNanoseconds
        let (bytes, needsRotation, waiting) = lock.withLock {
            (([active] + immutables).reduce(0) { $0 + $1.approximateSize }, !active.isEmpty, immutables.count)
        }
        guard needsRotation || waiting > 0 else { return }
        if needsRotation {
            let number: UInt64
            do {
                number = try allocateFileNumber()
            } catch {
                // No file number left: the memtables stay in their (synced) logs.
                lock.withLock { noteBackgroundFailure(Self.strataError(error, path: directory, operation: "flush"), during: "flush at close") }
                return
            }
            let path = directory + "/" + FileNames.log(number)
            let newLog: LogWriter
            do {
                newLog = try LogWriter(path: path, number: number, fileSystem: options.fileSystem, key: options.encryptionKey)
            } catch {
                // Nothing names the new log: an empty log above `logNumber`, which the next open
                // replays (no record) and deletes if it is still there.
                try? options.fileSystem.remove(path)
                let e = Self.strataError(error, path: path, operation: "create")
                lock.withLock { noteBackgroundFailure(e, during: "flush at close") }
                return
            }
            do {
                try newLog.sync()
                try options.fileSystem.syncDirectory(directory)
            } catch {
                newLog.close()
                try? options.fileSystem.remove(path)
                // A failed sync is never retried (FORMAT.md 9.1): the failed state, as for any
                // rotation; the old log, synced, stays and is replayed.
                let e = Self.strataError(error, path: path, operation: "fsync")
                lock.withLock { fail(e) }
                return
            }
            lock.withLock {
                // The old log was synced by close; it closes with the engine.
                let full = active
                active = Memtable(logNumber: number)
                immutables.insert(full, at: 0)
                log = newLog
                committedLogSize = newLog.size
            }
        }
        var flushed = 0
        while let memtable = lock.withLock({ writeError == nil ? immutables.last : nil }) {
            flushOne()
            // A failed flush leaves the memtable (its error is noted by flushOne).
            if lock.withLock({ immutables.last === memtable }) { break }
            flushed += 1
        }
        diagnostics(.info, "Flushed the memtables at close", [
            "memtables": "\(flushed)", "memtable.bytes": "\(bytes)",
            "left": "\(lock.withLock { immutables.count })",
            "duration.ms": "\(EngineLog.milliseconds(since: start))",
        ])
    }
}
