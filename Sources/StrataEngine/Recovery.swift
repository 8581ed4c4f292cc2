@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// Opening a store: reading what is on disk, replaying the logs, and making the result durable
/// (FORMAT.md 4.5). Called by ``Engine`` once it holds the lock.
///
/// Recovery runs in two phases. The first only reads: the manifest, the directory, every listed
/// segment, every log to replay (each record checked by ``LogReplayCheck``), and replays the logs
/// into memtables. Any fault found there refuses the open and leaves the directory exactly as it
/// was. The second writes: it syncs the replayed logs that stay live, creates the new log, and
/// replaces the manifest — unless the newest log can take the new writes (FORMAT.md 4.5, step 9),
/// when it writes nothing but those syncs; only once the manifest is durable does it delete what
/// the store no longer needs (temporary files, unlisted segments, flushed and empty logs).
/// Deleting is then best effort: a file left over is deleted at the next open, and never makes
/// this one fail.
///
/// No segment is written: the replayed logs stay live, named by the manifest as logs still to
/// replay, and their records wait in memtables for a flush in the background, as if they had been
/// written in this run. The newest of them becomes the active memtable (its writes then go to the
/// new or reused log); the others are sealed, flushed right after open. Only an open that finds
/// ``maxReplayedLogs`` logs or more (left by opens that each crashed before a flush) writes their
/// records to segments first, as recovery always did, so that such crashes cannot pile logs up.
package struct EngineRecovery {
    /// The manifest written at the end of recovery.
    package let manifest: Manifest
    /// The runs it lists, open, newest first.
    package let runs: [SortedRun]
    /// The new, empty log writes go to.
    package let log: LogWriter
    /// The memtable writes go to: the newest replayed records, tied to their logs and to `log`.
    package let active: Memtable
    /// Memtables of older replayed logs, sealed and waiting for their flush, newest first.
    package let immutables: [Memtable]
    /// The last sequence number used; writes continue after it.
    package let lastSequence: UInt64
    package let report: RecoveryReport
    /// Deletions of files the open store no longer needs that failed (the next open tries again);
    /// the engine counts them with its background failures.
    package var cleanupFailures: [StrataError] = []

    /// How many logs with records an open keeps live at most. Each open that crashes before a
    /// flush may leave one more log behind; an open that finds this many writes their records to
    /// segments before it returns (FORMAT.md 4.5, step 7), which bounds the logs however often
    /// the store crashes.
    package static let maxReplayedLogs = 8

    /// What the read-only phase found.
    private struct Plan {
        var manifest: Manifest
        var isNewStore: Bool
        var nextFileNumber: UInt64
        var runs: [SortedRun]
        var live: Set<UInt64>
        var segmentsOnDisk: Set<UInt64>
        var temporaries: [String]
        /// Logs below the manifest's log number, and replayed logs without a record.
        var logsToDelete: [UInt64]
        /// Replayed logs with records: they stay until a flush writes their records.
        var liveLogs: [UInt64]
        /// The newest log read, when it can take the new writes (``ReplayedLog/isReusable(options:)``)
        /// and the manifest stays as it is: the open appends to it, and creates no log and writes
        /// no manifest (FORMAT.md 4.5, step 9).
        var reusedLog: UInt64?
        /// The reused log's length, where appends continue.
        var reusedLength: Int
        var active: Memtable
        var immutables: [Memtable]
        /// Whether the replayed records are written to segments during the open (there are
        /// ``maxReplayedLogs`` logs or more).
        var writeSegments: Bool
        var lastSequence: UInt64
        var report: RecoveryReport
    }

    /// One replayed log's records, for grouping into memtables.
    private struct ReplayedLog {
        let number: UInt64
        /// Holds the log's bytes, which `batches` are views into.
        let reader: LogReader
        var batches: [ReplayedTable.View] = []
        var bytes = 0
        var torn = false

        /// Whether this log, the newest one read, may take the new writes rather than a new log:
        /// a version 2 log (not encrypted: an encrypted log seals each record with its offset as
        /// nonce, and a record that was written there and lost must not have its nonce used
        /// again) read to its end with no torn tail (FORMAT.md 4.5, step 9).
        func isReusable(options: EngineOptions) -> Bool {
            !torn && options.encryptionKey == nil && reader.formatVersion == LogFormat.version
                && reader.validLength == reader.fileLength
        }
    }

    package static func recover(directory: String, options: EngineOptions, cache: BlockCache?,
                                check: (Snapshot) throws -> Void = { _ in }) throws -> EngineRecovery {
        let plan = try read(directory: directory, options: options, cache: cache)
        // The collections read what they load at open from the recovered state, still in phase 1:
        // a fault they find refuses the open with nothing written (FORMAT.md 4.5, step 6a).
        try check(Snapshot(sequence: plan.lastSequence, memtables: [plan.active] + plan.immutables,
                           version: Version(runs: plan.runs)))
        return try write(plan, directory: directory, options: options, cache: cache)
    }

    // MARK: Phase 1: read and check everything; change nothing

    private static func read(directory: String, options: EngineOptions, cache: BlockCache?) throws -> Plan {
        let manifestPath = directory + "/" + FileNames.manifest
        let existing = try Manifest.read(directory: directory, fileSystem: options.fileSystem, key: options.encryptionKey)
        // Without a manifest this may be a directory whose mkdir a crash left unsynced (FORMAT.md
        // 9.1); with one, an earlier open synced it before writing that manifest. A sync changes
        // nothing a refused open must leave as it was.
        if existing == nil { try Engine.syncDirectoryEntry(directory, fileSystem: options.fileSystem) }
        let names = try options.fileSystem.listDirectory(directory)
        if names.contains(FileNames.backupMarker) {
            // A backup stopped before its manifest was durable: some of its files may be missing
            // or short, so it is not a store (FORMAT.md 9.6).
            throw StrataError.corrupted(file: directory + "/" + FileNames.backupMarker, offset: 0,
                                        reason: "an unfinished backup: the copy stopped before it was complete; make the backup again")
        }
        var logsOnDisk: [UInt64] = []
        var segmentsOnDisk = Set<UInt64>()
        var temporaries: [String] = []
        var maxNumber: UInt64 = 0
        var firstDataFile: String?
        for name in names.sorted() {
            let kind = FileNames.parse(name)
            switch kind {
            case .log(let n), .segment(let n):
                // The store never gets near this number; a file bearing it was not made by the store,
                // and every number derived from it (the next file number) would overflow.
                guard n <= LogFormat.maxCounter else {
                    throw StrataError.corrupted(file: directory + "/" + name, offset: 0,
                                                reason: "file number \(n) exceeds the limit \(LogFormat.maxCounter)")
                }
                maxNumber = max(maxNumber, n)
                if firstDataFile == nil { firstDataFile = name }
                if case .log = kind { logsOnDisk.append(n) } else { segmentsOnDisk.insert(n) }
            case .temporary:
                temporaries.append(name)
            default:
                break
            }
        }
        if existing == nil, let data = firstDataFile {
            // A new store writes its manifest before any log or segment exists, so data files
            // without it mean it was lost: refuse rather than start over and delete them.
            throw StrataError.corrupted(file: manifestPath, offset: 0, reason: "MANIFEST is missing but \(data) exists")
        }
        let m = existing ?? Manifest()
        logsOnDisk.sort()
        let replay = logsOnDisk.filter { $0 >= m.logNumber }
        // Logs below the manifest's log number were flushed before a crash cut their deletion short.
        let stale = logsOnDisk.filter { $0 < m.logNumber }

        if m.logNumber > 0, !logsOnDisk.contains(m.logNumber) {
            // From version 2 on, a log exists (and its name is durable) before a manifest names
            // it: missing, it was lost. A version 1 manifest was written before its log was
            // created, so a crash in between left it naming a log that never existed; that log
            // was the newest, so any log above it means this one was lost too.
            if m.formatVersion >= 2 || replay.contains(where: { $0 > m.logNumber }) {
                throw StrataError.corrupted(file: directory + "/" + FileNames.log(m.logNumber), offset: 0,
                                            reason: "log \(m.logNumber), which the manifest names, is missing")
            }
        }

        var runs: [SortedRun] = []
        var live = Set<UInt64>()
        for run in m.runs {
            var readers: [SegmentReader] = []
            for s in run {
                let path = directory + "/" + FileNames.segment(s.number)
                guard live.insert(s.number).inserted else {
                    throw StrataError.corrupted(file: manifestPath, offset: 0, reason: "segment \(FileNames.segment(s.number)) is listed twice")
                }
                guard segmentsOnDisk.contains(s.number) else {
                    throw StrataError.corrupted(file: path, offset: 0, reason: "segment listed in the manifest is missing")
                }
                // Manifest.decode refused sizes that do not fit an Int.
                readers.append(try SegmentReader(path: path, number: s.number, cache: cache, expectedSize: Int(s.fileSize), fileSystem: options.fileSystem, key: options.encryptionKey))
            }
            runs.append(SortedRun(segments: readers))
        }

        // Read and check every log to replay before applying any of it.
        var report = RecoveryReport()
        var check = LogReplayCheck()
        var versions = LogVersionOrder(manifestVersion: m.formatVersion)
        var logs: [ReplayedLog] = []
        for n in replay {
            let path = directory + "/" + FileNames.log(n)
            let reader: LogReader
            do {
                // Mapped: the open holds the lock, and the replayed table points into these bytes.
                reader = try LogReader(path: path, fileSystem: options.fileSystem, key: options.encryptionKey, mapped: true)
            } catch let error as StrataError {
                // A key change (Store.changeEncryptionKey) creates the log its new manifest names,
                // under the new key, before that manifest replaces the old one: a crash in between
                // leaves it beside the old manifest. It holds no record (a header only), so
                // nothing is lost by taking it for an empty log (deleted below).
                guard case .encryptionKey = error,
                      let size = try? options.fileSystem.withFile(path, flags: .readOnly, { try $0.size() }),
                      size == LogFormat.headerSize || size == LogFormat.encryptedHeaderSize
                else { throw error }
                reader = try LogReader(path: path, bytes: [])
            }
            try versions.check(version: reader.formatVersion, path: path)
            if reader.formatVersion != nil && reader.logNumber != n {
                throw StrataError.corrupted(file: path, offset: 12,
                                            reason: "header says log \(reader.logNumber), the file name says \(n)")
            }
            var log = ReplayedLog(number: n, reader: reader)
            let records = reader.views
            log.batches.reserveCapacity(records.count)
            for record in records {
                // ReplayedTable decodes the operations, with the same errors, before phase 2.
                try check.check(record, path: path, decodingOperations: false)
                log.batches.append(ReplayedTable.View(payload: record.payload, file: path, offset: record.offset))
                log.bytes += record.payload.count
            }
            if case .tornTail(let offset, let reason) = reader.end {
                report.cutTails.append(RecoveryReport.CutTail(file: path, offset: offset,
                                                              bytesCut: reader.fileLength - offset, reason: reason))
                log.torn = true
            }
            report.logsReplayed += 1
            logs.append(log)
        }
        try versions.finish()
        report.batchesReplayed = check.batches

        // The new log's number, unless phase 2 writes segments first (then no memtable keeps it).
        let nextFileNumber = max(m.nextFileNumber, maxNumber + 1)
        // The new log takes a number, and the manifest's nextFileNumber after it must stay within
        // the limit (section 2): refused here, before anything is written.
        var probe = nextFileNumber
        try CounterLimit.take(from: &probe, "file number for the new log", last: CounterLimit.max - 1)
        let liveLogs = logs.filter { !$0.batches.isEmpty }.map(\.number)
        let writeSegments = liveLogs.count >= maxReplayedLogs
        // The newest log takes the new writes when the manifest stays as it is: it names the
        // oldest log that stays (every log below was flushed, every log read is kept or empty),
        // no log was torn (a torn one seals its memtable), and nothing is written to segments.
        var reusedLog: UInt64?
        if existing != nil, m.formatVersion == Manifest.version, !writeSegments,
           let newest = logs.last, newest.isReusable(options: options), !logs.contains(where: \.torn),
           m.logNumber == (liveLogs.first ?? newest.number) {
            reusedLog = newest.number
        }
        let (active, immutables) = try memtables(replaying: logs, newLog: reusedLog ?? nextFileNumber, options: options)
        let empty = logs.filter { $0.batches.isEmpty && $0.number != reusedLog }.map(\.number)

        return Plan(manifest: m, isNewStore: existing == nil, nextFileNumber: nextFileNumber,
                    runs: runs, live: live, segmentsOnDisk: segmentsOnDisk, temporaries: temporaries,
                    logsToDelete: stale + empty, liveLogs: liveLogs,
                    reusedLog: reusedLog, reusedLength: logs.last?.reader.fileLength ?? 0,
                    active: active, immutables: immutables,
                    writeSegments: writeSegments,
                    lastSequence: max(m.lastSequence, check.lastSequence), report: report)
    }

    /// Gives the replayed logs' records to memtables, each tied to the logs it holds (FORMAT.md
    /// 4.5, step 6): each memtable's records are one ``ReplayedTable``, sorted over the logs'
    /// bytes, under the skip list that takes its new writes. Consecutive logs share a memtable
    /// while their records fit in `memtableSize`; every log with records belongs to exactly one memtable. The newest memtable
    /// becomes the active one, tied also to `newLog`, unless one of its logs has a torn tail: then
    /// it is sealed too (flushed right after open, so that the cut tail is reported once) and the
    /// active memtable starts empty. Returns the active memtable and the sealed ones, newest first.
    private static func memtables(replaying logs: [ReplayedLog], newLog: UInt64,
                               options: EngineOptions) throws -> (active: Memtable, immutables: [Memtable]) {
        var groups: [[ReplayedLog]] = []
        var bytes = 0
        for log in logs where !log.batches.isEmpty {
            if let current = groups.last,
               bytes + log.bytes <= options.memtableSize, current.count < maxReplayedLogs {
                groups[groups.count - 1].append(log)
                bytes += log.bytes
            } else {
                groups.append([log])
                bytes = log.bytes
            }
        }
        var immutables: [Memtable] = []
        var active: Memtable?
        for (i, group) in groups.enumerated() {
            let numbers = group.map(\.number)
            // The table keeps the logs' bytes its entries point into.
            let table = try ReplayedTable(replaying: group.flatMap(\.batches), keeping: group.map(\.reader.storage))
            if i == groups.count - 1, !group.contains(where: \.torn) {
                // Tied to the new log too, which may be the newest replayed one (reused).
                active = Memtable(logNumber: newLog, replayedLogs: numbers.filter { $0 != newLog }, replayed: table)
            } else {
                immutables.insert(Memtable(logNumber: numbers[numbers.count - 1], replayedLogs: Array(numbers.dropLast()),
                                           replayed: table), at: 0)
            }
        }
        return (active ?? Memtable(logNumber: newLog), immutables)
    }

    // MARK: Phase 2: make the recovered state durable, then clean up

    private static func write(_ plan: Plan, directory: String, options: EngineOptions,
                              cache: BlockCache?) throws -> EngineRecovery {
        var m = plan.manifest
        m.formatVersion = Manifest.version
        if plan.isNewStore {
            // The manifest comes before any log: no crash leaves a log without one.
            try m.write(directory: directory, fileSystem: options.fileSystem, key: options.encryptionKey)
        }
        var runs = plan.runs
        var active = plan.active
        var immutables = plan.immutables
        var liveLogs = plan.liveLogs
        var logsToDelete = plan.logsToDelete
        var nextNumber = plan.nextFileNumber
        var written: [[SegmentMetadata]] = []
        let log: LogWriter
        if !plan.writeSegments {
            // The replayed records the store now serves must survive a power cut from here on,
            // as they did when recovery wrote them to a segment: the previous run may not have
            // synced them (step 8). Their names are durable already (a log's name is synced when
            // it is created, 4.4). A store that writes them to segments instead deletes the logs.
            for n in plan.liveLogs {
                try options.fileSystem.withFile(directory + "/" + FileNames.log(n), flags: .readOnly) { try $0.sync() }
            }
        }
        if let n = plan.reusedLog {
            // No new log and no manifest to replace. The manifest in memory counts the numbers of
            // files it found above its own.
            log = try LogWriter(reopening: directory + "/" + FileNames.log(n), number: n,
                                length: plan.reusedLength, fileSystem: options.fileSystem)
            m.nextFileNumber = plan.nextFileNumber
            m.lastSequence = plan.lastSequence
            return finish(plan, manifest: m, runs: runs, log: log, active: active, immutables: immutables,
                          logsToDelete: logsToDelete, directory: directory, options: options)
        }
        do {
            if plan.writeSegments {
                // Too many logs: their records go to segments now (one run per memtable, the
                // newest first), and the logs are deleted once the manifest lists the runs.
                for memtable in ([active] + immutables).reversed() where !memtable.isEmpty {
                    // No transform is registered yet, so nothing can report damage.
                    let run = try Engine.writeRun(from: memtable, directory: directory, options: options,
                                                 transforms: [:], damage: DamageRecorder(log: .silent)) {
                        try CounterLimit.take(from: &nextNumber, "file number", last: CounterLimit.max - 1)
                    }
                    if !run.isEmpty { written.insert(run, at: 0) }
                }
                if !written.isEmpty {
                    try options.fileSystem.syncDirectory(directory)
                    for run in written.reversed() {
                        runs.insert(SortedRun(segments: try Engine.openSegments(run, directory: directory, cache: cache, fileSystem: options.fileSystem, key: options.encryptionKey)), at: 0)
                    }
                }
                logsToDelete += liveLogs
                liveLogs = []
                immutables = []
            }
            // The new log exists, and its name is durable, before the manifest names it: a log the
            // manifest names is never missing after a crash.
            let path = directory + "/" + FileNames.log(nextNumber)
            do {
                log = try LogWriter(path: path, number: nextNumber, fileSystem: options.fileSystem, key: options.encryptionKey)
            } catch {
                if (try? options.fileSystem.exists(path)) == true { try? options.fileSystem.remove(path) }
                throw error
            }
            do {
                try log.sync()
                try options.fileSystem.syncDirectory(directory)
            } catch {
                log.close()
                try? options.fileSystem.remove(path)
                throw error
            }
        } catch {
            // Nothing names these segments yet: take them back.
            for s in written.joined() { try? options.fileSystem.remove(directory + "/" + FileNames.segment(s.number)) }
            throw error
        }
        if plan.writeSegments { active = Memtable(logNumber: nextNumber) }
        // The oldest log with records stays the first to replay; the logs below it are flushed
        // or empty.
        m.nextFileNumber = nextNumber + 1
        m.logNumber = liveLogs.first ?? nextNumber
        m.lastSequence = plan.lastSequence
        m.runs.insert(contentsOf: written, at: 0)
        do {
            try m.write(directory: directory, fileSystem: options.fileSystem, key: options.encryptionKey)
        } catch {
            // The rename may have happened: the new log and segments stay (unlisted, they are
            // deleted at the next open; listed, they are needed).
            log.close()
            throw error
        }

        return finish(plan, manifest: m, runs: runs, log: log, active: active, immutables: immutables,
                      logsToDelete: logsToDelete, directory: directory, options: options)
    }

    /// The store is open. What it no longer needs goes; a failure here leaves a file the next
    /// open deletes, and is reported.
    private static func finish(_ plan: Plan, manifest m: Manifest, runs: [SortedRun], log: LogWriter, active: Memtable,
                               immutables: [Memtable], logsToDelete: [UInt64], directory: String,
                               options: EngineOptions) -> EngineRecovery {
        var cleanupFailures: [StrataError] = []
        func remove(_ name: String) {
            let path = directory + "/" + name
            do { try options.fileSystem.remove(path) } catch {
                cleanupFailures.append(Engine.strataError(error, path: path, operation: "unlink"))
            }
        }
        for name in plan.temporaries { remove(name) }
        for n in plan.segmentsOnDisk where !plan.live.contains(n) { remove(FileNames.segment(n)) }
        for n in logsToDelete { remove(FileNames.log(n)) }

        var recovered = EngineRecovery(manifest: m, runs: runs, log: log, active: active, immutables: immutables,
                                       lastSequence: plan.lastSequence, report: plan.report)
        recovered.cleanupFailures = cleanupFailures
        return recovered
    }

    package init(manifest: Manifest, runs: [SortedRun], log: LogWriter, active: Memtable, immutables: [Memtable], lastSequence: UInt64, report: RecoveryReport) {
        self.manifest = manifest
        self.runs = runs
        self.log = log
        self.active = active
        self.immutables = immutables
        self.lastSequence = lastSequence
        self.report = report
    }
}
