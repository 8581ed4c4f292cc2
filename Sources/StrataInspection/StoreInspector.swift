import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The library side of `strata-dump`: read-only inspection of a store's files.
///
/// Everything here reads files through the Files-layer readers (`Manifest`, `LogReader`,
/// `SegmentReader`…), never through the engine: a store may be damaged, or open in another
/// process. The inspector neither takes the `LOCK` nor writes anything, so it may run next to the
/// process that owns the store — a log being appended may then show a torn tail, which is only
/// the write in flight.
///
/// ```swift
/// let summary = try StoreInspector.summary(ofStoreAt: "/var/lib/app/data.strata")
/// print(summary.records, summary.compressionRatio ?? 1)
/// let kind = try StoreInspector.kind(ofFileAt: "/var/lib/app/data.strata/000042.seg")  // .segment
/// ```
/// See also ``LogInspector``, ``SegmentInspector`` and ``StoreVerifier``.
public enum StoreInspector {
    /// What the file at `path` is, by its magic number — `STRATLOG` at the start of a log,
    /// `STRATMAN` at the start of a manifest, `STRATSEG` in the footer of a segment — or, for
    /// files without one, by its name (`LOCK`, `*.tmp`, and a log whose header a crash cut short).
    ///
    /// - Throws: ``InspectionError/notFound(path:)`` or ``InspectionError/notAFile(path:expected:)``
    ///   when `path` is not a readable regular file; an `StrataError.io(path:errno:operation:)`
    ///   when reading fails.
    public static func kind(ofFileAt path: String) throws -> StrataFileKind {
        let size = try PathStatus.requireFile(path)
        return try FileSystem.real.withFile(path, flags: .readOnly) { f in
            let head = try f.read(at: 0, count: min(size, 8))
            if head == LogFormat.magic { return .log }
            if head == Manifest.magic { return .manifest }
            if size >= SegmentFormat.footerSize {
                let magic = try f.read(at: size - SegmentFormat.footerSize + 56, count: 8)
                if magic.count == 8, magic.withUnsafeBytes({ LittleEndian.uint64($0, at: 0) }) == SegmentFormat.magic {
                    return .segment
                }
            }
            // No magic: only the name can tell, and only for files that carry none.
            switch kind(ofFileNamed: baseName(path)) {
            case .log where size < LogFormat.headerSize: return .log  // a header a crash cut short
            case .lock: return .lock
            case .temporary: return .temporary
            default: return .other
            }
        }
    }

    /// The kind a store gives a file of this name (without looking inside).
    static func kind(ofFileNamed name: String) -> StrataFileKind {
        switch FileNames.parse(name) {
        case .manifest: return .manifest
        case .lock: return .lock
        case .temporary: return .temporary
        case .log: return .log
        case .segment: return .segment
        case .other: return .other
        }
    }

    /// Throws unless the file at `path` is of kind `expected`.
    static func require(_ expected: StrataFileKind, at path: String) throws {
        let found = try kind(ofFileAt: path)
        guard found == expected else {
            switch found {
            case .manifest, .log, .segment: throw InspectionError.wrongKind(path: path, found: found, expected: expected)
            case .lock, .temporary, .other: throw InspectionError.notAStrataFile(path: path)
            }
        }
    }

    /// Renders a stored key for people; see ``InspectedKey``.
    public static func describeKey(_ key: [UInt8]) -> String { KeyRendering.describe(key) }

    /// The name of keyspace `id` (`catalog`, `key-value`, …).
    public static func keyspaceName(_ id: UInt64) -> String { StoreCollections.keyspaceName(id) }

    /// A summary of the store in `directory`: its files, the manifest's runs and counters, the
    /// segments' record counts, sizes and compression, each keyspace's key range, and what the
    /// logs hold that no segment does yet.
    ///
    /// The summary reads every live segment's footer and properties and every log; it reports a
    /// file it cannot read in ``StoreSummary/problems`` and goes on. ``StoreVerifier`` checks
    /// every byte.
    ///
    /// - Throws: ``InspectionError`` when `directory` is missing or holds no store; the error of
    ///   reading `MANIFEST` when that file is damaged.
    ///   `key` reads an encrypted store.
    public static func summary(ofStoreAt directory: String, key: EncryptionKey? = nil) throws -> StoreSummary {
        try InspectionKey.$current.withValue(key ?? InspectionKey.current) { try summaryOfStore(directory) }
    }

