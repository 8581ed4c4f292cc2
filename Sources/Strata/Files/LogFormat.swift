/// Constants shared by ``LogWriter`` and ``LogReader``; FORMAT.md "Write-ahead log" is the spec.
///
/// ```
/// log     := header record*
/// header  := magic:8 "STRATLOG" | version:u32 | logNumber:u64 | maskedCRC:u32   (24 bytes)
/// record  := maskedCRC:u32 | length:u32 | type:u8 | payload[length]
///            (the CRC covers the length, type and payload bytes)
/// ```
enum LogFormat {
    static let magic: [UInt8] = Array("STRATLOG".utf8)  // never change
    static let version: UInt32 = 1
    static let headerSize = 24
    static let recordHeaderSize = 9
    /// The largest payload a record may claim; anything larger is corruption.
    static let maxRecordLength = 1 << 30

    /// Record types. Never change a value; a retired one stays reserved.
    enum RecordType: UInt8 {
        /// A ``WriteBatch``: its operations, applied atomically.
        case batch = 1
    }

    static func header(logNumber: UInt64) -> [UInt8] {
        var h = magic
        LittleEndian.append(version, to: &h)
        LittleEndian.append(logNumber, to: &h)
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(h)), to: &h)
        return h
    }
}

/// Appends records to a log file. Not thread-safe: the engine's commit leader is its only user.
final class LogWriter: @unchecked Sendable {
    let path: String
    let number: UInt64
    private let file: SystemFile
    private(set) var size: Int
    private var scratch: [UInt8] = []

    /// Creates a new log file and writes its header (not yet synced).
    init(path: String, number: UInt64) throws {
        self.path = path
        self.number = number
        self.file = try SystemFile.open(path, flags: O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
        let header = LogFormat.header(logNumber: number)
        do { try file.write(header) } catch { file.close(); throw error }
        self.size = header.count
    }

    /// Appends one record and hands it to the OS (one `write`). Call ``sync()`` for durability.
    func append(type: LogFormat.RecordType, payload: UnsafeRawBufferPointer) throws {
        precondition(payload.count <= LogFormat.maxRecordLength, "record too large")
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: [0, 0, 0, 0])
        LittleEndian.append(UInt32(payload.count), to: &scratch)
        scratch.append(type.rawValue)
        var crc = scratch.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4..<9])) }
        crc = CRC32C.checksum(payload, extending: crc)
        withUnsafeBytes(of: CRC32C.mask(crc).littleEndian) { m in
            for i in 0..<4 { scratch[i] = m[i] }
        }
        scratch.append(contentsOf: payload)
        try file.write(scratch)
        size += scratch.count
        if scratch.capacity > 4 << 20 { scratch = [] }
    }

    func sync() throws { try file.sync() }

    func close() { file.close() }
}

#if canImport(Glibc)
import Glibc
#endif
