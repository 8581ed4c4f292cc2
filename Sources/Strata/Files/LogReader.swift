#if canImport(Glibc)
import Glibc
#endif

/// Reads the records of a log file, front to back.
///
/// A log ends in one of three ways: cleanly; with a *torn tail* — a record cut short or failing its
/// CRC with nothing valid after it, which is what a crash mid-write leaves and which recovery cuts
/// off; or with *corruption* — a bad record followed by valid ones, which a crash cannot produce and
/// which is reported as ``StrataError/corrupted(file:offset:reason:)`` rather than silently dropping
/// the records after it.
struct LogReader {
    struct Record {
        let offset: Int
        let type: UInt8
        let payload: ArraySlice<UInt8>
    }

    enum End: Equatable {
        /// Every byte belonged to a valid record.
        case clean
        /// A torn tail starts at `offset`; `reason` says what was wrong with it.
        case tornTail(offset: Int, reason: String)
    }

    let path: String
    let logNumber: UInt64
    let records: [Record]
    let end: End
    /// The length of the valid prefix of the file (where a torn tail is cut).
    let validLength: Int

    /// Reads and checks the whole log.
    init(path: String) throws {
        let bytes = try SystemFile.withFile(path, flags: O_RDONLY) { (f) in
            try f.read(at: 0, count: try f.size())
        }
        try self.init(path: path, bytes: bytes)
    }

    init(path: String, bytes: [UInt8]) throws {
        self.path = path
        // A header cut short is what a crash right after creating the file leaves: an empty log.
        guard bytes.count >= LogFormat.headerSize else {
            logNumber = 0
            records = []
            end = bytes.isEmpty ? .clean : .tornTail(offset: 0, reason: "header cut short at \(bytes.count) bytes")
            validLength = 0
            return
        }
        guard Array(bytes[0..<8]) == LogFormat.magic else {
            throw StrataError.corrupted(file: path, offset: 0, reason: "not a Strata log (bad magic)")
        }
        let (version, number, storedCRC) = bytes.withUnsafeBytes {
            (LittleEndian.uint32($0, at: 8), LittleEndian.uint64($0, at: 12), LittleEndian.uint32($0, at: 20))
        }
        guard CRC32C.mask(CRC32C.checksum(bytes[0..<20])) == storedCRC else {
            throw StrataError.corrupted(file: path, offset: 0, reason: "log header checksum mismatch")
        }
        guard version == LogFormat.version else { throw StrataError.unsupportedFormatVersion(file: path, found: version) }
        logNumber = number

        var out: [Record] = []
        var offset = LogFormat.headerSize
        var endState = End.clean
        var lastSequence: UInt64 = 0
        while offset < bytes.count {
            switch Self.check(bytes, at: offset) {
            case .valid(let type, let length):
                let start = offset + LogFormat.recordHeaderSize
                out.append(Record(offset: offset, type: type, payload: bytes[start..<(start + length)]))
                if let end = Self.batchEnd(bytes[start..<(start + length)]) { lastSequence = max(lastSequence, end) }
                offset = start + length
            case .invalid(let reason):
                if let later = Self.firstValidRecord(in: bytes, after: offset, sequenceAbove: lastSequence) {
                    throw StrataError.corrupted(file: path, offset: offset,
                                     reason: "\(reason), followed by a valid record at \(later)")
                }
                endState = .tornTail(offset: offset, reason: reason)
            }
            if case .tornTail = endState { break }
        }
        records = out
        end = endState
        if case .tornTail(let at, _) = endState { validLength = at } else { validLength = bytes.count }
    }

    private enum Check { case valid(type: UInt8, length: Int), invalid(String) }

    private static func check(_ bytes: [UInt8], at offset: Int) -> Check {
        guard bytes.count - offset >= LogFormat.recordHeaderSize else {
            return .invalid("record header cut short")
        }
        return bytes.withUnsafeBytes { b in
            let stored = LittleEndian.uint32(b, at: offset)
            let length = Int(LittleEndian.uint32(b, at: offset + 4))
            let type = b[offset + 8]
            let start = offset + LogFormat.recordHeaderSize
            guard length <= LogFormat.maxRecordLength, length <= b.count - start else {
                return .invalid("record length \(length) runs past the end of the file")
            }
            // The type is checked before the CRC so that scanning garbage stays cheap.
            guard LogFormat.RecordType(rawValue: type) != nil else { return .invalid("unknown record type \(type)") }
            let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: b[(offset + 4)..<(start + length)]))
            guard CRC32C.mask(crc) == stored else { return .invalid("record checksum mismatch") }
            return .valid(type: type, length: length)
        }
    }

    /// The last sequence number of a batch payload (first + count - 1), if it is one.
    private static func batchEnd(_ payload: ArraySlice<UInt8>) -> UInt64? {
        guard payload.count >= 12 else { return nil }
        return payload.withUnsafeBytes { p in
            let first = LittleEndian.uint64(p, at: 0), count = UInt64(LittleEndian.uint32(p, at: 8))
            return count == 0 ? nil : first &+ count &- 1
        }
    }

    /// The offset of the first position after `offset` where a valid batch record starts whose
    /// sequence numbers follow those already read — one a crash could not have left behind the
    /// bad record. Requiring the sequence to go on keeps bytes that merely look like a record
    /// (inside the torn record's own payload, say) from counting.
    private static func firstValidRecord(in bytes: [UInt8], after offset: Int, sequenceAbove last: UInt64) -> Int? {
        var p = offset + 1
        while p + LogFormat.recordHeaderSize <= bytes.count {
            // A zeroed tail (never written) cannot hold a record: skip runs of zeros quickly.
            if bytes[p] == 0 && bytes[p + 1] == 0 && bytes[p + 2] == 0 && bytes[p + 3] == 0 { p += 1; continue }
            if case .valid(_, let length) = check(bytes, at: p), length >= 12 {
                let start = p + LogFormat.recordHeaderSize
                let first = bytes.withUnsafeBytes { LittleEndian.uint64($0, at: start) }
                if first > last { return p }
            }
            p += 1
        }
        return nil
    }
}
