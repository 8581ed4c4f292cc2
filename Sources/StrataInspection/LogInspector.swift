import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Reads a write-ahead log for people and scripts: its header, each record (one committed batch,
/// or several merged by group commit) and, on request, each operation with its decoded key.
///
/// ```swift
/// let dump = try LogInspector.dump(logAt: "/var/lib/app/data.strata/000007.log", includeOperations: true)
/// for record in dump.records { print(record.offset, record.firstSequence ?? 0, record.operationCount ?? 0) }
/// if let tail = dump.tornTail { print("torn tail at \(tail.offset): \(tail.reason)") }
/// ```
public enum LogInspector {
    /// Dumps the log at `path`.
    ///
    /// A torn tail (what a crash mid-write leaves) is reported in ``LogDump/tornTail``; a record
    /// whose payload does not decode as a batch carries an ``LogDump/Record/error``.
    ///
    /// - Throws: ``InspectionError`` when `path` is not a log;
    ///   `StrataError.unsupportedFormatVersion(file:found:)` for a log of a future version;
    ///   `StrataError.corrupted(file:offset:reason:)` when a damaged record is followed by valid
    ///   ones (which a crash cannot produce) or the header fails its checksum.
    ///
    /// `key` reads a log of an encrypted store (``StoreOptions/encryptionKey``).
    public static func dump(logAt path: String, includeOperations: Bool = false, key: EncryptionKey? = nil) throws -> LogDump {
        try StoreInspector.require(.log, at: path)
        let size = try PathStatus.requireFile(path)
        let reader = try LogReader(path: path, fileSystem: .real, key: key ?? InspectionKey.current)
        var dump = LogDump(path: path, size: UInt64(size), logNumber: reader.logNumber)
        dump.formatVersion = reader.formatVersion
        dump.validLength = reader.validLength
        if case .tornTail(let offset, let reason) = reader.end {
            dump.tornTail = TornTail(offset: offset, reason: reason)
        }
        for record in reader.records {
            var r = LogDump.Record(offset: record.offset, length: record.payload.count,
                                   type: LogFormat.RecordType(rawValue: record.type).map { "\($0)" } ?? "type \(record.type)")
            do {
                let batch = try decodeBatch(record, path: path, includeOperations: includeOperations)
                r.firstSequence = batch.firstSequence
                r.operationCount = batch.count
                if includeOperations { r.operations = batch.operations }
                dump.operationCount += UInt64(batch.count)
                if batch.count > 0 {
                    if dump.firstSequence == nil { dump.firstSequence = batch.firstSequence }
                    dump.lastSequence = batch.firstSequence &+ UInt64(batch.count) &- 1
                }
            } catch {
                r.error = "\(error)"
            }
            dump.records.append(r)
        }
        return dump
    }

    /// The first sequence number and operation count of a batch record's payload.
    static func batchHeader(_ payload: ArraySlice<UInt8>) -> (firstSequence: UInt64, count: Int)? {
        guard payload.count >= 12 else { return nil }
        return payload.withUnsafeBytes { p in
            (LittleEndian.uint64(p, at: 0), Int(LittleEndian.uint32(p, at: 8)))
        }
    }

    struct DecodedBatch {
        var firstSequence: UInt64
        var count: Int
        var operations: [LogDump.Operation]
    }

    /// Decodes a batch record: `firstSequence:u64 | count:u32 | operation*` (FORMAT.md, "Write-ahead
    /// log"). Every operation is decoded — so a malformed one throws — but only kept if asked for.
    static func decodeBatch(_ record: LogReader.Record, path: String, includeOperations: Bool) throws -> DecodedBatch {
        guard LogFormat.RecordType(rawValue: record.type) == .batch else {
            throw StrataError.corrupted(file: path, offset: record.offset, reason: "unknown record type \(record.type)")
        }
        guard let (first, count) = batchHeader(record.payload) else {
            throw StrataError.corrupted(file: path, offset: record.offset,
                                        reason: "batch record of \(record.payload.count) bytes is shorter than its 12-byte header")
        }
        var batch = DecodedBatch(firstSequence: first, count: count, operations: [])
        // Every operation takes at least two bytes: a count beyond that is corrupt, not a reason to loop.
        guard count <= record.payload.count else {
            throw StrataError.corrupted(file: path, offset: record.offset,
                                        reason: "batch claims \(count) operations in \(record.payload.count) bytes")
        }
        try record.payload.withUnsafeBytes { p in
            var sequence = first
            try WriteBatch.forEachOperation(in: UnsafeRawBufferPointer(rebasing: p[12...]), count: count,
                                            file: path, offset: record.offset) { op, key, second in
                defer { sequence &+= 1 }
                guard includeOperations else { return }
                switch op {
                case .put:
                    batch.operations.append(LogDump.Operation(sequence: sequence, kind: .put, key: InspectedKey(Array(key)),
                                                              valueSize: second.count))
                case .delete:
                    batch.operations.append(LogDump.Operation(sequence: sequence, kind: .delete, key: InspectedKey(Array(key))))
                case .deleteRange:
                    batch.operations.append(LogDump.Operation(sequence: sequence, kind: .deleteRange, key: InspectedKey(Array(key)),
                                                              endKey: InspectedKey(Array(second))))
                }
            }
        }
        return batch
    }
}

/// What ``LogInspector/dump(logAt:includeOperations:)`` reports about a log file.
public struct LogDump: Codable, Sendable {
    /// The kind of an operation in a batch.
    public enum OperationKind: String, Codable, Sendable {
        /// A put: a key and its value.
        case put
        /// A point deletion: one key.
        case delete
        /// A range deletion: the keys from `key` up to, not including, `endKey`.
        case deleteRange
    }

    /// One operation of a batch.
    public struct Operation: Codable, Sendable, Equatable {
        /// The operation's sequence number (the batch's first, plus its position).
        public var sequence: UInt64
        /// What the operation does.
        public var kind: OperationKind
        /// The key; for a range deletion, the (inclusive) start of the range.
        public var key: InspectedKey
        /// For a range deletion, the exclusive end of the range.
        public var endKey: InspectedKey?
        /// For a put, the size of the value in bytes.
        public var valueSize: Int?
    }

    /// One record of the log.
    public struct Record: Codable, Sendable, Equatable {
        /// The offset of the record's header in the file.
        public var offset: Int
        /// The payload's length in bytes (without the 9-byte record header).
        public var length: Int
        /// The record type (`batch`).
        public var type: String
        /// The sequence number of the batch's first operation; nil if the payload does not decode.
        public var firstSequence: UInt64?
        /// How many operations the batch holds; nil if the payload does not decode.
        public var operationCount: Int?
        /// The operations, when asked for.
        public var operations: [Operation]?
        /// Why the payload does not decode, if it does not.
        public var error: String?
    }

    /// The log file's path, as given.
    public var path: String
    /// The file's size in bytes.
    public var size: UInt64
    /// The log number from the header (0 when a crash cut the header short).
    public var logNumber: UInt64
    /// The header's format version; nil when the header is missing.
    public var formatVersion: UInt32?
    /// The records of the valid prefix, in file order.
    public var records: [Record] = []
    /// The operations of all records.
    public var operationCount: UInt64 = 0
    /// The sequence number of the first operation in the log; nil when it holds none.
    public var firstSequence: UInt64?
    /// The sequence number of the last operation in the log; nil when it holds none.
    public var lastSequence: UInt64?
    /// The length of the valid prefix of the file: where recovery would cut a torn tail.
    public var validLength: Int = 0
    /// Where the torn tail starts and why, if the log ends in one.
    public var tornTail: TornTail?

    /// A dump of the log at `path` with no records yet; ``LogInspector/dump(logAt:includeOperations:)`` fills it.
    public init(path: String, size: UInt64, logNumber: UInt64) {
        self.path = path
        self.size = size
        self.logNumber = logNumber
    }
}
