import Dispatch
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// The storage engine under every collection: atomic batches through a group-committed
/// write-ahead log into a memtable, flushed to sorted segment files, merged in the background.
///
/// Guarantees (DESIGN.md): batches are atomic; a batch acknowledged under `.synchronous` survives
/// `kill -9` and power loss; readers see consistent snapshots and never block on writers' I/O;
/// files are never changed in place.
package final class Engine: @unchecked Sendable {
    package let directory: String
    package let options: EngineOptions
    /// What the engine decides on its own, for ``StoreOptions/logger``.
    package let diagnostics: EngineLog
    /// Damage met by background work, the engine's and the collections' (``DamageRecorder``).
    package let damage: DamageRecorder
    /// Nil when `cacheSize` is 0.
    package let cache: BlockCache?

    // Everything below is guarded by `lock`, except where noted.
    package let lock = ConditionLock()
    package var manifest: Manifest
    package var version: Version
    package var active: Memtable
    /// Newest first; the last one is flushed next.
    package var immutables: [Memtable] = [] {
        didSet { readableMemtables = [active] + immutables }
    }
    /// `[active] + immutables`, kept so that taking a snapshot allocates no array.
    package var readableMemtables: [Memtable] = []
    package var log: LogWriter
    package var lastSequence: UInt64
    package let visibleSequence: Atomic<UInt64>
    package var writers: [PendingWrite] = []
    /// The failed state (FORMAT.md 9.1, 9.2): a failed log write or sync, a failed rotation or
    /// directory sync, or a manifest replacement whose outcome is unknown. Every later write
    /// fails with it (never retry an fsync), no flush or compaction runs, and close throws it.
    package var writeError: StrataError?
    /// A failed flush or compaction; retried on the next trigger, reported by `compact()`.
    package var backgroundError: StrataError?
    /// Failed background work, for ``statistics``.
    package var backgroundFailures: UInt64 = 0
    package var lastBackgroundError: StrataError?
    /// Participants of every commit (``CommitParticipant``), in registration order.
    package let participants = Mutex<[any CommitParticipant]>([])
    /// `participants.count`, read without the lock on every write.
    package let participantCount = Atomic<Int>(0)
    /// Told of every commit with logical changes, under the lock and in commit order
    /// (``setCommitObserver(_:)``): the store's broadcaster, which only queues it.
    package var commitObserver: (@Sendable (Commit) -> Void)?
    /// Told once, on `failureQueue`, when the engine enters the failed state (``onFailure(_:)``).
    package var failureObserver: (@Sendable (StrataError) -> Void)?
    /// Runs the failure observer outside the lock, so that the writer that failed is not delayed.
    package let failureQueue = DispatchQueue(label: "strata.failure")
    package var flushing = false
    package var compacting = false
    package var closed = false
    package let shuttingDown = Atomic<Bool>(false)
    package var logDirty = false
    /// The length of `log` up to the end of its last record whose batches are visible: what a
    /// backup copies of it (``backup(to:)``). Set by the commit leader once its group is
    /// visible, and on every switch to a new log; bytes past it belong to a group under way.
    package var committedLogSize = 0
    package var filters: [UInt64: CompactionFilter] = [:]
    package var transforms: [UInt64: any RecordTransform] = [:]
    package let fileLock: FileLock
    package let flushQueue = DispatchQueue(label: "strata.flush")
    package let compactionQueue = DispatchQueue(label: "strata.compaction")
    /// Runs the buffered-durability sync timer; `close` drains it before its final sync.
    package let syncQueue = DispatchQueue(label: "strata.sync")
    package var syncTimer: DispatchSourceTimer?
    // Counters for ``statistics``.
    package var userBytesWritten: UInt64 = 0
    package var flushes: UInt64 = 0
    package var flushBytes: UInt64 = 0
    package var compactions: UInt64 = 0
    package var compactionBytesRead: UInt64 = 0
    package var compactionBytesWritten: UInt64 = 0
    package var mostRuns = 0
    package var writeStalls: UInt64 = 0
    package var writeStallNanoseconds: UInt64 = 0

    package final class PendingWrite {
        package let batch: WriteBatch
        package let sync: Bool
        /// Not a write: the leader switches to a new memtable (for `compactAll`).
        package let rotation: Bool
        package var done = false
        package var error: StrataError?
        /// The commit's sequence number, once done without error.
        package var sequence: UInt64 = 0
        package var changes: [any CommitChange] = []
        package var onVisible: [@Sendable (UInt64) -> Void] = []
        package init(batch: WriteBatch, sync: Bool, rotation: Bool = false) {
            self.batch = batch
            self.sync = sync
            self.rotation = rotation
        }
    }

    // MARK: Open and recovery

    /// What opening found in the logs and discarded (``Store/recovery``).
    package let recovery: RecoveryReport

    /// Opens (creating if needed) the store in `directory`, replaying its logs into memtables
    /// (``EngineRecovery``); it writes no segment unless the logs of many crashed opens piled up.
    ///
    /// `check` reads the recovered state before recovery writes anything (the collections' state
    /// loaded at open): when it throws, opening fails and the directory is left as it was.
    package init(directory: String, options: EngineOptions, check: (Snapshot) throws -> Void = { _ in }) throws {
        self.directory = directory
        self.options = options
        self.diagnostics = EngineLog(logger: options.logger, directory: directory)
        self.damage = DamageRecorder(log: diagnostics)
        self.cache = options.cacheSize > 0 ? BlockCache(capacity: options.cacheSize) : nil
        try options.fileSystem.createDirectory(directory)
        fileLock = try FileLock(path: directory + "/" + FileNames.lock, fileSystem: options.fileSystem)
        let cleanupFailures: [StrataError]
        do {
            let r = try EngineRecovery.recover(directory: directory, options: options, cache: cache, check: check)
            self.manifest = r.manifest
            self.version = Version(runs: r.runs)
            self.log = r.log
            self.committedLogSize = r.log.size
            self.active = r.active
            self.immutables = r.immutables
            self.readableMemtables = [r.active] + r.immutables
            self.lastSequence = r.lastSequence
            self.visibleSequence = Atomic(r.lastSequence)
            self.recovery = r.report
            cleanupFailures = r.cleanupFailures
        } catch {
            fileLock.release()
            throw error
        }
        logRecovery()
        lock.withLock {
            for e in cleanupFailures { noteBackgroundFailure(e, during: "deleting a file no longer needed at open") }
        }
        if options.durability == .buffered { startSyncTimer() }
        lock.withLock {
            // Memtables recovery sealed are flushed now, in the background (FORMAT.md 4.5).
            scheduleFlush()
            maybeScheduleCompaction()
        }
    }

    /// Tells the log what open found: each torn tail it cut, and what it replayed.
    private func logRecovery() {
        for cut in recovery.cutTails {
            diagnostics(.warning, "Cut a torn tail off a write-ahead log at open", [
                "file": "\(cut.file)", "offset": "\(cut.offset)", "bytes": "\(cut.bytesCut)", "reason": "\(cut.reason)",
            ])
        }
        diagnostics(.debug, "Opened the store", [
            "logs.replayed": "\(recovery.logsReplayed)", "batches.replayed": "\(recovery.batchesReplayed)",
            "runs": "\(version.runs.count)", "segments": "\(version.runs.reduce(0) { $0 + $1.segments.count })",
            "sequence": "\(lastSequence)",
        ])
    }


    /// Makes the store directory's own entry, and what it holds, durable: its parent and the
    /// directory itself are synced by every open that finds no manifest (``EngineRecovery``, as
    /// soon as it has looked for one, before it writes anything). A crash between the
    /// `mkdir` of a new store and the sync of its parent would otherwise leave a directory that a
    /// later open finds and never syncs into its parent, so that a power cut could lose the whole
    /// store (FORMAT.md §9.1). A manifest is written only after this sync, so an open that finds
    /// one has nothing to sync.
    package static func syncDirectoryEntry(_ directory: String, fileSystem: FileSystem) throws {
        var path = Substring(directory)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        let parent: Substring
        if let slash = path.lastIndex(of: "/") {
            parent = slash == path.startIndex ? "/" : path[..<slash]
        } else {
            parent = "."
        }
        if parent != path { try fileSystem.syncDirectory(String(parent)) }
        try fileSystem.syncDirectory(directory)
    }

    /// `error` as a ``StrataError``: any other error becomes an I/O error of `operation` on `path`.
    package static func strataError(_ error: Error, path: String, operation: String) -> StrataError {
        error as? StrataError ?? .io(path: path, errno: Errno.ioError.code, operation: operation)
    }

    /// Enters the failed state (see `writeError`) and tells the failure observer, once. Called
    /// with the lock held.
    package func fail(_ e: StrataError) {
        if writeError == nil {
            writeError = e
            notifyFailure(e)
            diagnostics(.error, "The store failed: it accepts no more writes until it is reopened",
                        ["error": "\(e)"])
        }
        lock.broadcast()
    }

    /// Hands `e` to the failure observer on its queue. Called with the lock held.
    package func notifyFailure(_ e: StrataError) {
        guard let observer = failureObserver else { return }
        failureQueue.async { observer(e) }
    }

    /// Sets the one observer told (on a queue of its own, never under the engine's lock) when the
    /// engine enters the failed state; told at once if it has already. ``Store`` ends its streams
    /// from it.
    package func onFailure(_ observer: @escaping @Sendable (StrataError) -> Void) {
        lock.withLock {
            failureObserver = observer
            if let e = writeError { notifyFailure(e) }
        }
    }

    /// Sets the one observer told of every commit that carries logical changes, in commit order,
    /// under the engine's lock: it must only hand the commit on (``CommitBroadcaster`` queues it).
    package func setCommitObserver(_ observer: @escaping @Sendable (Commit) -> Void) {
        lock.withLock { commitObserver = observer }
    }

    /// The error that failed the engine (see `writeError`), if any: every later write throws it.
    package var failure: StrataError? { lock.withLock { writeError } }

    /// Waits until the failure observer has been told of everything reported so far (for tests).
    package func waitForFailureObserver() {
        failureQueue.sync {}
    }

    /// Reports a failure of work after a commit (the write itself is durable and acknowledged),
    /// counted with the background failures in ``statistics``.
    package func reportFailure(_ e: StrataError) {
        lock.withLock { noteBackgroundFailure(e, during: "work after a commit") }
    }

    /// Counts a failure of background work (`work` names it for the log) for ``statistics``.
    /// Called with the lock held.
    package func noteBackgroundFailure(_ e: StrataError, during work: String) {
        if e == .closed {  // a compaction stopped by close
            diagnostics(.debug, "Background work stopped by close", ["work": "\(work)"])
            return
        }
        backgroundFailures += 1
        lastBackgroundError = e
        diagnostics(.warning, "Background work failed; it will be retried", ["work": "\(work)", "error": "\(e)"])
    }

    /// Records `error`, met by the background work `component` at `subject`, as damage
    /// (``DamageRecorder``); the engine's failure, reported already as the failed state, is not.
    package func recordDamage(_ component: DamageComponent, at subject: String? = nil, _ error: StrataError) {
        if error == failure { return }
        damage.record(component, at: subject, error)
    }

    // MARK: Reads

    /// A consistent view of everything committed so far.
    package func snapshot() throws -> Snapshot {
        lock.lock()
        defer { lock.unlock() }
        if closed { throw StrataError.closed }
        return Snapshot(sequence: visibleSequence.load(ordering: .acquiring),
                        memtables: readableMemtables, version: version)
    }

    package func get(_ key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { try get($0) }
    }

    /// The value of `prefix` followed by `key`, the key assembled on the stack (a point read
    /// allocates only its result).
    package func get(prefix: [UInt8], _ key: [UInt8]) throws -> [UInt8]? {
        try JoinedKey.withBytes(prefix, key) { try get($0) }
    }

    /// A point read at the current state, without making a ``Snapshot`` object.
    private func get(_ k: UnsafeRawBufferPointer) throws -> [UInt8]? {
        lock.lock()
        if closed {
            lock.unlock()
            throw StrataError.closed
        }
        let sequence = visibleSequence.load(ordering: .acquiring)
        let memtables = readableMemtables
        let version = self.version
        lock.unlock()
        return try Snapshot.get(k, sequence: sequence, memtables: memtables, version: version)
    }

    // MARK: Introspection

    package var statistics: StoreStatistics {
        let damage = self.damage.counts
        return lock.withLock {
            StoreStatistics(
                sortedRuns: version.runs.count,
                segments: version.runs.reduce(0) { $0 + $1.segments.count },
                segmentBytes: version.fileSize,
                records: version.runs.reduce(0) { $0 + $1.records },
                memtableBytes: ([active] + immutables).reduce(0) { $0 + $1.approximateSize },
                immutableMemtables: immutables.count,
                lastSequence: lastSequence,
                bytesWritten: userBytesWritten,
                flushes: flushes,
                flushBytesWritten: flushBytes,
                compactions: compactions,
                compactionBytesRead: compactionBytesRead,
                compactionBytesWritten: compactionBytesWritten,
                mostSortedRuns: mostRuns,
                blockCacheBytes: cache?.size ?? 0,
                writeStalls: writeStalls,
                writeStallSeconds: Double(writeStallNanoseconds) / 1e9,
                backgroundFailures: backgroundFailures,
                lastBackgroundError: lastBackgroundError,
                writeError: writeError,
                damage: damage.total,
                damageByComponent: damage.byComponent,
                recentDamage: damage.recent)
        }
    }
}
