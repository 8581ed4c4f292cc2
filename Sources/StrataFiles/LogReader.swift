@_spi(Layers) import StrataFormat

/// Reads the records of a log file, front to back (FORMAT.md 4.3).
///
/// A log ends in one of three ways: cleanly; with a *torn tail* — what a crash in the middle of
/// the final append leaves, which recovery discards and reports; or with *corruption* — damage a
/// crash cannot produce, reported as ``StrataError/corrupted(file:offset:reason:)`` rather than
/// silently dropping the records after it.
///
/// Version 2 records carry a checksum of their own header, so the reader knows where a damaged
/// record ends: a tail is torn only when the damage is the final record (its header intact and its
/// payload cut short or failing its checksum, with nothing but zeros after it) or a record header
/// with nothing but zeros after its 21 bytes. Version 1 logs are still read with the version 1
/// rule (a bad record with no valid record after it). Either way the scan of a damaged region runs
/// at memory speed: no message is formatted until the verdict.
package struct LogReader {
    package struct Record {
        package let offset: Int
        package let type: UInt8
        /// The header's sequence number (version 2); nil in a version 1 log.
        package let sequence: UInt64?
        package let payload: ArraySlice<UInt8>

    package init(offset: Int, type: UInt8, sequence: UInt64?, payload: ArraySlice<UInt8>) {
        self.offset = offset
        self.type = type
        self.sequence = sequence
        self.payload = payload
    }
}

    /// A record whose payload is a view into the reader's bytes (``views``).
    package struct RecordView {
        package let offset: Int
        package let type: UInt8
        /// The header's sequence number (version 2); nil in a version 1 log.
        package let sequence: UInt64?
        /// Valid while the reader that gave it (or a copy of that reader) lives.
        package let payload: UnsafeRawBufferPointer

    package init(offset: Int, type: UInt8, sequence: UInt64?, payload: UnsafeRawBufferPointer) {
        self.offset = offset
        self.type = type
        self.sequence = sequence
        self.payload = payload
    }
}

    package enum End: Equatable {
        /// Every byte belonged to a valid record.
        case clean
        /// A torn tail starts at `offset`; `reason` says what was wrong with it.
        case tornTail(offset: Int, reason: String)
    }

    /// A log's bytes: read in one pass into memory that is not zero-filled first (a file that
    /// shrinks while it is read gives fewer bytes, never a fault on a page past its end), mapped
    /// (recovery's large logs), or a copy of bytes handed in. Released with the last reader that
    /// holds them.
    package final class Bytes: @unchecked Sendable {
        package let buffer: UnsafeRawBufferPointer
        /// Whether `buffer` is a mapping of the file (``init(path:fileSystem:mapped:)``), not
        /// memory of its own.
        private let isMapping: Bool

        package convenience init(reading path: String, fileSystem: FileSystem) throws {
            try self.init(path: path, fileSystem: fileSystem, mapped: false)
        }

        /// The log's bytes, mapped read-only when `mapped` and the file holds 1 MiB or more (a
        /// smaller log costs less to copy than to map and unmap), read otherwise. Mapped bytes are
        /// for a reader that holds the store's lock (recovery): no copy, and the pages stay the
        /// page cache's, which the records replayed from them point into until their memtable is
        /// flushed. REQUIRES (mapped): nothing shrinks the file while it is mapped (the store's
        /// lock keeps other stores out, and a store only appends to a log or deletes it); a touch
        /// past its end would be a SIGBUS, as for a segment.
        package init(path: String, fileSystem: FileSystem, mapped: Bool) throws {
            let file = try fileSystem.open(path, flags: .readOnly)
            defer { file.close() }
            let size = try file.size()
            if mapped && size >= 1 << 20 {
                try fileSystem.environment.check(.mmap, path)
                do {
                    buffer = try SystemCalls.mapReadOnly(file.descriptor, count: size)
                } catch {
                    throw StrataError.io(path: path, errno: error.code, operation: "mmap")
                }
                isMapping = true
                return
            }
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 8)
            do {
                let n = size == 0 ? 0 : try file.read(into: UnsafeMutableRawBufferPointer(rebasing: b[0..<size]), at: 0)
                buffer = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[0..<n])
            } catch {
                b.deallocate()
                throw error
            }
            isMapping = false
        }

        /// Takes ownership of `storage` (allocated by the caller), of which the first `count` bytes
        /// are the log's.
        package init(adopting storage: UnsafeMutableRawBufferPointer, count: Int) {
            buffer = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[0..<count])
            isMapping = false
        }

        package init(copying bytes: [UInt8]) {
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
            bytes.withUnsafeBytes { b.copyMemory(from: $0) }
            buffer = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[0..<bytes.count])
            isMapping = false
        }

        deinit {
            if isMapping { SystemCalls.unmap(buffer) } else { buffer.baseAddress?.deallocate() }
        }
    }

    package let path: String
    package let logNumber: UInt64
    /// The header's format version; nil when the header was cut short.
    package let formatVersion: UInt32?
    private let bytes: Bytes
    /// The bytes that ``views`` point into: whoever keeps a view past the reader keeps these.
    package var storage: Bytes { bytes }
    private let raw: [RawRecord]
    package let end: End
    /// The length of the valid prefix of the file (where a torn tail starts).
    package let validLength: Int
    /// The file's length.
    package let fileLength: Int

    /// Every valid record, in file order, each with a copy of its payload.
    package var records: [Record] {
        raw.map {
            Record(offset: $0.offset, type: $0.type, sequence: $0.sequence,
                   payload: Array(UnsafeRawBufferPointer(rebasing: bytes.buffer[$0.payload]))[...])
        }
    }

    /// Every valid record, in file order, its payload a view into the file's bytes: no copy, and
    /// valid while this reader lives (recovery's path).
    package var views: [RecordView] {
        raw.map {
            RecordView(offset: $0.offset, type: $0.type, sequence: $0.sequence,
                       payload: UnsafeRawBufferPointer(rebasing: bytes.buffer[$0.payload]))
        }
    }

    /// The key identifier in the header of an encrypted (version 3) log; nil in a log in clear.
    package let keyIdentifier: [UInt8]?

    /// Reads and checks the whole log. `key` is the store's: a version 3 log needs the key it was
    /// sealed with, and its records are opened (their tags checked) here; a log in clear refuses a
    /// key (``StrataError/encryptionKey(store:problem:)`` naming the log).
    /// `mapped`: a large file is mapped rather than read (``Bytes/init(path:fileSystem:mapped:)``),
    /// only for a reader that holds the store's lock.
    package init(path: String, fileSystem: FileSystem, key: EncryptionKey? = nil, mapped: Bool = false) throws {
        try self.init(path: path, bytes: try Bytes(path: path, fileSystem: fileSystem, mapped: mapped), key: key)
    }

    package init(path: String, bytes: [UInt8], key: EncryptionKey? = nil) throws {
        try self.init(path: path, bytes: Bytes(copying: bytes), key: key)
    }

    private init(path: String, bytes storage: Bytes, key: EncryptionKey?) throws {
        self.path = path
        let bytes = storage.buffer
        fileLength = bytes.count
        // A header cut short is what a crash right after creating the file leaves: an empty log.
        guard bytes.count >= LogFormat.headerSize else {
            self.bytes = storage
            logNumber = 0
            formatVersion = nil
            keyIdentifier = nil
            raw = []
            end = bytes.isEmpty ? .clean : .tornTail(offset: 0, reason: "header cut short at \(bytes.count) bytes")
            validLength = 0
            return
        }
        guard Array(bytes[0..<8]) == LogFormat.magic else {
            throw StrataError.corrupted(file: path, offset: 0, reason: "not a Strata log (bad magic)")
        }
        let (version, number, storedCRC) = (LittleEndian.uint32(bytes, at: 8), LittleEndian.uint64(bytes, at: 12),
                                            LittleEndian.uint32(bytes, at: 20))
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<20]))) == storedCRC else {
            throw StrataError.corrupted(file: path, offset: 0, reason: "log header checksum mismatch")
        }
        guard LogFormat.readableVersions.contains(version) else {
            throw StrataError.unsupportedFormatVersion(file: path, found: version)
        }
        // Version 3 (encrypted) goes on with the key identifier, the salt and their CRC; a header
        // cut short there is the same empty log as one cut short before.
        let encrypted = version == LogFormat.encryptedVersion
        let headerSize = encrypted ? LogFormat.encryptedHeaderSize : LogFormat.headerSize
        guard bytes.count >= headerSize else {
            self.bytes = storage
            logNumber = 0
            formatVersion = nil
            keyIdentifier = nil
            raw = []
            end = .tornTail(offset: 0, reason: "header cut short at \(bytes.count) bytes")
            validLength = 0
            return
        }
        if encrypted {
            let crcAt = headerSize - 4
            guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[24..<crcAt]))) == LittleEndian.uint32(bytes, at: crcAt) else {
                throw StrataError.corrupted(file: path, offset: 24, reason: "log encryption header checksum mismatch")
            }
        }
        let identifier = encrypted ? Array(bytes[24..<(24 + EncryptionKey.identifierSize)]) : nil
        try FileCipher.checkKey(key, fileIdentifier: identifier, store: path)
        logNumber = number
        formatVersion = version
        keyIdentifier = identifier
        var scan = version == 1 ? try Self.scanV1(bytes, path: path)
                                : try Self.scanV2(bytes, path: path, headerSize: headerSize, minimumLength: encrypted ? FileCipher.tagSize : 0)
        if let key, let identifier {
            // Every record's tag is checked (after its CRC) before anything reads it, and its
            // plaintext takes the place of its sealed payload in a buffer of the reader's own.
            let cipher = FileCipher(key: key, purpose: .log, fileNumber: number,
                                    salt: Array(bytes[(24 + identifier.count)..<(headerSize - 4)]))
            let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
            let owner = Bytes(adopting: plain, count: bytes.count)
            for i in scan.records.indices {
                let r = scan.records[i]
                guard let opened = cipher.open(UnsafeRawBufferPointer(rebasing: bytes[r.payload]), position: UInt64(r.offset),
                                               header: UnsafeRawBufferPointer(rebasing: bytes[(r.offset + 4)..<(r.offset + 17)]))
                else {
                    throw StrataError.corrupted(file: path, offset: r.offset, reason: "record fails authentication (AES-GCM tag mismatch)")
                }
                opened.withUnsafeBytes { p in
                    if let base = p.baseAddress { (plain.baseAddress! + r.payload.lowerBound).copyMemory(from: base, byteCount: p.count) }
                }
                scan.records[i] = RawRecord(offset: r.offset, type: r.type, sequence: r.sequence,
                                            payload: r.payload.lowerBound..<(r.payload.lowerBound + opened.count))
            }
            self.bytes = owner
        } else {
            self.bytes = storage
        }
        raw = scan.records
        end = scan.end
        if case .tornTail(let at, _) = scan.end { validLength = at } else { validLength = bytes.count }
    }

    private struct RawRecord {
        let offset: Int
        let type: UInt8
        let sequence: UInt64?
        let payload: Range<Int>
    }

    private struct Scan {
        var records: [RawRecord] = []
        var end = End.clean
    }

    /// Whether every byte of `b[from...]` is zero (a never-written or zero-filled tail).
    package static func allZero(_ b: UnsafeRawBufferPointer, from: Int) -> Bool {
        var i = from
        // Eight bytes at a time: a damaged region is scanned at memory speed.
        while i + 8 <= b.count {
            if b.loadUnaligned(fromByteOffset: i, as: UInt64.self) != 0 { return false }
            i += 8
        }
        while i < b.count {
            if b[i] != 0 { return false }
            i += 1
        }
        return true
    }

    // MARK: Version 2

    /// FORMAT.md 4.3, version 2: the header checksum tells where a damaged record ends, so only
    /// damage with nothing but zeros after it can be a torn final write.
    private static func scanV2(_ b: UnsafeRawBufferPointer, path: String, headerSize: Int, minimumLength: Int) throws -> Scan {
        var scan = Scan()
        var offset = headerSize
        let h = LogFormat.recordHeaderSizeV2
        while offset < b.count {
            let remaining = b.count - offset
            guard remaining >= h else {
                scan.end = .tornTail(offset: offset, reason: "record header cut short (\(remaining) of \(h) bytes)")
                break
            }
            let storedHeaderCRC = LittleEndian.uint32(b, at: offset)
            let headerCRC = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: b[(offset + 4)..<(offset + h)])))
            guard headerCRC == storedHeaderCRC else {
                if allZero(b, from: offset + h) {
                    scan.end = .tornTail(offset: offset, reason: "record header checksum mismatch with only zeros after it")
                    break
                }
                throw StrataError.corrupted(file: path, offset: offset,
                                            reason: "record header checksum mismatch, and more data follows it")
            }
            let length = Int(LittleEndian.uint32(b, at: offset + 4))
            let type = b[offset + 8]
            let sequence = LittleEndian.uint64(b, at: offset + 9)
            let storedPayloadCRC = LittleEndian.uint32(b, at: offset + 17)
            // An intact header with impossible values was written so: no crash makes it.
            guard length <= LogFormat.maxRecordLength + minimumLength else {
                throw StrataError.corrupted(file: path, offset: offset,
                                            reason: "record length \(length) exceeds the limit of \(LogFormat.maxRecordLength)")
            }
            guard length >= minimumLength else {
                throw StrataError.corrupted(file: path, offset: offset,
                                            reason: "sealed record of \(length) bytes is shorter than its \(minimumLength)-byte tag")
            }
            guard LogFormat.RecordType(rawValue: type) != nil else {
                throw StrataError.corrupted(file: path, offset: offset, reason: "unknown record type \(type)")
            }
            let start = offset + h
            guard length <= b.count - start else {
                scan.end = .tornTail(offset: offset, reason:
                    "payload cut short (\(b.count - start) of \(length) bytes)")
                break
            }
            let payloadCRC = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: b[start..<(start + length)])))
            guard payloadCRC == storedPayloadCRC else {
                if allZero(b, from: start + length) {
                    scan.end = .tornTail(offset: offset, reason: "payload checksum mismatch in the final record")
                    break
                }
                throw StrataError.corrupted(file: path, offset: offset,
                                            reason: "payload checksum mismatch, and more data follows the record")
            }
            scan.records.append(RawRecord(offset: offset, type: type, sequence: sequence, payload: start..<(start + length)))
            offset = start + length
        }
        return scan
    }

    // MARK: Version 1

    private enum CheckV1 { case valid(type: UInt8, length: Int), shortHeader, badLength, badType, badChecksum }

    /// FORMAT.md 4.3, version 1: a bad record is a torn tail unless a valid record whose sequence
    /// goes on starts somewhere after it.
    private static func scanV1(_ b: UnsafeRawBufferPointer, path: String) throws -> Scan {
        var scan = Scan()
        var offset = LogFormat.headerSize
        var lastSequence: UInt64 = 0
        while offset < b.count {
            let check = checkV1(b, at: offset)
            guard case .valid(let type, let length) = check else {
                let reason: String
                switch check {
                case .shortHeader: reason = "record header cut short"
                case .badLength: reason = "record length \(LittleEndian.uint32(b, at: offset + 4)) runs past the end of the file"
                case .badType: reason = "unknown record type \(b[offset + 8])"
                default: reason = "record checksum mismatch"
                }
                if let later = firstValidRecordV1(b, after: offset, sequenceAbove: lastSequence) {
                    throw StrataError.corrupted(file: path, offset: offset,
                                                reason: "\(reason), followed by a valid record at \(later)")
                }
                scan.end = .tornTail(offset: offset, reason: reason)
                break
            }
            let start = offset + LogFormat.recordHeaderSizeV1
            scan.records.append(RawRecord(offset: offset, type: type, sequence: nil, payload: start..<(start + length)))
            if length >= 12 {
                let first = LittleEndian.uint64(b, at: start), count = UInt64(LittleEndian.uint32(b, at: start + 8))
                if count > 0 { lastSequence = max(lastSequence, first &+ count &- 1) }
            }
            offset = start + length
        }
        return scan
    }

    private static func checkV1(_ b: UnsafeRawBufferPointer, at offset: Int) -> CheckV1 {
        guard b.count - offset >= LogFormat.recordHeaderSizeV1 else { return .shortHeader }
        let length = Int(LittleEndian.uint32(b, at: offset + 4))
        let start = offset + LogFormat.recordHeaderSizeV1
        guard length <= LogFormat.maxRecordLength, length <= b.count - start else { return .badLength }
        // The type is checked before the CRC so that scanning garbage stays cheap.
        guard LogFormat.RecordType(rawValue: b[offset + 8]) != nil else { return .badType }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: b[(offset + 4)..<(start + length)]))
        guard CRC32C.mask(crc) == LittleEndian.uint32(b, at: offset) else { return .badChecksum }
        return .valid(type: b[offset + 8], length: length)
    }

    /// The offset of the first position after `offset` where a valid batch record starts whose
    /// sequence numbers follow those already read — one a crash could not have left behind the
    /// bad record. The cheap tests (a non-zero CRC field, a length that fits, the type, a
    /// sequence that goes on) come before the checksum, so garbage is passed over at memory speed.
    private static func firstValidRecordV1(_ b: UnsafeRawBufferPointer, after offset: Int, sequenceAbove last: UInt64) -> Int? {
        var p = offset + 1
        let h = LogFormat.recordHeaderSizeV1
        while p + h + 12 <= b.count {
            // A zeroed tail (never written) cannot hold a record: a masked CRC of zero is not evidence.
            if b.loadUnaligned(fromByteOffset: p, as: UInt32.self) == 0 { p += 1; continue }
            let length = Int(LittleEndian.uint32(b, at: p + 4))
            let start = p + h
            if length >= 12, length <= LogFormat.maxRecordLength, length <= b.count - start,
               b[p + 8] == LogFormat.RecordType.batch.rawValue, LittleEndian.uint64(b, at: start) > last,
               case .valid = checkV1(b, at: p) {
                return p
            }
            p += 1
        }
        return nil
    }
}