    private static func summaryOfStore(_ directory: String) throws -> StoreSummary {
        let dir = PathStatus.normalizedDirectory(directory)
        try PathStatus.requireDirectory(dir)
        // A store in use deletes the files a flush or compaction replaced, right after it
        // publishes a new manifest: when files could not be read and the manifest changed
        // meanwhile, read again.
        var summary = try summaryOnce(dir)
        for _ in 0..<2 where !summary.problems.isEmpty {
            let before = try? FileSystem.real.withFile(dir + "/" + FileNames.manifest, flags: .readOnly) { f in try f.read(at: 0, count: try f.size()) }
            let again = try summaryOnce(dir)
            let after = try? FileSystem.real.withFile(dir + "/" + FileNames.manifest, flags: .readOnly) { f in try f.read(at: 0, count: try f.size()) }
            summary = again
            if again.problems.isEmpty || before == after { break }
        }
        return summary
    }

    private static func summaryOnce(_ dir: String) throws -> StoreSummary {
        let names = try FileSystem.real.listDirectory(dir).sorted()
        let manifest: Manifest
        var summary = StoreSummary(directory: dir)
        switch try readManifest(dir, names: names) {
        case .present(let m): manifest = m
        case .absent: manifest = Manifest(); summary.manifestPresent = false
        case .notAStore: throw InspectionError.notAStore(path: dir)
        }
        summary.nextFileNumber = manifest.nextFileNumber
        summary.lastSequence = manifest.lastSequence
        summary.logNumber = manifest.logNumber

        for name in names {
            guard case .regularFile(let size) = PathStatus.of(dir + "/" + name) else { continue }
            let fileKind = kind(ofFileNamed: name)
            var number: UInt64?
            switch FileNames.parse(name) {
            case .log(let n), .segment(let n): number = n
            default: break
            }
            summary.files.append(StoreSummary.File(name: name, kind: fileKind, size: UInt64(size), number: number))
        }
        summary.totalBytes = summary.files.reduce(0) { $0 + $1.size }

        // Segments, run by run (newest first).
        var keyspaces: [UInt64: StoreSummary.Keyspace] = [:]
        var smallest: [UInt64: [UInt8]] = [:], largest: [UInt64: [UInt8]] = [:]
        for (runIndex, run) in manifest.runs.enumerated() {
            var r = StoreSummary.Run(index: runIndex)
            for meta in run {
                var sums = OverflowingSum()
                let name = FileNames.segment(meta.number)
                var s = StoreSummary.RunSegment(number: meta.number, name: name, size: meta.fileSize, records: meta.records,
                                                smallestKey: InspectedKey(meta.smallestKey), largestKey: InspectedKey(meta.largestKey))
                sums.add(&r.size, meta.fileSize)
                sums.add(&r.records, meta.records)
                do {
                    let reader = try SegmentReader(path: dir + "/" + name, number: meta.number, cache: nil, fileSystem: .real, key: InspectionKey.current)
                    let p = reader.properties
                    s.tombstones = p.tombstones
                    s.rangeTombstones = UInt64(reader.rangeTombstones.count)
                    summary.segments += 1
                    sums.add(&summary.segmentBytes, UInt64(reader.fileSize))
                    sums.add(&summary.records, p.records)
                    sums.add(&summary.tombstones, p.tombstones)
                    sums.add(&summary.rangeTombstones, UInt64(reader.rangeTombstones.count))
                    sums.add(&summary.keyBytes, p.keyBytes)
                    sums.add(&summary.valueBytes, p.valueBytes)
                    sums.add(&summary.storedDataBytes, p.storedDataBytes)
                    sums.add(&summary.uncompressedDataBytes, p.uncompressedDataBytes)
                    sums.add(&summary.dataBlocks, p.dataBlocks)
                    sums.add(&summary.indexBlocks, p.indexBlocks)
                    for k in p.keyspaces {
                        var e = keyspaces[k.id] ?? StoreSummary.Keyspace(id: k.id, name: StoreCollections.keyspaceName(k.id))
                        sums.add(&e.records, k.records)
                        sums.add(&e.tombstones, k.tombstones)
                        sums.add(&e.keyBytes, k.keyBytes)
                        sums.add(&e.valueBytes, k.valueBytes)
                        e.segments += 1
                        keyspaces[k.id] = e
                        if smallest[k.id].map({ ByteComparison.compare(k.smallestKey, $0) < 0 }) ?? true { smallest[k.id] = k.smallestKey }
                        if largest[k.id].map({ ByteComparison.compare(k.largestKey, $0) > 0 }) ?? true { largest[k.id] = k.largestKey }
                    }
                } catch {
                    summary.problems.append(StoreSummary.Problem(file: name, message: "\(error)"))
                }
                if sums.overflowed {
                    summary.problems.append(StoreSummary.Problem(
                        file: name, message: "counts of the segment (its properties or manifest entry) overflow 64 bits when added up; totals stop at \(UInt64.max)"))
                }
                r.segments.append(s)
            }
            summary.runs.append(r)
        }
        summary.keyspaces = keyspaces.values.sorted { $0.id < $1.id }.map { k in
            var k = k
            k.smallestKey = smallest[k.id].map(InspectedKey.init)
            k.largestKey = largest[k.id].map(InspectedKey.init)
            return k
        }
        if summary.storedDataBytes > 0 {
            summary.compressionRatio = Double(summary.uncompressedDataBytes) / Double(summary.storedDataBytes)
        }

        // Logs: those at or above the manifest's log number hold writes no segment has yet.
        for file in summary.files where file.kind == .log {
            guard let number = file.number else { continue }
            var log = StoreSummary.Log(number: number, name: file.name, size: file.size,
                                       live: number >= manifest.logNumber)
            do {
                let reader = try LogReader(path: dir + "/" + file.name, fileSystem: .real, key: InspectionKey.current)
                for record in reader.records {
                    log.batches += 1
                    if let (first, count) = LogInspector.batchHeader(record.payload) {
                        log.operations += UInt64(count)
                        if count > 0 {
                            if log.firstSequence == nil { log.firstSequence = first }
                            log.lastSequence = first &+ UInt64(count) &- 1
                        }
                    }
                }
                if case .tornTail(let offset, let reason) = reader.end {
                    log.tornTail = TornTail(offset: offset, reason: reason)
                }
            } catch {
                log.error = "\(error)"
                summary.problems.append(StoreSummary.Problem(file: file.name, message: "\(error)"))
            }
            if log.live {
                summary.logBatches += log.batches
                summary.logOperations += log.operations
            }
            summary.logs.append(log)
        }
        return summary
    }

