@_spi(Layers) import StrataFormat

/// Constants shared by ``LogWriter`` and ``LogReader``; FORMAT.md "Write-ahead log" is the spec.
///
/// ```
/// log       := header record*
/// header    := magic:8 "STRATLOG" | version:u32 | logNumber:u64 | maskedCRC:u32          (24 bytes)
/// record v2 := headerCRC:u32 | length:u32 | type:u8 | sequence:u64 | payloadCRC:u32 | payload[length]
///              (headerCRC covers bytes 4..<21 of the record, payloadCRC the payload)
/// record v1 := maskedCRC:u32 | length:u32 | type:u8 | payload[length]   (read only; the CRC
///              covers the length, type and payload bytes)
/// ```
///
/// An encrypted store's logs are version 3: version 2's 24-byte header, then
/// `keyIdentifier:16 | salt:16 | maskedCRC:u32` (the CRC over those 32 bytes; 60 bytes in all), and each record has version 2's layout with its payload sealed (ciphertext then
/// a 16-byte tag; `length` counts both), the tag covering record bytes 4..<17 (length, type,
/// sequence) and the nonce the record's offset (FORMAT.md 4.1).
package enum LogFormat {
    package static let magic: [UInt8] = Array("STRATLOG".utf8)  // never change
    /// The version new logs are written in.
    package static let version: UInt32 = 2
    /// The version of an encrypted store's logs: version 2's records, payloads sealed.
    package static let encryptedVersion: UInt32 = 3
    /// Versions this build reads.
    package static let readableVersions: ClosedRange<UInt32> = 1...3
    package static let headerSize = 24
    /// The header of version 3: version 2's (magic, version, log number, CRC), then the key
    /// identifier, the salt and their CRC.
    package static let encryptedHeaderSize = 24 + EncryptionKey.identifierSize + FileCipher.saltSize + 4
    /// The record header of the version written now.
    package static let recordHeaderSize = recordHeaderSizeV2
    package static let recordHeaderSizeV1 = 9
    package static let recordHeaderSizeV2 = 21
    /// The largest payload a record may claim; anything larger is corruption.
    package static let maxRecordLength = 1 << 30
    /// Sequence numbers and file numbers above this are damage, not history (2⁶³ − 1; FORMAT.md
    /// section 1, "Limits"): refusing them keeps every counter that continues from them far from
    /// overflowing.
    package static let maxCounter: UInt64 = UInt64(Int64.max)

    /// Record types. Never change a value; a retired one stays reserved.
    package enum RecordType: UInt8 {
        /// A ``WriteBatch``: its operations, applied atomically.
        case batch = 1
    }

    package static func header(logNumber: UInt64, version: UInt32 = version) -> [UInt8] {
        var h = magic
        LittleEndian.append(version, to: &h)
        LittleEndian.append(logNumber, to: &h)
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(h)), to: &h)
        return h
    }

    /// The header of a version 3 (encrypted) log sealed by `cipher`.
    package static func encryptedHeader(logNumber: UInt64, cipher: FileCipher) -> [UInt8] {
        var h = header(logNumber: logNumber, version: encryptedVersion)
        var e = cipher.keyIdentifier + cipher.salt
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(e)), to: &e)
        h.append(contentsOf: e)
        return h
    }

    /// The first sequence number of a batch payload (its first 8 bytes), 0 if it is shorter.
    package static func batchSequence(_ payload: UnsafeRawBufferPointer) -> UInt64 {
        payload.count >= 8 ? LittleEndian.uint64(payload, at: 0) : 0
    }

    /// Appends a version-2 record (header, then payload) to `out`.
    /// With `cipher`, the payload is sealed as the record at file offset `position` (version 3).
    package static func appendRecord(type: RecordType, sequence: UInt64, payload: UnsafeRawBufferPointer, to out: inout [UInt8],
                                     cipher: FileCipher? = nil, position: UInt64 = 0) {
        let start = out.count
        out.append(contentsOf: [0, 0, 0, 0])
        LittleEndian.append(UInt32(truncatingIfNeeded: payload.count + (cipher == nil ? 0 : FileCipher.tagSize)), to: &out)
        out.append(type.rawValue)
        LittleEndian.append(sequence, to: &out)
        if let cipher {
            var sealed: [UInt8] = []
            sealed.reserveCapacity(payload.count + FileCipher.tagSize)
            out.withUnsafeBytes { cipher.seal(payload, position: position, header: UnsafeRawBufferPointer(rebasing: $0[(start + 4)..<(start + 17)]), to: &sealed) }
            LittleEndian.append(CRC32C.mask(CRC32C.checksum(sealed)), to: &out)
            out.append(contentsOf: sealed)
        } else {
            LittleEndian.append(CRC32C.mask(CRC32C.checksum(payload)), to: &out)
        }
        let crc = out.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 4)..<(start + 21)]))) }
        withUnsafeBytes(of: crc.littleEndian) { m in
            for i in 0..<4 { out[start + i] = m[i] }
        }
        if cipher == nil { out.append(contentsOf: payload) }
    }
}

