import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Checks every byte of a store that the engine would trust: `strata-dump verify`.
///
/// For each segment the manifest lists: that it exists with the size the manifest records; the
/// checksum of every stored block — data, index at every level, filter, range tombstones,
/// properties — and of the footer; the structure of every block as the engine's reader checks it
/// (FORMAT.md 5.3, 5.5: restart offsets on entry boundaries, index and range tombstone entries of
/// kind 0, index handles before the footer, a height in 1…64), faults named at the offsets the
/// engine names (FORMAT.md 5.11); key order within and across data blocks; that each index
/// entry's key is the last key of the block it points to, its record counts (format version 2)
/// what that block or subtree holds, and that a level's entries increase;
/// that the filter admits every key the segment holds; that the properties' counts, sizes and
/// key ranges match what the blocks hold; that the manifest's record count and key range match
/// the segment. Across a run: that no two segments' keys overlap. For each log at or above the
/// manifest's log number: that it reads, that its header names it, and that each record passes
/// `LogReplayCheck`, the check recovery makes (batches that decode, sequence numbers that
/// increase across logs and stay below the limit). A torn log tail is a *note*, not a fault: a
/// crash leaves one and recovery discards it (and reports it); damage a crash cannot leave is a
/// fault. So is everything else open refuses: a missing MANIFEST beside logs or segments, a log
/// the manifest names that is missing, a file number above the limit. Then the records of the
/// collections, as the library checks them where it reads them: a time series chunk whose value
/// kind is not its series' value type's, a document's conflicting-revision entry that is not a
/// losing leaf of its revision tree, and a change-feed entry that does not decode, whose sequence
/// is past the database's last change sequence or whose document does not exist (a fault naming
/// the store directory and the record).
///
/// ```swift
/// let report = try StoreVerifier.verify(storeAt: "/var/lib/app/data.strata")
/// for fault in report.faults { print(fault) }   // "…/000012.seg at offset 4096: block checksum mismatch"
/// ```
/// The verifier reads files read-only and takes no lock; see ``StoreInspector``. On a store in
/// use, a file the store deletes while it is being verified (a flush or compaction replaced it)
/// is a note when the manifest changed meanwhile, and a pass that found faults while the
/// manifest changed is repeated (up to three passes).
public enum StoreVerifier {
    /// Verifies the store in `directory`.
    ///
    /// - Throws: ``InspectionError`` only when `directory` is missing or holds no store; every
    ///   problem with the store's files is a fault in the report.
    ///   `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func verify(storeAt directory: String, key: EncryptionKey? = nil) throws -> VerifyReport {
        try InspectionKey.$current.withValue(key ?? InspectionKey.current) {
            let dir = PathStatus.normalizedDirectory(directory)
            try throwingKeyProblems { _ = try Manifest.read(directory: dir, fileSystem: .real, key: InspectionKey.current) }
            return try verifyStore(directory)
        }
    }

    /// Runs `body` and rethrows only a key that does not fit (``StrataError/encryptionKey(store:problem:)``):
    /// a wrong or missing key is the caller's mistake, not damage to report as a fault.
    private static func throwingKeyProblems(_ body: () throws -> Void) throws {
        do { try body() } catch let error as StrataError {
            if case .encryptionKey = error { throw error }
        } catch {}
    }

    private static func verifyStore(_ directory: String) throws -> VerifyReport {
        let dir = PathStatus.normalizedDirectory(directory)
        try PathStatus.requireDirectory(dir)
        // A store in use changes under the verifier: a flush or compaction publishes a new
        // manifest and deletes the files it replaced, which would read as missing files. When
        // the manifest changed during a pass that found faults, verify again.
        let attempts = 3
        for attempt in 1...attempts {
            let before = manifestBytes(dir)
            var report = try verifyOnce(dir)
            let changed = manifestBytes(dir) != before
            // Files that vanished while the manifest changed were the store's own deletions.
            for f in report.vanished {
                if changed {
                    report.notes.append(VerifyReport.Note(file: f.file, offset: nil, message:
                        "deleted while being verified (the store is in use and replaced it)"))
                } else {
                    report.faults.append(f)
                }
            }
            report.vanished = []
            report.finish()
            if report.isClean || !changed {
                if attempt > 1 {
                    report.notes.append(VerifyReport.Note(file: dir + "/" + FileNames.manifest, message:
                        "the manifest changed during verification (the store is in use); verified \(attempt) times"))
                }
                return report
            }
            if attempt == attempts {
                report.notes.append(VerifyReport.Note(file: dir + "/" + FileNames.manifest, message:
                    "the manifest changed during each of \(attempts) passes (the store is in use); verify a closed store for a definitive answer"))
                return report
            }
        }
        preconditionFailure("unreachable")
    }

    /// The bytes of `MANIFEST` now (nil if it cannot be read), to tell whether it changed.
    private static func manifestBytes(_ dir: String) -> [UInt8]? {
        try? FileSystem.real.withFile(dir + "/" + FileNames.manifest, flags: .readOnly) { f in try f.read(at: 0, count: try f.size()) }
    }

    /// One pass over the store.
    private static func verifyOnce(_ dir: String) throws -> VerifyReport {
        let names = try FileSystem.real.listDirectory(dir).sorted()
        var report = VerifyReport(path: dir)
        let manifestPath = dir + "/" + FileNames.manifest

        var manifest: Manifest?
        do {
            switch try StoreInspector.readManifest(dir, names: names) {
            case .present(let m): manifest = m
            case .absent:
                // A new store writes its manifest before any log or segment: open refuses this.
                report.fault(manifestPath, FileFault(offset: 0, reason:
                    "MANIFEST is missing but the directory holds logs or segments; open refuses the store"))
            case .notAStore: throw InspectionError.notAStore(path: dir)
            }
        } catch let error as InspectionError {
            throw error
        } catch {
            report.fault(manifestPath, FileFault(error, at: 0))
        }

        var listed = Set<UInt64>()
        if let manifest {
            for (runIndex, run) in manifest.runs.enumerated() {
                var ranges: [(number: UInt64, smallest: [UInt8], largest: [UInt8])] = []
                for meta in run {
                    let path = dir + "/" + FileNames.segment(meta.number)
                    guard listed.insert(meta.number).inserted else {
                        report.fault(manifestPath, FileFault(offset: 0, reason: "segment \(FileNames.segment(meta.number)) is listed twice"))
                        continue
                    }
                    if let range = checkSegment(path: path, number: meta.number, expected: meta, into: &report) {
                        ranges.append((meta.number, range.smallest, range.largest))
                    }
                }
                // Point keys of a run's segments must not overlap (range tombstones may: they
                // apply to older runs only).
                ranges.sort { ByteComparison.compare($0.smallest, $1.smallest) < 0 }
                for (a, b) in zip(ranges, ranges.dropFirst()) where ByteComparison.compare(a.largest, b.smallest) >= 0 {
                    report.fault(dir + "/" + FileNames.segment(b.number), FileFault(offset: 0, reason:
                        "run \(runIndex): keys \(KeyRendering.describe(b.smallest))… overlap \(FileNames.segment(a.number)), which ends at \(KeyRendering.describe(a.largest))"))
                }
            }
        }

        // File names open refuses, and the logs it replays, in number order.
        var logs: [UInt64] = []
        for name in names {
            let path = dir + "/" + name
            switch FileNames.parse(name) {
            case .log(let n) where n > LogFormat.maxCounter, .segment(let n) where n > LogFormat.maxCounter:
                report.fault(path, FileFault(offset: 0, reason:
                    "file number \(n) exceeds the limit \(LogFormat.maxCounter); open refuses the store"))
            case .segment(let n) where manifest != nil && !listed.contains(n):
                report.notes.append(VerifyReport.Note(file: path, message:
                    "not listed in the manifest (left by an unfinished flush or compaction, or awaiting deletion); recovery deletes it"))
            case .temporary:
                report.notes.append(VerifyReport.Note(file: path, message: "temporary file; recovery deletes it"))
            case .other where name == FileNames.backupMarker:
                report.fault(path, FileFault(offset: 0, reason: "an unfinished backup (FORMAT.md 9.6); open refuses the store"))
            case .log(let n):
                if let manifest, n < manifest.logNumber {
                    report.notes.append(VerifyReport.Note(file: path, message:
                        "log below the manifest's log number \(manifest.logNumber): already flushed, not replayed"))
                } else {
                    logs.append(n)
                }
            default:
                break
            }
        }
        logs.sort()
        if let manifest, manifest.logNumber > 0, !logs.contains(manifest.logNumber) {
            let path = dir + "/" + FileNames.log(manifest.logNumber)
            // The same rule as recovery (EngineRecovery): see FORMAT.md 4.5.
            if manifest.formatVersion >= 2 || logs.contains(where: { $0 > manifest.logNumber }) {
                report.vanished.append(VerifyReport.Fault(file: path, offset: 0, reason: "log \(manifest.logNumber), which the manifest names, is missing"))
            } else {
                report.notes.append(VerifyReport.Note(file: path, message:
                    "the version 1 manifest names a log that was never created (a crash before its creation); nothing to replay"))
            }
        }
        var replay = LogReplayCheck()
        // No manifest: nothing says which log versions its builds wrote.
        var versions = LogVersionOrder(manifestVersion: manifest?.formatVersion ?? 1)
        for n in logs where n <= LogFormat.maxCounter {
            let path = dir + "/" + FileNames.log(n)
            let version = checkLog(path: path, number: n, replay: &replay, into: &report)
            do { try versions.check(version: version, path: path) } catch { report.fault(path, FileFault(error, at: 8)) }
        }
        do { try versions.finish() } catch StrataError.corrupted(let path, let offset, let reason) {
            report.fault(path, FileFault(offset: offset, reason: reason))
        } catch {}
        if manifest != nil { checkCollections(dir, into: &report) }
        report.finish()
        return report
    }

    /// The records of the collections, checked as the library checks them where it reads them
    /// (a store opens with them, and a read refuses them), by each registered kind's inspector
    /// (``CollectionInspector/findings(in:)``): each time series' chunks against its value type,
    /// each document database's conflicting-revision entries and change feed. A
    /// finding names the store directory and the record. When the store cannot be read as a
    /// whole, that is a fault only if no file fault explains it (and, like a vanished file, a
    /// note when the store changed meanwhile).
    private static func checkCollections(_ dir: String, into report: inout VerifyReport) {
        do {
            let snapshot = try StoreImage.snapshot(directory: dir)
            for inspector in StoreCollections.inspectors {
                for finding in try inspector.findings(in: snapshot) {
                    report.fault(dir, FileFault(offset: 0, reason: finding))
                }
            }
        } catch {
            if report.faults.isEmpty && report.vanished.isEmpty {
                let fault = FileFault(error, at: 0)
                report.vanished.append(VerifyReport.Fault(file: dir, offset: fault.offset, reason: fault.reason))
            }
        }
    }

    /// Verifies one segment or log file on its own (without a manifest to compare with).
    ///
    /// - Throws: ``InspectionError`` when `path` is not a segment, log or manifest.
    ///   `key` reads a file of an encrypted store.
    public static func verify(fileAt path: String, key: EncryptionKey? = nil) throws -> VerifyReport {
        try InspectionKey.$current.withValue(key ?? InspectionKey.current) {
            try throwingKeyProblems {
                switch StoreInspector.kind(ofFileNamed: StoreInspector.baseName(path)) {
                case .segment: _ = try SegmentReader(path: path, number: 0, cache: nil, fileSystem: .real, key: InspectionKey.current)
                case .log: _ = try LogReader(path: path, fileSystem: .real, key: InspectionKey.current)
                default: break
                }
            }
            return try verifyFile(path)
        }
    }

    private static func verifyFile(_ path: String) throws -> VerifyReport {
        var report = VerifyReport(path: path)
        let name = StoreInspector.baseName(path)
        switch try StoreInspector.kind(ofFileAt: path) {
        case .segment:
            var number: UInt64 = 0
            if case .segment(let n) = FileNames.parse(name) { number = n }
            _ = checkSegment(path: path, number: number, expected: nil, into: &report)
        case .log:
            var number: UInt64?
            if case .log(let n) = FileNames.parse(name) { number = n }
            var replay = LogReplayCheck()
            checkLog(path: path, number: number, replay: &replay, into: &report)
        case .manifest:
            do {
                let bytes = try FileSystem.real.withFile(path, flags: .readOnly) { f in try f.read(at: 0, count: try f.size()) }
                _ = try Manifest.decode(bytes, file: path, key: InspectionKey.current)
            } catch {
                report.fault(path, FileFault(error, at: 0))
            }
        case .lock, .temporary, .other:
            throw InspectionError.notAStrataFile(path: path)
        }
        report.faults += report.vanished
        report.vanished = []
        report.finish()
        return report
    }

    // MARK: Segments

    /// Checks one segment; returns its point key range when it has records and could be read.
    static func checkSegment(path: String, number: UInt64, expected: SegmentMetadata?,
                             into report: inout VerifyReport) -> (smallest: [UInt8], largest: [UInt8])? {
        func fault(_ offset: Int, _ reason: String) { report.fault(path, FileFault(offset: offset, reason: reason)) }

        guard case .regularFile(let size) = PathStatus.of(path) else {
            let f = VerifyReport.Fault(file: path, offset: 0, reason:
                expected != nil ? "segment listed in the manifest is missing" : "not a regular file")
            if expected != nil { report.vanished.append(f) } else { report.faults.append(f) }
            return nil
        }
        if let expected, UInt64(size) != expected.fileSize {
            fault(Int(min(UInt64(size), expected.fileSize)), "file is \(size) bytes, the manifest says \(expected.fileSize)")
        }
        // Opening checks the footer (magic, version, checksum, handles), and the checksums of the
        // properties, filter, range tombstone and root index blocks.
        let reader: SegmentReader
        do {
            reader = try SegmentReader(path: path, number: number, cache: nil, fileSystem: .real, key: InspectionKey.current)
        } catch StrataError.io(_, let code, "open") where code == Errno.noSuchFileOrDirectory.code && expected != nil {
            report.vanished.append(VerifyReport.Fault(file: path, offset: 0, reason: "segment listed in the manifest is missing"))
            return nil
        } catch {
            report.fault(path, FileFault(error, at: 0))
            return nil
        }
        report.segmentsChecked += 1
        let footer = reader.footer, props = reader.properties
        report.blocksChecked += 1 + (footer.filter.length > 0 ? 1 : 0) + (footer.rangeTombstones.length > 0 ? 1 : 0)

        // Range tombstones: each non-empty, sorted, disjoint.
        let tombstones = reader.rangeTombstones
        let tombstoneOffset = Int(footer.rangeTombstones.offset)
        for (i, t) in tombstones.enumerated() {
            if ByteComparison.compare(t.start, t.end) >= 0 {
                fault(tombstoneOffset, "range tombstone \(i) [\(KeyRendering.describe(t.start)), \(KeyRendering.describe(t.end))) is empty")
            }
            if i > 0, ByteComparison.compare(tombstones[i - 1].end, t.start) > 0 {
                fault(tombstoneOffset, "range tombstone \(i) starting at \(KeyRendering.describe(t.start)) overlaps or precedes the one before")
            }
        }
        if props.rangeTombstones != UInt64(tombstones.count) {
            fault(Int(footer.properties.offset), "properties say \(props.rangeTombstones) range tombstones, the block holds \(tombstones.count)")
        }

        // The index, level by level (each block's checksum is checked as it is read).
        let tree = SegmentTree(reader)
        for f in tree.faults { report.fault(path, f) }
        report.blocksChecked += tree.indexBlocksPerLevel.reduce(0, +)
        var complete = tree.faults.isEmpty

        // The data blocks, in index order: checksums, key order, last key against the index,
        // the filter, and a recount of what the properties claim.
        var recount = SegmentProperties()
        var previous: [UInt8]?
        var lastKeyspace: UInt64?
        var storedBytes: UInt64 = 0, uncompressedBytes: UInt64 = 0
        var filterMisses = 0
        var firstFilterMiss: [UInt8]?
        for ref in tree.dataBlocks {
            let offset = Int(clamping: ref.handle.offset)
            storedBytes += ref.handle.length + UInt64(SegmentFormat.blockTrailerSize)
            do {
                let block = try reader.block(ref.handle)
                report.blocksChecked += 1
                uncompressedBytes += UInt64(block.bytes.count)
                var cursor = BlockCursor(block)
                try cursor.seekToFirst()
                if !cursor.isValid { fault(offset, "data block holds no records") }
                var first = true
                var last: [UInt8]?
                var held = RecordCounts(records: 0, tombstones: 0)
                while cursor.isValid {
                    held.records += 1
                    if cursor.kind == .tombstone { held.tombstones += 1 }
                    let key = cursor.key
                    if let p = previous, ByteComparison.compare(p, key) >= 0 {
                        fault(offset, "key \(KeyRendering.describe(key)) does not follow \(KeyRendering.describe(p))"
                              + (first ? " (the last key of the block before)" : ""))
                    }
                    key.withUnsafeBytes { k in
                        let ks = SegmentProperties.keyspace(of: k)
                        if let l = lastKeyspace, l != ks, let p = previous { recount.closeKeyspace(lastKey: p) }
                        lastKeyspace = ks
                        recount.add(key: k, kind: cursor.kind, valueLength: cursor.value.count)
                        if footer.filter.length > 0, !reader.mayContain(hash: KeyHash.hash64(k)) {
                            filterMisses += 1
                            if firstFilterMiss == nil { firstFilterMiss = key }
                        }
                    }
                    report.recordsChecked += 1
                    previous = key
                    last = key
                    first = false
                    try cursor.next()
                }
                if let last, last != ref.indexKey {
                    fault(offset, "block's last key \(KeyRendering.describe(last)) differs from its index entry \(KeyRendering.describe(ref.indexKey))")
                }
                if let claimed = ref.counts, claimed != held {
                    fault(ref.indexBlockOffset, "index entry counts \(claimed.records) records, \(claimed.tombstones) tombstones; its data block at \(offset) holds \(held.records), \(held.tombstones)")
                }
            } catch {
                report.fault(path, FileFault(error, at: offset))
                complete = false
            }
        }
        recount.finish(lastKey: previous ?? [])
        if filterMisses > 0, let key = firstFilterMiss {
            fault(Int(footer.filter.offset), "the filter rejects \(filterMisses) keys the segment holds, first \(KeyRendering.describe(key))")
        }

        // The properties against the recount (only when every block could be read: a missing
        // block would make every count differ, which says nothing new).
        if complete {
            let at = Int(footer.properties.offset)
            func compare(_ what: String, _ stored: UInt64, _ counted: UInt64) {
                if stored != counted { fault(at, "properties say \(stored) \(what), the blocks hold \(counted)") }
            }
            compare("records", props.records, recount.records)
            compare("tombstones", props.tombstones, recount.tombstones)
            compare("key bytes", props.keyBytes, recount.keyBytes)
            compare("value bytes", props.valueBytes, recount.valueBytes)
            compare("data blocks", props.dataBlocks, UInt64(tree.dataBlocks.count))
            compare("index blocks", props.indexBlocks, UInt64(tree.indexBlocksPerLevel.reduce(0, +)))
            compare("stored data bytes", props.storedDataBytes, storedBytes)
            compare("uncompressed data bytes", props.uncompressedDataBytes, uncompressedBytes)
            if props.records > 0 && (props.smallestKey != recount.smallestKey || props.largestKey != recount.largestKey) {
                fault(at, "properties give the key range \(KeyRendering.describe(props.smallestKey))…\(KeyRendering.describe(props.largestKey)), the blocks hold \(KeyRendering.describe(recount.smallestKey))…\(KeyRendering.describe(recount.largestKey))")
            }
            if props.keyspaces != recount.keyspaces {
                let stored = props.keyspaces.map { "\($0.id): \($0.records)" }.joined(separator: ", ")
                let counted = recount.keyspaces.map { "\($0.id): \($0.records)" }.joined(separator: ", ")
                fault(at, "properties' keyspace summaries (\(stored)) differ from the blocks' (\(counted))")
            }
        }

        // The manifest's view of the segment.
        if let expected {
            if expected.records != props.records {
                fault(Int(footer.properties.offset), "the manifest records \(expected.records) records, the properties \(props.records)")
            }
            var smallest = props.smallestKey, largest = props.largestKey
            if let t = tombstones.first, props.records == 0 || ByteComparison.compare(t.start, smallest) < 0 { smallest = t.start }
            if let t = tombstones.last, props.records == 0 || ByteComparison.compare(t.end, largest) > 0 { largest = t.end }
            if expected.smallestKey != smallest || expected.largestKey != largest {
                fault(0, "the manifest gives the key range \(KeyRendering.describe(expected.smallestKey))…\(KeyRendering.describe(expected.largestKey)), the segment holds \(KeyRendering.describe(smallest))…\(KeyRendering.describe(largest))")
            }
        }
        return props.records > 0 ? (props.smallestKey, props.largestKey) : nil
    }

    // MARK: Logs

    /// Checks one log as recovery reads it: the header, where a torn tail starts, and each record
    /// with `LogReplayCheck` — the function recovery uses — continuing `replay` across logs.
    /// Returns the log's format version (nil when the header is torn or the log does not read).
    @discardableResult
    static func checkLog(path: String, number: UInt64?, replay: inout LogReplayCheck, into report: inout VerifyReport) -> UInt32? {
        let reader: LogReader
        do {
            reader = try LogReader(path: path, fileSystem: .real, key: InspectionKey.current)
        } catch StrataError.io(_, let code, "open") where code == Errno.noSuchFileOrDirectory.code {
            report.vanished.append(VerifyReport.Fault(file: path, offset: 0, reason: "log is missing"))
            return nil
        } catch {
            report.fault(path, FileFault(error, at: 0))
            return nil
        }
        report.logsChecked += 1
        if let number, reader.formatVersion != nil, reader.logNumber != number {
            report.fault(path, FileFault(offset: 12, reason: "the header says log \(reader.logNumber), the name says \(number)"))
        }
        if case .tornTail(let offset, let reason) = reader.end {
            report.notes.append(VerifyReport.Note(file: path, offset: offset, message:
                "torn tail of \(reader.fileLength - offset) bytes (\(reason)); recovery discards it and reports it in Store.recovery"))
        }
        for record in reader.records {
            report.batchesChecked += 1
            do {
                try replay.check(record, path: path)
            } catch {
                report.fault(path, FileFault(error, at: record.offset))
            }
        }
        return reader.formatVersion
    }
}

