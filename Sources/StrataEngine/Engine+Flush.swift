import Dispatch
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// Flush: an immutable memtable becomes a sorted run of segment files, published by a
// manifest edit (FORMAT.md 9.2); the log it came from is then deleted.
extension Engine {
    // MARK: Flush

    /// Starts the flush thread on the oldest immutable memtable unless it is running already.
    /// Flushes happen only there, one at a time.
    package func scheduleFlush() {
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

    /// The next file number; refused (nothing written) when the manifest's `nextFileNumber`
    /// after it would pass the limit (FORMAT.md 2).
    package func allocateFileNumber() throws -> UInt64 {
        try lock.withLock {
            try CounterLimit.take(from: &manifest.nextFileNumber, "file number", last: CounterLimit.max - 1)
        }
    }

    /// Writes a memtable's records (the newest version of each key, tombstones kept) as one run.
    package static func writeRun(from memtable: Memtable, directory: String, options: EngineOptions,
                         transforms: [UInt64: any RecordTransform], damage: DamageRecorder,
                         allocate: @escaping () throws -> UInt64,
                         cleanupFailed: (StrataError) -> Void = { _ in }) throws -> [SegmentMetadata] {
        let writer = RunWriter(directory: directory, fileSystem: options.fileSystem, options: options.segment,
                               targetFileSize: options.targetSegmentSize, allocateNumber: allocate)
        do {
            writer.addRangeTombstones(memtable.allRangeTombstones.map { RangeTombstone(start: $0.start, end: $0.end) })
            let cursor = MergedCursor(memtables: [memtable], runs: [], sequence: .max,
                                      lower: nil, upper: nil, reverse: false, keepTombstones: true)
            var transformer = RecordTransformer(transforms, writer: writer, damage: damage)
            while try cursor.next() {
                try cursor.withKey { try transformer.add(key: $0, kind: cursor.kind, value: cursor.value) }
            }
            try transformer.finish()
            return try writer.finish()
        } catch {
            if let e = writer.abandon() { cleanupFailed(e) }
            throw error
        }
    }

    /// Flushes the oldest immutable memtable to a new sorted run and publishes it (FORMAT.md 9.2).
    package func flushOne() {
        guard let memtable = lock.withLock({ writeError == nil ? immutables.last : nil }) else { return }
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let written = try Self.writeRun(from: memtable, directory: directory, options: options,
                                            transforms: lock.withLock { transforms }, damage: damage,
                                            allocate: { [self] in try allocateFileNumber() },
                                            cleanupFailed: { [self] e in
                                                lock.withLock { noteBackgroundFailure(e, during: "flush cleanup") }
                                            })
            let readers = try installable(written)
            let runs: Int = try lock.withLock {
                var m = manifest
                if !written.isEmpty { m.runs.insert(written, at: 0) }
                let remaining = immutables.dropLast()
                m.logNumber = remaining.last?.oldestLogNumber ?? active.oldestLogNumber
                m.lastSequence = lastSequence
                try publish(m, adding: readers)
                if !readers.isEmpty {
                    let run = SortedRun(segments: readers)
                    #if STRATA_INVARIANTS
                    run.checkInvariants()
                    #endif
                    version = Version(runs: [run] + version.runs)
                }
                flushes += 1
                flushBytes += written.reduce(0) { $0 + $1.fileSize }
                mostRuns = max(mostRuns, version.runs.count)
                assert(immutables.last === memtable, "only the flush thread removes immutable memtables")
                immutables.removeLast()
                backgroundError = nil
                maybeScheduleCompaction()
                return version.runs.count
            }
            diagnostics(.info, "Flushed a memtable", [
                "memtable.bytes": "\(memtable.approximateSize)", "memtable.log": "\(FileNames.log(memtable.logNumber))",
                "output.segments": "\(written.count)", "output.bytes": "\(written.reduce(0) { $0 + $1.fileSize })",
                "output.records": "\(written.reduce(0) { $0 + $1.records })", "runs": "\(runs)",
                "duration.ms": "\(EngineLog.milliseconds(since: start))",
            ])
            diagnostics(.debug, "Flush wrote segments", ["output.files": EngineLog.segmentNames(written.map(\.number))])
        } catch {
            let e = Self.strataError(error, path: directory, operation: "flush")
            lock.withLock {
                backgroundError = e
                noteBackgroundFailure(e, during: "flush")
            }
            return
        }
        // The flushed memtable's logs are no longer needed; one that cannot be deleted, the next
        // open deletes unread (it is below the manifest's log number).
        for n in memtable.logNumbers {
            let path = directory + "/" + FileNames.log(n)
            do { try options.fileSystem.remove(path) } catch {
                let e = Self.strataError(error, path: path, operation: "unlink")
                lock.withLock { noteBackgroundFailure(e, during: "deleting a flushed log") }
            }
        }
    }

