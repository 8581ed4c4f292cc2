import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The storage engine under every collection: atomic batches through a group-committed
/// write-ahead log into a memtable, flushed to sorted segment files, merged in the background.
///
/// Guarantees (DESIGN.md): batches are atomic; a batch acknowledged under `.synchronous` survives
/// `kill -9` and power loss; readers see consistent snapshots and never block on writers' I/O;
/// files are never changed in place.
final class Engine: @unchecked Sendable {
    let directory: String
    let options: EngineOptions
    /// Nil when `cacheSize` is 0.
    let cache: BlockCache?

    // Everything below is guarded by `lock`, except where noted.
    private let lock = ConditionLock()
    private var manifest: Manifest
    private var version: Version
    private var active: Memtable
    /// Newest first; the last one is flushed next.
    private var immutables: [Memtable] = [] {
        didSet { readableMemtables = [active] + immutables }
    }
    /// `[active] + immutables`, kept so that taking a snapshot allocates no array.
    private var readableMemtables: [Memtable] = []
    private var log: LogWriter
    private var lastSequence: UInt64
    private let visibleSequence: Atomic<UInt64>
    private var writers: [PendingWrite] = []
    /// The failed state (FORMAT.md 9.1, 9.2): a failed log write or sync, a failed rotation or
    /// directory sync, or a manifest replacement whose outcome is unknown. Every later write
    /// fails with it (never retry an fsync), no flush or compaction runs, and close throws it.
    private var writeError: StrataError?
    /// A failed flush or compaction; retried on the next trigger, reported by `compact()`.
    private var backgroundError: StrataError?
    /// Failed background work, for ``statistics``.
    private var backgroundFailures: UInt64 = 0
    private var lastBackgroundError: StrataError?
    /// Told once, on `failureQueue`, when the engine enters the failed state (``onFailure(_:)``).
    private var failureObserver: (@Sendable (StrataError) -> Void)?
    /// Runs the failure observer outside the lock, so that the writer that failed is not delayed.
    private let failureQueue = DispatchQueue(label: "strata.failure")
    private var flushing = false
    private var compacting = false
    private var closed = false
    private let shuttingDown = Atomic<Bool>(false)
    private var logDirty = false
    private var filters: [UInt64: CompactionFilter] = [:]
    private let fileLock: FileLock
    private let flushQueue = DispatchQueue(label: "strata.flush")
    private let compactionQueue = DispatchQueue(label: "strata.compaction")
    /// Runs the buffered-durability sync timer; `close` drains it before its final sync.
    private let syncQueue = DispatchQueue(label: "strata.sync")
    private var syncTimer: DispatchSourceTimer?
    // Counters for ``statistics``.
    private var userBytesWritten: UInt64 = 0
    private var flushes: UInt64 = 0
    private var flushBytes: UInt64 = 0
    private var compactions: UInt64 = 0
    private var compactionBytesRead: UInt64 = 0
    private var compactionBytesWritten: UInt64 = 0
    private var mostRuns = 0

    private final class PendingWrite {
        let batch: WriteBatch
        let sync: Bool
        /// Not a write: the leader switches to a new memtable (for `compactAll`).
        let rotation: Bool
        var done = false
        var error: StrataError?
        init(batch: WriteBatch, sync: Bool, rotation: Bool = false) {
            self.batch = batch
            self.sync = sync
            self.rotation = rotation
        }
    }

    // MARK: Open and recovery

    /// What opening found in the logs and discarded (``Store/recovery``).
    let recovery: RecoveryReport

