import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// The commit queue: group commit of write batches through the write-ahead log into the
// active memtable, and the switch to a new memtable and log when it is full.
extension Engine {
    // MARK: Writes

    /// The largest batch one log record can hold.
    package static let maxBatchBytes = LogFormat.maxRecordLength

    /// Applies `batch` atomically; returns once it is as durable as `durability` asks, with the
    /// commit's sequence number (see ``Commit/sequence``). An empty batch commits nothing and
    /// returns the sequence of the last commit.
    @discardableResult
    package func write(_ batch: WriteBatch, durability: Durability? = nil) throws -> UInt64 {
        var b = CommitBatch(durability: durability)
        b.records = batch
        return try commit(b)
    }

    /// The commit path (DESIGN.md, "Commit path"): every registered participant prepares the
    /// batch (and may add records to it), then its records commit atomically through the
    /// group-committed log, then its ``CommitBatch/onVisible`` actions run and it becomes visible,
    /// and then the commit observer (the store's broadcaster) is told, in commit order. Returns
    /// the commit's sequence number.
    @discardableResult
    package func commit(_ batch: CommitBatch) throws -> UInt64 {
        var batch = batch
        guard hasParticipants else { return try commitPrepared(batch) }
        do {
            for p in participants.withLock({ $0 }) { try p.prepare(&batch) }
            return try commitPrepared(batch)
        } catch {
            for abort in batch.onAbort { abort() }
            throw error
        }
    }

    /// ``commit(_:)`` after the participants.
    private func commitPrepared(_ batch: CommitBatch) throws -> UInt64 {
        if batch.records.isEmpty {
            return try lock.withLock {
                if closed { throw StrataError.closed }
                return visibleSequence.load(ordering: .relaxed)
            }
        }
        guard batch.records.byteSize <= Self.maxBatchBytes else {
            throw StrataError.invalidArgument(argument: "batch", reason: "a write batch of \(batch.records.byteSize) bytes exceeds the limit of \(Self.maxBatchBytes) bytes")
        }
        let w = PendingWrite(batch: batch.records, sync: (batch.durability ?? options.durability) == .synchronous)
        w.changes = batch.changes
        w.onVisible = batch.onVisible
        try commit(w)
        return w.sequence
    }

    /// Registers a participant of every later commit (``CommitParticipant``).
    package func register(_ participant: any CommitParticipant) {
        participants.withLock {
            $0.append(participant)
            participantCount.store($0.count, ordering: .relaxed)
        }
    }

    /// Whether any participant is registered (a collection then describes every commit's changes).
    package var hasParticipants: Bool { participantCount.load(ordering: .relaxed) > 0 }

    /// Whether a participant needs the changes of collection `name` of `kind`.
    package func participantsWantChanges(of kind: CollectionKind, name: String) -> Bool {
        guard hasParticipants else { return false }
        return participants.withLock { $0.contains { $0.wantsChanges(of: kind, name: name) } }
    }