    enum ManifestState {
        case present(Manifest)
        /// No `MANIFEST`, but logs or segments: a store that crashed before writing its first one.
        case absent
        /// No `MANIFEST`, no logs, no segments.
        case notAStore
    }

    /// Reads `MANIFEST` (throwing the reader's error when it is damaged).
    static func readManifest(_ dir: String, names: [String]) throws -> ManifestState {
        if let m = try Manifest.read(directory: dir, fileSystem: .real, key: InspectionKey.current) { return .present(m) }
        let hasStoreFiles = names.contains { name in
            switch FileNames.parse(name) {
            case .log, .segment: return true
            default: return false
            }
        }
        return hasStoreFiles ? .absent : .notAStore
    }

    static func baseName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    }
}

/// Where a log's torn tail starts and what is wrong with it. A crash mid-write leaves one;
/// recovery cuts the log there. It is not corruption.
public struct TornTail: Codable, Sendable, Equatable {
    /// The offset of the first byte that does not belong to a valid record.
    public var offset: Int
    /// What was wrong with the bytes there.
    public var reason: String
}

/// What ``StoreInspector/summary(ofStoreAt:key:)`` reports about a store.
///
/// Record counts are of *stored* records: a key written in several runs counts once per run,
/// and a tombstone counts as a record too (and in ``tombstones``). Sizes are in bytes.
public struct StoreSummary: Codable, Sendable {
    /// One file of the store directory.
    public struct File: Codable, Sendable, Equatable {
        /// The file's name in the directory.
        public var name: String
        /// What the file is, by its name.
        public var kind: StrataFileKind
        /// Its size in bytes.
        public var size: UInt64
        /// The file number of a log or segment.
        public var number: UInt64?
    }

    /// A segment as the manifest lists it in a run.
    public struct RunSegment: Codable, Sendable, Equatable {
        /// The segment's file number.
        public var number: UInt64
        /// The segment's file name.
        public var name: String
        /// The size the manifest records.
        public var size: UInt64
        /// The record count the manifest records.
        public var records: UInt64
        /// Point tombstones, from the segment's properties (nil if it could not be read).
        public var tombstones: UInt64?
        /// Range tombstones stored in the segment (nil if it could not be read).
        public var rangeTombstones: UInt64?
        /// The smallest key the segment speaks for, range tombstones included.
        public var smallestKey: InspectedKey
        /// The largest key the segment speaks for, range tombstones included.
        public var largestKey: InspectedKey
    }

    /// A sorted run: segments with disjoint key ranges written by one flush or compaction.
    public struct Run: Codable, Sendable, Equatable {
        /// 0 is the newest run.
        public var index: Int
        /// Its segments, in key order.
        public var segments: [RunSegment] = []
        /// The sizes of its segments, as the manifest records them.
        public var size: UInt64 = 0
        /// The record counts of its segments, as the manifest records them.
        public var records: UInt64 = 0
    }