/// Appends records to a log file. Not thread-safe: the engine's commit leader is its only user.
package final class LogWriter: @unchecked Sendable {
    package let path: String
    package let number: UInt64
    private let file: SystemFile
    package private(set) var size: Int
    private var scratch: [UInt8] = []
    /// Seals the records of an encrypted store's log (version 3).
    private let cipher: FileCipher?
    /// The error of a failed append; every later append throws it.
    private var poisoned: (any Error)?
    /// Whether a record was appended to this writer (read by the engine's close, which no
    /// append runs beside): a log without one is exactly as its creator synced it.
    package private(set) var hasAppended = false

    /// Creates a new log file and writes its header (not yet synced); a version 3 log sealed with
    /// `key` when one is given.
    package convenience init(path: String, number: UInt64, fileSystem: FileSystem, key: EncryptionKey? = nil) throws {
        try self.init(path: path, number: number, fileSystem: fileSystem,
                      cipher: key.map { FileCipher.forNewFile(key: $0, purpose: .log, fileNumber: number) })
    }

    /// A log sealed by `cipher` (a new file's: FORMAT.md 11.4 makes one with a fixed salt).
    package init(path: String, number: UInt64, fileSystem: FileSystem, cipher: FileCipher?) throws {
        self.path = path
        self.number = number
        self.cipher = cipher
        self.file = try fileSystem.open(path, flags: [.writeOnly, .create, .exclusive, .append])
        let header = cipher.map { LogFormat.encryptedHeader(logNumber: number, cipher: $0) } ?? LogFormat.header(logNumber: number)
        do { try file.write(header) } catch { file.close(); throw error }
        self.size = header.count
    }

    /// Reopens the existing log at `path` (version 2, not encrypted) to append to it after its
    /// `length` bytes: an open whose newest log can take the new writes appends to it instead of
    /// creating one (FORMAT.md 4.5, step 9). Its header and name are durable already.
    ///
    /// REQUIRES: the file is a version 2 log for log `number` of `length` bytes, every one of
    /// them in a valid record or the header, as a ``LogReader`` of it found.
    package init(reopening path: String, number: UInt64, length: Int, fileSystem: FileSystem) throws {
        self.path = path
        self.number = number
        self.cipher = nil
        self.file = try fileSystem.open(path, flags: [.writeOnly, .append])
        do {
            let size = try file.size()
            guard size == length else {
                throw StrataError.corrupted(file: path, offset: min(size, length),
                                            reason: "the log changed while the store was opening: \(size) bytes, not \(length)")
            }
            self.size = size
        } catch { file.close(); throw error }
    }

    /// Appends one record and hands it to the OS (one `write`). Call ``sync()`` for durability.
    /// A batch payload begins with its first sequence number, which the record header repeats.
    package func append(type: LogFormat.RecordType, payload: UnsafeRawBufferPointer) throws {
        precondition(payload.count <= LogFormat.maxRecordLength, "record too large")
        // A failed write may have left part of a record at `size`: sealing another one at the same
        // position would reuse its nonce (FileCipher), so a log that failed takes no more records.
        if let poisoned { throw poisoned }
        scratch.removeAll(keepingCapacity: true)
        LogFormat.appendRecord(type: type, sequence: LogFormat.batchSequence(payload), payload: payload, to: &scratch,
                               cipher: cipher, position: UInt64(size))
        do { try file.write(scratch) } catch {
            poisoned = error
            throw error
        }
        size += scratch.count
        hasAppended = true
        if scratch.capacity > 4 << 20 { scratch = [] }
    }

    package func sync() throws { try file.sync() }

    package func close() { file.close() }
}
