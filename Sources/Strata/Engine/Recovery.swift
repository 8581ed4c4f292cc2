/// Opening a store: reading what is on disk, replaying the logs, and making the result durable
/// (FORMAT.md 4.5). Called by ``Engine`` once it holds the lock.
///
/// Recovery runs in two phases. The first only reads: the manifest, the directory, every listed
/// segment, every log to replay (each record checked by ``LogReplayCheck``). Any fault found there
/// refuses the open and leaves the directory exactly as it was. The second writes — the replayed
/// writes as a new run, the new log, then the manifest naming both — and only once that manifest
/// is durable does it delete what the store no longer needs (temporary files, unlisted segments,
/// replayed and older logs). Deleting is then best effort: a file left over is deleted at the next
/// open, and never makes this one fail.
struct EngineRecovery {
    /// The manifest written at the end of recovery.
    let manifest: Manifest
    /// The runs it lists, open, newest first.
    let runs: [SortedRun]
    /// The new, empty log writes go to.
    let log: LogWriter
    /// The last sequence number used; writes continue after it.
    let lastSequence: UInt64
    let report: RecoveryReport

    /// What the read-only phase found.
    private struct Plan {
        var manifest: Manifest
        var isNewStore: Bool
        var nextFileNumber: UInt64
        var runs: [SortedRun]
        var live: Set<UInt64>
        var segmentsOnDisk: Set<UInt64>
        var temporaries: [String]
        var logsToDelete: [UInt64]
        var recovered: Memtable
        var lastSequence: UInt64
        var report: RecoveryReport
    }

    static func recover(directory: String, options: EngineOptions, cache: BlockCache?) throws -> EngineRecovery {
        let plan = try read(directory: directory, cache: cache)
        return try write(plan, directory: directory, options: options, cache: cache)
    }

    // MARK: Phase 1: read and check everything; change nothing

    private static func read(directory: String, cache: BlockCache?) throws -> Plan {
        let manifestPath = directory + "/" + FileNames.manifest
        let existing = try Manifest.read(directory: directory)
        let names = try FileSystem.listDirectory(directory)
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
                readers.append(try SegmentReader(path: path, number: s.number, cache: cache, expectedSize: Int(s.fileSize)))
            }
            runs.append(SortedRun(segments: readers))
        }

        // Read and check every log to replay before applying any of it.
        var report = RecoveryReport()
        var check = LogReplayCheck()
        var batches: [Memtable.ReplayedBatch] = []
        for n in replay {
            let path = directory + "/" + FileNames.log(n)
            let reader = try LogReader(path: path)
            if reader.formatVersion != nil && reader.logNumber != n {
                throw StrataError.corrupted(file: path, offset: 12,
                                            reason: "header says log \(reader.logNumber), the file name says \(n)")
            }
            for record in reader.records {
                try check.check(record, path: path)
                batches.append(Memtable.ReplayedBatch(payload: record.payload, file: path, offset: record.offset))
            }
            if case .tornTail(let offset, let reason) = reader.end {
                report.cutTails.append(RecoveryReport.CutTail(file: path, offset: offset,
                                                              bytesCut: reader.fileLength - offset, reason: reason))
            }
            report.logsReplayed += 1
        }
        report.batchesReplayed = check.batches
        let recovered = Memtable(logNumber: 0)
        _ = try recovered.apply(replaying: batches)
        batches = []

        return Plan(manifest: m, isNewStore: existing == nil,
                    nextFileNumber: max(m.nextFileNumber, maxNumber + 1),
                    runs: runs, live: live, segmentsOnDisk: segmentsOnDisk, temporaries: temporaries,
                    logsToDelete: stale + replay, recovered: recovered,
                    lastSequence: max(m.lastSequence, check.lastSequence), report: report)
    }

    // MARK: Phase 2: make the recovered state durable, then clean up

    private static func write(_ plan: Plan, directory: String, options: EngineOptions, cache: BlockCache?) throws -> EngineRecovery {
        var m = plan.manifest
        m.formatVersion = Manifest.version
        var runs = plan.runs
        var nextNumber = plan.nextFileNumber
        if plan.isNewStore {
            // The manifest comes before any log: no crash leaves a log without one.
            try m.write(directory: directory)
        }
        var written: [SegmentMetadata] = []
        let logNumber: UInt64
        let log: LogWriter
        do {
            if !plan.recovered.isEmpty {
                written = try Engine.writeRun(from: plan.recovered, directory: directory, options: options) {
                    defer { nextNumber += 1 }
                    return nextNumber
                }
                if !written.isEmpty {
                    try FileSystem.syncDirectory(directory)
                    runs.insert(SortedRun(segments: try Engine.openSegments(written, directory: directory, cache: cache)), at: 0)
                }
            }
            // The new log exists, and its name is durable, before the manifest names it: a log the
            // manifest names is never missing after a crash.
            logNumber = nextNumber
            nextNumber += 1
            let path = directory + "/" + FileNames.log(logNumber)
            do {
                log = try LogWriter(path: path, number: logNumber)
            } catch {
                if FileSystem.exists(path) { try? FileSystem.remove(path) }
                throw error
            }
            do {
                try log.sync()
                try FileSystem.syncDirectory(directory)
            } catch {
                log.close()
                try? FileSystem.remove(path)
                throw error
            }
        } catch {
            // Nothing names these segments yet: take them back.
            for s in written { try? FileSystem.remove(directory + "/" + FileNames.segment(s.number)) }
            throw error
        }
        m.nextFileNumber = nextNumber
        m.logNumber = logNumber
        m.lastSequence = plan.lastSequence
        if !written.isEmpty { m.runs.insert(written, at: 0) }
        do {
            try m.write(directory: directory)
        } catch {
            // The rename may have happened: the new log and segments stay (unlisted, they are
            // deleted at the next open; listed, they are needed).
            log.close()
            throw error
        }

        // The store is open. What it no longer needs goes; a failure here leaves a file the next
        // open deletes.
        for name in plan.temporaries { try? FileSystem.remove(directory + "/" + name) }
        for n in plan.segmentsOnDisk where !plan.live.contains(n) {
            try? FileSystem.remove(directory + "/" + FileNames.segment(n))
        }
        for n in plan.logsToDelete { try? FileSystem.remove(directory + "/" + FileNames.log(n)) }

        return EngineRecovery(manifest: m, runs: runs, log: log, lastSequence: plan.lastSequence, report: plan.report)
    }
}