/// What ``StoreVerifier`` found.
public struct VerifyReport: Codable, Sendable {
    /// Something wrong with a file: a checksum that fails, an impossible length, keys out of
    /// order, counts that disagree, a file missing or of the wrong size.
    public struct Fault: Codable, Sendable, Equatable, CustomStringConvertible {
        /// The file's path.
        public var file: String
        /// Where in the file the fault is (0 for the whole file).
        public var offset: Int
        /// What is wrong.
        public var reason: String

        public var description: String { "\(file) at offset \(offset): \(reason)" }
    }

    /// Something worth knowing that is not damage (a torn log tail, a leftover file).
    public struct Note: Codable, Sendable, Equatable, CustomStringConvertible {
        /// The file's path.
        public var file: String
        /// Where in the file, if the note is about a place in it.
        public var offset: Int?
        /// What was found.
        public var message: String

        public var description: String {
            offset.map { "\(file) at offset \($0): \(message)" } ?? "\(file): \(message)"
        }
    }

    /// The store directory or file verified.
    public var path: String
    /// Damage, in the order found. Empty when the store is clean.
    public var faults: [Fault] = []
    /// What is worth knowing but is not damage.
    public var notes: [Note] = []
    /// Segments that could be opened and checked.
    public var segmentsChecked = 0
    /// Blocks whose checksum was checked: data, index, filter, range tombstone and properties blocks.
    public var blocksChecked = 0
    /// Records read from the data blocks.
    public var recordsChecked = 0
    /// Logs that could be opened and checked.
    public var logsChecked = 0
    /// Log records (batches) checked.
    public var batchesChecked = 0
    /// True when there are no faults (notes do not count).
    public var isClean = true
    /// Files found missing during a pass: faults, unless the store changed meanwhile.
    var vanished: [Fault] = []

    private enum CodingKeys: String, CodingKey {
        case path, faults, notes, segmentsChecked, blocksChecked, recordsChecked, logsChecked, batchesChecked, isClean
    }

    /// An empty report on `path`; ``StoreVerifier/verify(storeAt:)`` fills it.
    public init(path: String) {
        self.path = path
    }

    mutating func fault(_ file: String, _ f: FileFault) {
        faults.append(Fault(file: file, offset: f.offset, reason: f.reason))
    }

    mutating func finish() {
        isClean = faults.isEmpty
    }
}