    /// Queues `w`; the writer at the head of the queue commits its own and the following batches.
    /// Only a leader touches the log and the active memtable, so they change one at a time.
    package func commit(_ w: PendingWrite) throws {
        lock.lock()
        if closed { lock.unlock(); throw StrataError.closed }
        writers.append(w)
        while !w.done && writers.first !== w { lock.wait() }
        if w.done {
            lock.unlock()
            if let e = w.error { throw e }
            return
        }
        // This writer leads: it commits its own batch and those queued behind it.
        do {
            // Sequence numbers past the limit a reader enforces are refused before anything is
            // written (FORMAT.md 4.2); the batches queued behind wait for the next leader.
            var next = lastSequence + 1
            try CounterLimit.take(UInt64(w.batch.count), from: &next, "sequence number")
            try makeRoomForWrite(force: w.rotation)
        } catch {
            writers.removeFirst()
            lock.broadcast()
            lock.unlock()
            throw error
        }
        if w.rotation {
            writers.removeFirst()
            lock.broadcast()
            lock.unlock()
            return
        }
        var group = [w]
        var bytes = w.batch.byteSize
        var needSync = w.sync
        let cap = bytes <= 128 << 10 ? bytes + (128 << 10) : 1 << 20
        var count = UInt64(w.batch.count)
        for other in writers.dropFirst() {
            if other.rotation || bytes + other.batch.byteSize > cap { break }
            // A batch that would pass the sequence limit leads a group of its own, and is refused.
            if UInt64(other.batch.count) > CounterLimit.max - lastSequence - count { break }
            count += UInt64(other.batch.count)
            group.append(other)
            bytes += other.batch.byteSize
            needSync = needSync || other.sync
        }
        let first = lastSequence + 1
        let total = group.reduce(0) { $0 + $1.batch.count }
        #if STRATA_INVARIANTS
        Invariants.require(total > 0 && UInt64(total) <= LogFormat.maxCounter - lastSequence,
                           "a commit group of \(total) operations after sequence \(lastSequence)")
        #endif
        userBytesWritten += UInt64(bytes)
        lastSequence += UInt64(total)
        let log = self.log
        let memtable = active
        let recordOffset = log.size
        if !needSync { logDirty = true }
        lock.unlock()

        var failure: StrataError?
        do {
            var payload: [UInt8] = []
            payload.reserveCapacity(bytes + 12)
            LittleEndian.append(first, to: &payload)
            LittleEndian.append(UInt32(total), to: &payload)
            if group.count == 1 {
                payload.append(contentsOf: w.batch.operations)
            } else {
                for g in group { payload.append(contentsOf: g.batch.operations) }
            }
            try payload.withUnsafeBytes { try log.append(type: .batch, payload: $0) }
            if needSync { try log.sync() }
            var seq = first
            for g in group {
                try g.batch.operations.withUnsafeBytes {
                    try memtable.apply(operations: $0, count: g.batch.count, firstSequence: seq, file: log.path,
                                       offset: recordOffset)
                }
                seq += UInt64(g.batch.count)
            }
        } catch let e as StrataError {
            failure = e
        } catch {
            failure = .io(path: log.path, errno: Errno.ioError.code, operation: "write")
        }

        lock.lock()
        if let failure {
            fail(failure)
        } else {
            // In commit order, under the lock: each batch's visibility actions, then the observer
            // (which only queues), then the batches become visible together.
            var end = first
            for g in group {
                end += UInt64(g.batch.count)
                g.sequence = end - 1
                for action in g.onVisible { action(g.sequence) }
                if !g.changes.isEmpty, let observer = commitObserver {
                    observer(Commit(sequence: g.sequence, changes: g.changes))
                }
            }
            visibleSequence.store(first + UInt64(total) - 1, ordering: .releasing)
            // Only the leader appends to the log, so its size is this group's end.
            committedLogSize = log.size
        }
        for g in group {
            g.done = true
            g.error = failure
        }
        writers.removeFirst(group.count)
        lock.broadcast()
        lock.unlock()
        if let failure { throw failure }
    }

    /// Makes sure the active memtable has room, switching to a new one (and a new log) when it is
    /// full and waiting when flushes are behind. Called by the commit leader with the lock held.
    package func makeRoomForWrite(force: Bool = false) throws {
        var stall = WriteStall()
        defer { endStall(stall) }
        while true {
            if let e = writeError { throw e }
            if closed { throw StrataError.closed }
            if version.runs.count >= options.stopWritesRuns && backgroundError == nil {
                // Too many sorted runs for reads to stay cheap: wait for compaction to catch up.
                maybeScheduleCompaction()
                if compacting {
                    beginStall(&stall, .sortedRuns)
                    lock.wait()
                    continue
                }
            }
            if !force && active.approximateSize < options.memtableSize { return }
            if force && active.isEmpty { return }
            if immutables.count >= options.maxImmutableMemtables {
                if let e = backgroundError, !flushing {
                    // Report the failed flush to this writer; the next one waits for a retry.
                    backgroundError = nil
                    scheduleFlush()
                    throw e
                }
                scheduleFlush()
                beginStall(&stall, .memtables)
                lock.wait()
                continue
            }
            // The manifest's nextFileNumber, which follows it, must stay within the limit.
            let number = try CounterLimit.take(from: &manifest.nextFileNumber, "file number", last: CounterLimit.max - 1)
            let newLog: LogWriter
            do {
                // The old log is complete: make it durable before writes move on to the new one.
                try log.sync()
                newLog = try LogWriter(path: directory + "/" + FileNames.log(number), number: number, fileSystem: options.fileSystem, key: options.encryptionKey)
                // A synchronous write acknowledged from the new log must not lose the log's name.
                try newLog.sync()
                try options.fileSystem.syncDirectory(directory)
            } catch {
                // The old log's tail or the new log's name may not be durable, and a sync is never
                // retried (FORMAT.md 9.1): no later write may be acknowledged.
                let e = Self.strataError(error, path: directory + "/" + FileNames.log(number), operation: "fsync")
                fail(e)
                throw e
            }
            let full = active
            active = Memtable(logNumber: number)
            immutables.insert(full, at: 0)
            // The old log's descriptor closes when its last user (a sync under way) lets go.
            log = newLog
            committedLogSize = newLog.size
            logDirty = false
            scheduleFlush()
            return
        }
    }
}