    /// The records of one keyspace across all live segments.
    public struct Keyspace: Codable, Sendable, Equatable {
        /// The keyspace's id.
        public var id: UInt64
        /// The keyspace's name (`catalog`, `key-value`, …).
        public var name: String
        /// Its records, tombstones included, summed over segments.
        public var records: UInt64 = 0
        /// Its point tombstones.
        public var tombstones: UInt64 = 0
        /// The bytes of its keys.
        public var keyBytes: UInt64 = 0
        /// The bytes of its values.
        public var valueBytes: UInt64 = 0
        /// How many segments hold records of the keyspace.
        public var segments: Int = 0
        /// Its smallest key in any segment.
        public var smallestKey: InspectedKey?
        /// Its largest key in any segment.
        public var largestKey: InspectedKey?
    }

    /// One write-ahead log file.
    public struct Log: Codable, Sendable, Equatable {
        /// The log's file number.
        public var number: UInt64
        /// The log's file name.
        public var name: String
        /// Its size in bytes.
        public var size: UInt64
        /// At or above the manifest's log number: its batches are not in any segment yet and are
        /// replayed on open. A log below it was flushed and is only waiting to be deleted.
        public var live: Bool
        /// The records (committed batches) read from it.
        public var batches: UInt64 = 0
        /// The operations of those batches.
        public var operations: UInt64 = 0
        /// The sequence number of the log's first operation; nil when it holds none.
        public var firstSequence: UInt64?
        /// The sequence number of the log's last operation; nil when it holds none.
        public var lastSequence: UInt64?
        /// Where the torn tail starts and why, if the log ends in one.
        public var tornTail: TornTail?
        /// Why the log could not be read, if it could not.
        public var error: String?
    }

    /// A file the summary could not read.
    public struct Problem: Codable, Sendable, Equatable {
        /// The file's name.
        public var file: String
        /// The error reading it.
        public var message: String
    }

    /// The store directory, without a trailing slash.
    public var directory: String
    /// The directory's regular files, in name order.
    public var files: [File] = []
    /// The sizes of those files.
    public var totalBytes: UInt64 = 0
    /// Whether `MANIFEST` exists (a store that crashed before writing its first one has none).
    public var manifestPresent = true
    /// The number the store gives its next log or segment (from the manifest).
    public var nextFileNumber: UInt64 = 0
    /// The manifest's `lastSequence`: a lower bound for the store's sequence counter (FORMAT.md,
    /// "Manifest"); recovery continues after it or after the last operation replayed, if later.
    public var lastSequence: UInt64 = 0
    /// Logs numbered below this are flushed; those at or above it are replayed on open.
    public var logNumber: UInt64 = 0
    /// The manifest's sorted runs, newest first.
    public var runs: [Run] = []
    /// Live segments that could be read.
    public var segments = 0
    /// The live segments' total size.
    public var segmentBytes: UInt64 = 0
    /// Records in the live segments, tombstones included.
    public var records: UInt64 = 0
    /// Point tombstones in the live segments.
    public var tombstones: UInt64 = 0
    /// Range tombstones in the live segments.
    public var rangeTombstones: UInt64 = 0
    /// The bytes of the live segments' keys.
    public var keyBytes: UInt64 = 0
    /// The bytes of the live segments' values.
    public var valueBytes: UInt64 = 0
    /// Data blocks in the live segments.
    public var dataBlocks: UInt64 = 0
    /// Index blocks in the live segments.
    public var indexBlocks: UInt64 = 0
    /// Data blocks as stored (compressed, with their trailers).
    public var storedDataBytes: UInt64 = 0
    /// Data blocks before compression.
    public var uncompressedDataBytes: UInt64 = 0
    /// `uncompressedDataBytes / storedDataBytes`; nil without data.
    public var compressionRatio: Double?
    /// The keyspaces with records in the live segments, in id order.
    public var keyspaces: [Keyspace] = []
    /// The write-ahead logs, in number order.
    public var logs: [Log] = []
    /// Batches in the live logs (written since the last flush).
    public var logBatches: UInt64 = 0
    /// Operations in the live logs.
    public var logOperations: UInt64 = 0
    /// Files that could not be read; empty when every one read.
    public var problems: [Problem] = []

    /// An empty summary of `directory`; ``StoreInspector/summary(ofStoreAt:key:)`` fills it.
    public init(directory: String) {
        self.directory = directory
    }
}