    /// Opens (creating if needed) the store in `directory`, replaying its logs (``EngineRecovery``).
    init(directory: String, options: EngineOptions) throws {
        self.directory = directory
        self.options = options
        self.cache = options.cacheSize > 0 ? BlockCache(capacity: options.cacheSize) : nil
        try FileSystem.createDirectory(directory)
        fileLock = try FileLock(path: directory + "/" + FileNames.lock)
        do {
            try Self.syncDirectoryEntry(directory)
            let r = try EngineRecovery.recover(directory: directory, options: options, cache: cache)
            self.manifest = r.manifest
            self.version = Version(runs: r.runs)
            self.log = r.log
            self.active = Memtable(logNumber: r.manifest.logNumber)
            self.readableMemtables = [active]
            self.lastSequence = r.lastSequence
            self.visibleSequence = Atomic(r.lastSequence)
            self.recovery = r.report
        } catch {
            fileLock.release()
            throw error
        }
        if options.durability == .buffered { startSyncTimer() }
        lock.withLock { maybeScheduleCompaction() }
    }


    /// Makes the store directory's own entry, and what it holds, durable: its parent and the
    /// directory itself are synced at every open. A crash between the `mkdir` of a new store and
    /// the sync of its parent would otherwise leave a directory that a later open finds and never
    /// syncs into its parent, so that a power cut could lose the whole store (FORMAT.md §9.1).
    static func syncDirectoryEntry(_ directory: String) throws {
        var path = Substring(directory)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        let parent: Substring
        if let slash = path.lastIndex(of: "/") {
            parent = slash == path.startIndex ? "/" : path[..<slash]
        } else {
            parent = "."
        }
        if parent != path { try FileSystem.syncDirectory(String(parent)) }
        try FileSystem.syncDirectory(directory)
    }

    private func startSyncTimer() {
        let t = DispatchSource.makeTimerSource(queue: syncQueue)
        let ms = Int(options.syncInterval * 1000)
        t.schedule(deadline: .now() + .milliseconds(ms), repeating: .milliseconds(ms))
        t.setEventHandler { [weak self] in self?.syncIfDirty() }
        t.resume()
        syncTimer = t
    }

