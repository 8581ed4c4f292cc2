@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// The checks every log record passes before recovery replays it, and the same checks
/// `strata-dump verify` makes (FORMAT.md 4.2 and 4.3): one function, so that open refuses
/// exactly what verify reports.
///
/// A record must be a batch whose payload decodes exactly; its first sequence number must be at
/// least 1, above the last sequence number of every record before it (in this log and in the
/// logs numbered below it) and, in a version 2 log, equal to the one in the record header; and
/// its last sequence number must not exceed ``LogFormat/maxCounter``, so that the counters the
/// engine continues from it cannot overflow.
package struct LogReplayCheck {
    /// The last sequence number of the records checked so far (0: none).
    package private(set) var lastSequence: UInt64 = 0
    /// The batches checked so far.
    package private(set) var batches = 0

    package init() {}

    /// Checks `record` of the log at `path` and moves past it; returns its first sequence number
    /// and operation count. With `decodingOperations` false, the operations are left for the
    /// caller to decode, with the same ``WriteBatch/forEachOperation(in:count:file:offset:_:)``
    /// and so the same errors (recovery, which applies them, decodes each batch once).
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` naming `path` and the record's offset.
    @discardableResult
    package mutating func check(_ record: LogReader.Record, path: String,
                                decodingOperations: Bool = true) throws -> (firstSequence: UInt64, count: Int) {
        try record.payload.withUnsafeBytes { p in
            try check(type: record.type, sequence: record.sequence, payload: p, offset: record.offset, path: path,
                      decodingOperations: decodingOperations)
        }
    }

    /// ``check(_:path:decodingOperations:)`` for a record whose payload is a view into the log's
    /// bytes (recovery's path, which copies nothing).
    @discardableResult
    package mutating func check(_ record: LogReader.RecordView, path: String,
                        decodingOperations: Bool = true) throws -> (firstSequence: UInt64, count: Int) {
        try check(type: record.type, sequence: record.sequence, payload: record.payload, offset: record.offset,
                  path: path, decodingOperations: decodingOperations)
    }

    private mutating func check(type: UInt8, sequence: UInt64?, payload: UnsafeRawBufferPointer, offset: Int, path: String,
                                decodingOperations: Bool) throws -> (firstSequence: UInt64, count: Int) {
        func bad(_ reason: String) -> StrataError { .corrupted(file: path, offset: offset, reason: reason) }
        guard type == LogFormat.RecordType.batch.rawValue else { throw bad("unknown record type \(type)") }
        guard payload.count >= 12 else {
            throw bad("batch record of \(payload.count) bytes is shorter than its 12-byte header")
        }
        let first = LittleEndian.uint64(payload, at: 0), count = Int(LittleEndian.uint32(payload, at: 8))
        if let headerSequence = sequence, headerSequence != first {
            throw bad("record header says sequence \(headerSequence), its batch says \(first)")
        }
        guard first >= 1 else { throw bad("batch's first sequence is 0") }
        guard first > lastSequence else {
            throw bad("batch's first sequence \(first) does not follow the previous batch's last, \(lastSequence)")
        }
        guard first <= LogFormat.maxCounter, UInt64(count) <= LogFormat.maxCounter - first + 1 else {
            throw bad("batch's sequence numbers \(first)+\(count) exceed the limit \(LogFormat.maxCounter)")
        }
        // Every operation takes at least two bytes: a larger count is corrupt, not a reason to loop.
        guard count <= payload.count else { throw bad("batch claims \(count) operations in \(payload.count) bytes") }
        if decodingOperations {
            try WriteBatch.forEachOperation(in: UnsafeRawBufferPointer(rebasing: payload[12...]), count: count,
                                            file: path, offset: offset) { _, _, _ in }
        }
        if count > 0 { lastSequence = first + UInt64(count) - 1 }
        batches += 1
        return (first, count)
    }
}
