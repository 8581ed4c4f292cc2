import Dispatch
import Logging
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// Compaction: universal picking of sorted runs, the merge that applies each keyspace's
// compaction filter, and the full compaction of `Store.compact()`.
extension Engine {
    // MARK: Compaction

    /// Registers the compaction filter of a keyspace: records for which it returns false are
    /// dropped when compaction meets them.
    package func setCompactionFilter(keyspace: UInt64, _ filter: CompactionFilter?) {
        lock.withLock { filters[keyspace] = filter }
    }

    /// Registers the record transform of a keyspace (``RecordTransform``): flushes and
    /// compactions that start afterwards write its records through it.
    package func setRecordTransform(keyspace: UInt64, _ transform: (any RecordTransform)?) {
        lock.withLock { transforms[keyspace] = transform }
    }

    /// Universal (size-tiered) picking: from the newest run, take runs while each is no larger
    /// than `compactionSizeRatio` times the runs taken so far; with too many runs and no such
    /// pair, merge the newest ones down to below the trigger. Never more than `maxWidth` runs.
    package static func pickCompaction(runSizes: [UInt64], trigger: Int, ratio: Double, maxWidth: Int = .max) -> Range<Int>? {
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

    package func maybeScheduleCompaction() {
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
                        noteBackgroundFailure(e, during: "compaction")
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
    package final class PendingRuns: @unchecked Sendable {
        private var runs: [SortedRun]?
        package init(_ runs: [SortedRun]) { self.runs = runs }
        package func take() -> [SortedRun] {
            defer { runs = nil }
            return runs ?? []
        }
    }

    /// Merges `inputs` (consecutive runs, newest first) into one run and installs it in their place.
    package func compact(_ inputs: [SortedRun], bottommost: Bool) throws {
        let start = DispatchTime.now().uptimeNanoseconds
        let (filters, transforms) = lock.withLock { (self.filters, self.transforms) }
        diagnostics(.debug, "Compaction started", [
            "input.runs": "\(inputs.count)", "input.files": EngineLog.segmentNames(inputs.flatMap(\.numbers)),
            "bottommost": "\(bottommost)",
        ])
        let writer = RunWriter(directory: directory, fileSystem: options.fileSystem, options: options.segment,
                               targetFileSize: options.targetSegmentSize) { [self] in try allocateFileNumber() }
        var written: [SegmentMetadata] = []
        do {
            if !bottommost {
                writer.addRangeTombstones(SortedRun.mergedRangeTombstones(of: inputs.flatMap(\.segments)))
            }
            let cursor = MergedCursor(memtables: [], runs: inputs, sequence: .max,
                                      lower: nil, upper: nil, reverse: false, keepTombstones: !bottommost)
            var transformer = RecordTransformer(transforms, writer: writer, damage: damage)
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
                    try transformer.add(key: $0, kind: kind,
                                        value: kind == .value ? cursor.value : UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            try transformer.finish()
            written = try writer.finish()
        } catch {
            if let e = writer.abandon() { lock.withLock { noteBackgroundFailure(e, during: "compaction cleanup") } }
            throw error
        }
        let readers = try installable(written)
        let runs: Int = try lock.withLock {
            let inputNumbers = Set(inputs.flatMap(\.numbers))
            guard let start = version.runs.firstIndex(where: { $0 === inputs[0] }) else {
                for r in readers { retire(r) }
                throw StrataError.conflict("compaction inputs are no longer live")
            }
            var m = manifest
            var runs = version.runs
            var metas = m.runs
            let output = readers.isEmpty ? [] : [SortedRun(segments: readers)]
            #if STRATA_INVARIANTS
            output.forEach { $0.checkInvariants() }
            #endif
            runs.replaceSubrange(start..<(start + inputs.count), with: output)
            metas.replaceSubrange(start..<(start + inputs.count), with: written.isEmpty ? [] : [written])
            m.runs = metas
            try publish(m, adding: readers)
            version = Version(runs: runs)
            compactions += 1
            compactionBytesRead += inputs.reduce(0) { $0 + $1.fileSize }
            compactionBytesWritten += written.reduce(0) { $0 + $1.fileSize }
            for run in inputs { for s in run.segments where inputNumbers.contains(s.number) { retire(s) } }
            return version.runs.count
        }
        diagnostics(.info, "Compacted sorted runs", compactionSummary(inputs, written, bottommost: bottommost, runs: runs, start: start))
        diagnostics(.debug, "Compaction wrote segments", ["output.files": EngineLog.segmentNames(written.map(\.number))])
    }

    /// The metadata of a compaction's log message: what it read, wrote and reclaimed.
    private func compactionSummary(_ inputs: [SortedRun], _ written: [SegmentMetadata], bottommost: Bool,
                                   runs: Int, start: UInt64) -> Logger.Metadata {
        let inputBytes = inputs.reduce(0) { $0 + $1.fileSize }
        let outputBytes = written.reduce(0) { $0 + $1.fileSize }
        let inputRecords = inputs.reduce(0) { $0 + $1.records }
        let outputRecords = written.reduce(0) { $0 + $1.records }
        return [
            "input.runs": "\(inputs.count)", "input.segments": "\(inputs.reduce(0) { $0 + $1.segments.count })",
            "input.bytes": "\(inputBytes)", "input.records": "\(inputRecords)",
            "output.segments": "\(written.count)", "output.bytes": "\(outputBytes)", "output.records": "\(outputRecords)",
            "reclaimed.bytes": inputBytes >= outputBytes ? "\(inputBytes - outputBytes)" : "-\(outputBytes - inputBytes)",
            "bottommost": "\(bottommost)", "runs": "\(runs)", "duration.ms": "\(EngineLog.milliseconds(since: start))",
        ]
    }

    /// Waits until no flush or compaction is running (one that failed does not restart by itself).
    package func waitForBackgroundWork() {
        lock.withLock { while flushing || compacting { lock.wait() } }
    }

    /// Flushes the memtable and merges every run into one, applying filters and dropping
    /// tombstones; returns when done.
    package func compactAll() throws {
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
        let worthIt = inputs!.count > 1 || !filters.isEmpty || !transforms.isEmpty
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
}