    private func syncIfDirty() {
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

    /// `error` as a ``StrataError``: any other error becomes an I/O error of `operation` on `path`.
    private static func strataError(_ error: Error, path: String, operation: String) -> StrataError {
        error as? StrataError ?? .io(path: path, errno: EIO, operation: operation)
    }

    /// Enters the failed state (see `writeError`) and tells the failure observer, once. Called
    /// with the lock held.
    private func fail(_ e: StrataError) {
        if writeError == nil {
            writeError = e
            notifyFailure(e)
        }
        lock.broadcast()
    }

    /// Hands `e` to the failure observer on its queue. Called with the lock held.
    private func notifyFailure(_ e: StrataError) {
        guard let observer = failureObserver else { return }
        failureQueue.async { observer(e) }
    }

    /// Sets the one observer told (on a queue of its own, never under the engine's lock) when the
    /// engine enters the failed state; told at once if it has already. ``Store`` ends its streams
    /// from it.
    func onFailure(_ observer: @escaping @Sendable (StrataError) -> Void) {
        lock.withLock {
            failureObserver = observer
            if let e = writeError { notifyFailure(e) }
        }
    }

    /// The error that failed the engine (see `writeError`), if any: every later write throws it.
    var failure: StrataError? { lock.withLock { writeError } }

    /// Waits until the failure observer has been told of everything reported so far (for tests).
    func waitForFailureObserver() {
        failureQueue.sync {}
    }

    /// Reports a failure of work after a commit (the write itself is durable and acknowledged),
    /// counted with the background failures in ``statistics``.
    func reportFailure(_ e: StrataError) {
        lock.withLock { noteBackgroundFailure(e) }
    }

    /// Counts a failure of background work for ``statistics``. Called with the lock held.
    private func noteBackgroundFailure(_ e: StrataError) {
        if e == .closed { return }  // a compaction stopped by close
        backgroundFailures += 1
        lastBackgroundError = e
    }

    // MARK: Writes

    /// The largest batch one log record can hold.
    static let maxBatchBytes = LogFormat.maxRecordLength

    /// Applies `batch` atomically; returns once it is as durable as `durability` asks.
    func write(_ batch: WriteBatch, durability: Durability? = nil) throws {
        if batch.isEmpty {
            if lock.withLock({ closed }) { throw StrataError.closed }
            return
        }
        guard batch.byteSize <= Self.maxBatchBytes else {
            throw StrataError.invalidArgument("a write batch of \(batch.byteSize) bytes exceeds the limit of \(Self.maxBatchBytes) bytes")
        }
        try commit(PendingWrite(batch: batch, sync: (durability ?? options.durability) == .synchronous))
    }

    /// Queues `w`; the writer at the head of the queue commits its own and the following batches.
    /// Only a leader touches the log and the active memtable, so they change one at a time.
    private func commit(_ w: PendingWrite) throws {
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
        for other in writers.dropFirst() {
            if other.rotation || bytes + other.batch.byteSize > cap { break }
            group.append(other)
            bytes += other.batch.byteSize
            needSync = needSync || other.sync
        }
        let first = lastSequence + 1
        let total = group.reduce(0) { $0 + $1.batch.count }
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
            failure = .io(path: log.path, errno: EIO, operation: "write")
        }

        lock.lock()
        if let failure {
            fail(failure)
        } else {
            visibleSequence.store(first + UInt64(total) - 1, ordering: .releasing)
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
    private func makeRoomForWrite(force: Bool = false) throws {
        while true {
            if let e = writeError { throw e }
            if closed { throw StrataError.closed }
            if version.runs.count >= options.stopWritesRuns && backgroundError == nil {
                // Too many sorted runs for reads to stay cheap: wait for compaction to catch up.
                maybeScheduleCompaction()
                if compacting {
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
                lock.wait()
                continue
            }
            let number = manifest.nextFileNumber
            manifest.nextFileNumber += 1
            let newLog: LogWriter
            do {
                // The old log is complete: make it durable before writes move on to the new one.
                try log.sync()
                newLog = try LogWriter(path: directory + "/" + FileNames.log(number), number: number)
                // A synchronous write acknowledged from the new log must not lose the log's name.
                try newLog.sync()
                try FileSystem.syncDirectory(directory)
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
            logDirty = false
            scheduleFlush()
            return
        }
    }

    // MARK: Reads

    /// A consistent view of everything committed so far.
    func snapshot() throws -> Snapshot {
        lock.lock()
        defer { lock.unlock() }
        if closed { throw StrataError.closed }
        return Snapshot(sequence: visibleSequence.load(ordering: .acquiring),
                        memtables: readableMemtables, version: version)
    }

    func get(_ key: [UInt8]) throws -> [UInt8]? {
        try snapshot().get(key)
    }

    // MARK: Flush

    /// Starts the flush thread on the oldest immutable memtable unless it is running already.
    /// Flushes happen only there, one at a time.
    private func scheduleFlush() {
        guard !flushing, !immutables.isEmpty, !closed, writeError == nil else { return }
        flushing = true
        flushQueue.async { [self] in
            flushOne()
            lock.withLock {
                flushing = false
                if backgroundError == nil { scheduleFlush() }
                lock.broadcast()
            }
        }
    }

    private func allocateFileNumber() -> UInt64 {
        lock.withLock {
            defer { manifest.nextFileNumber += 1 }
            return manifest.nextFileNumber
        }
    }

    /// Writes a memtable's records (the newest version of each key, tombstones kept) as one run.
    static func writeRun(from memtable: Memtable, directory: String, options: EngineOptions,
                         allocate: @escaping () -> UInt64,
                         cleanupFailed: (StrataError) -> Void = { _ in }) throws -> [SegmentMetadata] {
        let writer = RunWriter(directory: directory, options: options.segment,
                               targetFileSize: options.targetSegmentSize, allocateNumber: allocate)
        do {
            writer.addRangeTombstones(memtable.allRangeTombstones.map { RangeTombstone(start: $0.start, end: $0.end) })
            let cursor = MergedCursor(memtables: [memtable], runs: [], sequence: .max,
                                      lower: nil, upper: nil, reverse: false, keepTombstones: true)
            while try cursor.next() {
                try cursor.withKey { try writer.add(key: $0, kind: cursor.kind, value: cursor.value) }
            }
            return try writer.finish()
        } catch {
            if let e = writer.abandon() { cleanupFailed(e) }
            throw error
        }
    }

    /// Flushes the oldest immutable memtable to a new sorted run and publishes it (FORMAT.md 9.2).
    private func flushOne() {
        guard let memtable = lock.withLock({ writeError == nil ? immutables.last : nil }) else { return }
        do {
            let written = try Self.writeRun(from: memtable, directory: directory, options: options,
                                            allocate: { [self] in allocateFileNumber() },
                                            cleanupFailed: { [self] e in lock.withLock { noteBackgroundFailure(e) } })
            let readers = try installable(written)
            try lock.withLock {
                var m = manifest
                if !written.isEmpty { m.runs.insert(written, at: 0) }
                let remaining = immutables.dropLast()
                m.logNumber = remaining.last?.logNumber ?? active.logNumber
                m.lastSequence = lastSequence
                try publish(m, adding: readers)
                if !readers.isEmpty { version = Version(runs: [SortedRun(segments: readers)] + version.runs) }
                flushes += 1
                flushBytes += written.reduce(0) { $0 + $1.fileSize }
                mostRuns = max(mostRuns, version.runs.count)
                assert(immutables.last === memtable, "only the flush thread removes immutable memtables")
                immutables.removeLast()
                backgroundError = nil
                maybeScheduleCompaction()
            }
        } catch {
            let e = Self.strataError(error, path: directory, operation: "flush")
            lock.withLock {
                backgroundError = e
                noteBackgroundFailure(e)
            }
            return
        }
        // The flushed memtable's log is no longer needed; if it cannot be deleted, the next open
        // deletes it unread (it is below the manifest's log number).
        let path = directory + "/" + FileNames.log(memtable.logNumber)
        do { try FileSystem.remove(path) } catch {
            let e = Self.strataError(error, path: path, operation: "unlink")
            lock.withLock { noteBackgroundFailure(e) }
        }
    }

    /// Opens readers for segments just written and syncs the directory, so that they may be
    /// published. On failure the segments are deleted; a failed directory sync also fails the
    /// engine (a sync is never retried).
    private func installable(_ written: [SegmentMetadata]) throws -> [SegmentReader] {
        let readers: [SegmentReader]
        do {
            readers = try Self.openSegments(written, directory: directory, cache: cache)
        } catch {
            for s in written {
                let path = directory + "/" + FileNames.segment(s.number)
                do { try FileSystem.remove(path) } catch {
                    let e = Self.strataError(error, path: path, operation: "unlink")
                    lock.withLock { noteBackgroundFailure(e) }
                }
            }
            throw error
        }
        if readers.isEmpty { return readers }
        do {
            try FileSystem.syncDirectory(directory)
        } catch {
            for r in readers { r.markObsolete() }
            let e = Self.strataError(error, path: directory, operation: "fsync")
            lock.withLock { fail(e) }
            throw e
        }
        return readers
    }

    /// Readers for segments just written.
    static func openSegments(_ written: [SegmentMetadata], directory: String, cache: BlockCache?) throws -> [SegmentReader] {
        try written.map {
            try SegmentReader(path: directory + "/" + FileNames.segment($0.number), number: $0.number, cache: cache)
        }
    }

    /// Replaces the manifest with `m`, which lists the segments of `added` (FORMAT.md 9.2, 9.3).
    /// A failure before the rename leaves the old manifest: the new segments are unpublished and
    /// deleted once released, and the caller's job may be retried. A failure at or after the
    /// rename leaves either manifest on disk: the new segments are kept, and so is every file the
    /// old manifest needs (the caller changes nothing), and the engine fails. Called with the
    /// lock held.
    private func publish(_ m: Manifest, adding added: [SegmentReader]) throws {
        if let e = writeError {
            for r in added { r.markObsolete() }
            throw e
        }
        var mayHaveReplaced = false
        do {
            try m.write(directory: directory, mayHaveReplaced: &mayHaveReplaced)
        } catch {
            let e = Self.strataError(error, path: directory + "/" + FileNames.manifest, operation: "rename")
            if mayHaveReplaced {
                fail(e)
            } else {
                for r in added { r.markObsolete() }
            }
            throw e
        }
        manifest = m
    }

    // MARK: Compaction

    /// Registers the compaction filter of a keyspace: records for which it returns false are
    /// dropped when compaction meets them.
    func setCompactionFilter(keyspace: UInt64, _ filter: CompactionFilter?) {
        lock.withLock { filters[keyspace] = filter }
    }

    /// Universal (size-tiered) picking: from the newest run, take runs while each is no larger
    /// than `compactionSizeRatio` times the runs taken so far; with too many runs and no such
    /// pair, merge the newest ones down to below the trigger. Never more than `maxWidth` runs.
    static func pickCompaction(runSizes: [UInt64], trigger: Int, ratio: Double, maxWidth: Int = .max) -> Range<Int>? {
        guard runSizes.count >= max(trigger, 2) else { return nil }
        let width = max(maxWidth, 2)
        var accumulated = Double(runSizes[0])
        var end = 1
        while end < runSizes.count && end < width && Double(runSizes[end]) <= accumulated * ratio {
            accumulated += Double(runSizes[end])
            end += 1
        }
        if end >= 2 { return 0..<end }
        return 0..<min(runSizes.count - trigger + 2, width)
    }

    private func maybeScheduleCompaction() {
        guard !compacting, !closed, writeError == nil else { return }
        guard let range = Self.pickCompaction(runSizes: version.runs.map(\.fileSize),
                                              trigger: options.compactionTrigger, ratio: options.compactionSizeRatio,
                                              maxWidth: options.maxMergeWidth)
        else { return }
        compacting = true
        // The closure must not capture the runs themselves: they are released (and their obsolete
        // files deleted) before `compacting` clears, so close never returns before that.
        let inputs = PendingRuns(Array(version.runs[range]))
        let bottommost = range.upperBound == version.runs.count
        compactionQueue.async { [self] in
            func run() {
                let runs = inputs.take()
                do {
                    try compact(runs, bottommost: bottommost)
                } catch {
                    let e = Self.strataError(error, path: directory, operation: "compaction")
                    lock.withLock {
                        backgroundError = e
                        noteBackgroundFailure(e)
                    }
                }
            }
            run()
            lock.withLock {
                compacting = false
                if backgroundError == nil { maybeScheduleCompaction() }
                lock.broadcast()
            }
        }
    }

    /// Hands runs to a background job without the job's closure holding on to them.
    private final class PendingRuns: @unchecked Sendable {
        private var runs: [SortedRun]?
        init(_ runs: [SortedRun]) { self.runs = runs }
        func take() -> [SortedRun] {
            defer { runs = nil }
            return runs ?? []
        }
    }

    /// Merges `inputs` (consecutive runs, newest first) into one run and installs it in their place.
    private func compact(_ inputs: [SortedRun], bottommost: Bool) throws {
        let filters = lock.withLock { self.filters }
        let writer = RunWriter(directory: directory, options: options.segment,
                               targetFileSize: options.targetSegmentSize) { [self] in allocateFileNumber() }
        var written: [SegmentMetadata] = []
        do {
            if !bottommost {
                writer.addRangeTombstones(SortedRun(segments: inputs.flatMap(\.segments)).rangeTombstones)
            }
            let cursor = MergedCursor(memtables: [], runs: inputs, sequence: .max,
                                      lower: nil, upper: nil, reverse: false, keepTombstones: !bottommost)
            var n = 0
            while try cursor.next() {
                n += 1
                if n & 0xFFF == 0 && shuttingDown.load(ordering: .relaxed) {
                    throw StrataError.closed
                }
                var kind = cursor.kind
                if kind == .value, !filters.isEmpty,
                   let filter = cursor.withKey({ filters[SegmentProperties.keyspace(of: $0)] }),
                   !cursor.withKey({ filter($0, cursor.value) }) {
                    // Dropped. Above the bottom, older runs may hold older versions: shadow them.
                    if bottommost { continue }
                    kind = .tombstone
                }
                try cursor.withKey {
                    try writer.add(key: $0, kind: kind,
                                   value: kind == .value ? cursor.value : UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            written = try writer.finish()
        } catch {
            if let e = writer.abandon() { lock.withLock { noteBackgroundFailure(e) } }
            throw error
        }
        let readers = try installable(written)
        try lock.withLock {
            let inputNumbers = Set(inputs.flatMap(\.numbers))
            guard let start = version.runs.firstIndex(where: { $0 === inputs[0] }) else {
                for r in readers { r.markObsolete() }
                throw StrataError.conflict("compaction inputs are no longer live")
            }
            var m = manifest
            var runs = version.runs
            var metas = m.runs
            runs.replaceSubrange(start..<(start + inputs.count), with: readers.isEmpty ? [] : [SortedRun(segments: readers)])
            metas.replaceSubrange(start..<(start + inputs.count), with: written.isEmpty ? [] : [written])
            m.runs = metas
            try publish(m, adding: readers)
            version = Version(runs: runs)
            compactions += 1
            compactionBytesRead += inputs.reduce(0) { $0 + $1.fileSize }
            compactionBytesWritten += written.reduce(0) { $0 + $1.fileSize }
            for run in inputs { for s in run.segments where inputNumbers.contains(s.number) { s.markObsolete() } }
        }
    }

    /// Waits until no flush or compaction is running (one that failed does not restart by itself).
    func waitForBackgroundWork() {
        lock.withLock { while flushing || compacting { lock.wait() } }
    }

    /// Flushes the memtable and merges every run into one, applying filters and dropping
    /// tombstones; returns when done.
    func compactAll() throws {
        // The switch to a new memtable goes through the commit queue like a write.
        try commit(PendingWrite(batch: WriteBatch(), sync: false, rotation: true))
        lock.lock()
        while true {
            // Checked first: a close may have finished while this thread waited for the lock.
            if closed { lock.unlock(); throw StrataError.closed }
            if let e = writeError { lock.unlock(); throw e }
            if immutables.isEmpty && !compacting { break }
            if let e = backgroundError, !flushing, !compacting {
                backgroundError = nil
                lock.unlock()
                throw e
            }
            scheduleFlush()
            lock.wait()
        }
        compacting = true
        var inputs: [SortedRun]? = version.runs
        let worthIt = inputs!.count > 1 || !filters.isEmpty
            || inputs!.contains { $0.rangeTombstones.count > 0 || $0.segments.contains { $0.properties.tombstones > 0 } }
        lock.unlock()
        var failure: Error?
        if worthIt && !inputs!.isEmpty {
            do { try compact(inputs!, bottommost: true) } catch { failure = error }
        }
        inputs = nil  // release the old runs (deleting their files) before `compacting` clears
        lock.withLock {
            compacting = false
            maybeScheduleCompaction()
            lock.broadcast()
        }
        if let failure { throw failure }
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
        }
        if let failed { throw failed }
        do { try log.sync() } catch {
            let e = Self.strataError(error, path: log.path, operation: "fsync")
            lock.withLock { fail(e) }
            throw e
        }
    }

    // MARK: Introspection

    var statistics: StoreStatistics {
        lock.withLock {
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
                backgroundFailures: backgroundFailures,
                lastBackgroundError: lastBackgroundError,
                writeError: writeError)
        }
    }
}