    /// Opens readers for segments just written and syncs the directory, so that they may be
    /// published. On failure the segments are deleted; a failed directory sync also fails the
    /// engine (a sync is never retried).
    package func installable(_ written: [SegmentMetadata]) throws -> [SegmentReader] {
        let readers: [SegmentReader]
        do {
            readers = try Self.openSegments(written, directory: directory, cache: cache, fileSystem: options.fileSystem, key: options.encryptionKey)
        } catch {
            for s in written {
                let path = directory + "/" + FileNames.segment(s.number)
                do { try options.fileSystem.remove(path) } catch {
                    let e = Self.strataError(error, path: path, operation: "unlink")
                    lock.withLock { noteBackgroundFailure(e, during: "deleting an unpublished segment") }
                }
            }
            throw error
        }
        if readers.isEmpty { return readers }
        do {
            try options.fileSystem.syncDirectory(directory)
        } catch {
            for r in readers { retire(r) }
            let e = Self.strataError(error, path: directory, operation: "fsync")
            lock.withLock { fail(e) }
            throw e
        }
        return readers
    }

    /// Marks `reader`'s segment obsolete: its file is deleted when the last version, snapshot or
    /// cursor that uses it lets go. A deletion that fails leaves the file for the next open to
    /// delete, and is counted with the background failures; it is reported from the failure
    /// queue, since the last reference may go on a thread that holds the lock.
    package func retire(_ reader: SegmentReader) {
        reader.markObsolete { [weak self] e in
            guard let self else { return }
            failureQueue.async { self.lock.withLock { self.noteBackgroundFailure(e, during: "deleting an obsolete segment") } }
        }
    }

    /// Readers for segments just written.
    package static func openSegments(_ written: [SegmentMetadata], directory: String, cache: BlockCache?,
                                      fileSystem: FileSystem, key: EncryptionKey?) throws -> [SegmentReader] {
        try written.map {
            try SegmentReader(path: directory + "/" + FileNames.segment($0.number), number: $0.number, cache: cache, fileSystem: fileSystem, key: key)
        }
    }

    /// Replaces the manifest with `m`, which lists the segments of `added` (FORMAT.md 9.2, 9.3).
    /// A failure before the rename leaves the old manifest: the new segments are unpublished and
    /// deleted once released, and the caller's job may be retried. A failure at or after the
    /// rename leaves either manifest on disk: the new segments are kept, and so is every file the
    /// old manifest needs (the caller changes nothing), and the engine fails. Called with the
    /// lock held.
    package func publish(_ m: Manifest, adding added: [SegmentReader]) throws {
        if let e = writeError {
            for r in added { retire(r) }
            throw e
        }
        var mayHaveReplaced = false
        do {
            #if STRATA_INVARIANTS
            m.checkInvariants()
            #endif
            try m.write(directory: directory, fileSystem: options.fileSystem, key: options.encryptionKey, mayHaveReplaced: &mayHaveReplaced)
        } catch {
            let e = Self.strataError(error, path: directory + "/" + FileNames.manifest, operation: "rename")
            if mayHaveReplaced {
                fail(e)
            } else {
                for r in added { retire(r) }
            }
            throw e
        }
        manifest = m
    }
}
