@_spi(Layers) import StrataFormat

/// The store's table of contents (FORMAT.md, "Manifest"): which segment files are live, in which
/// sorted runs, and the counters recovery resumes from.
///
/// It is rewritten whole on every change — a temporary file, synced, renamed over `MANIFEST`, the
/// directory synced — so a crash leaves either the old or the new one, never a mix.
///
/// ```
/// manifest := magic:8 "STRATMAN" | version:u32 | payloadLength:u32 | maskedCRC:u32 | payload
/// payload  := nextFileNumber:varint lastSequence:varint logNumber:varint runCount:varint run*
/// run      := segmentCount:varint segment*
/// segment  := number:varint fileSize:varint records:varint smallestKey:bytes largestKey:bytes
/// bytes    := length:varint byte*
/// ```
///
/// An encrypted store's manifest (version 3) adds the key identifier and a salt to the header and
/// seals the payload (FORMAT.md 6.1):
/// `magic | version:u32 = 3 | sealedLength:u32 | maskedCRC:u32 | keyIdentifier:16 | salt:16 | sealed`.
package struct Manifest: Equatable, Sendable {
    package static let magic: [UInt8] = Array("STRATMAN".utf8)  // never change
    /// The version written. Version 2 promises that the log named by `logNumber` was created (and
    /// its directory entry synced) before the manifest named it; version 1 did not (FORMAT.md 4.5).
    package static let version: UInt32 = 2
    /// The version of an encrypted store's manifest: version 2's payload, sealed.
    package static let encryptedVersion: UInt32 = 3
    /// Versions this build reads.
    package static let readableVersions: ClosedRange<UInt32> = 1...3
    package static let headerSize = 20
    /// The header of version 3: version 2's, then the key identifier and the salt.
    package static let encryptedHeaderSize = 20 + EncryptionKey.identifierSize + FileCipher.saltSize

    /// The version the manifest was read in (``version`` for one made in memory).
    package var formatVersion: UInt32 = Manifest.version

    /// The next number to give a new file (logs and segments share the sequence).
    package var nextFileNumber: UInt64 = 1
    /// The last write sequence number covered by the segments.
    package var lastSequence: UInt64 = 0
    /// Logs numbered below this have been flushed into segments and are not replayed.
    package var logNumber: UInt64 = 0
    /// Sorted runs, newest first; each run's segments are in key order and do not overlap.
    package var runs: [[SegmentMetadata]] = []

    /// An empty manifest: a new store's.
    package init() {}

    /// The manifest's bytes; sealed (version 3) when `key` is given, with a new salt each time.
    package func encode(key: EncryptionKey? = nil) -> [UInt8] {
        var p: [UInt8] = []
        Varint.append(nextFileNumber, to: &p)
        Varint.append(lastSequence, to: &p)
        Varint.append(logNumber, to: &p)
        Varint.append(UInt64(runs.count), to: &p)
        for run in runs {
            Varint.append(UInt64(run.count), to: &p)
            for s in run {
                Varint.append(s.number, to: &p)
                Varint.append(s.fileSize, to: &p)
                Varint.append(s.records, to: &p)
                Varint.append(UInt64(s.smallestKey.count), to: &p)
                p.append(contentsOf: s.smallestKey)
                Varint.append(UInt64(s.largestKey.count), to: &p)
                p.append(contentsOf: s.largestKey)
            }
        }
        var out = Self.magic
        guard let key else {
            LittleEndian.append(Self.version, to: &out)
            LittleEndian.append(UInt32(p.count), to: &out)
            LittleEndian.append(CRC32C.mask(CRC32C.checksum(p)), to: &out)
            out.append(contentsOf: p)
            return out
        }
        let cipher = FileCipher.forNewFile(key: key, purpose: .manifest, fileNumber: 0)
        LittleEndian.append(Self.encryptedVersion, to: &out)
        LittleEndian.append(UInt32(p.count + FileCipher.tagSize), to: &out)
        var sealed: [UInt8] = []
        sealed.reserveCapacity(p.count + FileCipher.tagSize)
        // The tag also covers the magic, the version and the length (header bytes 0..<16).
        out.withUnsafeBytes { header in p.withUnsafeBytes { cipher.seal($0, position: 0, header: header, to: &sealed) } }
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(sealed)), to: &out)
        out.append(contentsOf: key.identifier)
        out.append(contentsOf: cipher.salt)
        out.append(contentsOf: sealed)
        return out
    }

    /// Whether the manifest `bytes` is sealed (version 3), from its header alone: nil when the
    /// header cannot be read.
    package static func isEncrypted(_ bytes: [UInt8]) -> Bool? {
        guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic else { return nil }
        return bytes.withUnsafeBytes { LittleEndian.uint32($0, at: 8) } == encryptedVersion
    }

    /// Decodes and checks a manifest (FORMAT.md 6.1). `key` is the store's: a sealed manifest
    /// needs the key it was sealed with, and a manifest in clear refuses a key
    /// (``StrataError/encryptionKey(store:problem:)`` naming `store`, the manifest's directory
    /// unless given).
    package static func decode(_ bytes: [UInt8], file: String, key: EncryptionKey? = nil, store: String? = nil) throws -> Manifest {
        let store = store ?? Self.directory(of: file)
        if Self.isEncrypted(bytes) == true {
            guard bytes.count >= encryptedHeaderSize else {
                throw StrataError.corrupted(file: file, offset: bytes.count, reason: "manifest of \(bytes.count) bytes is too short")
            }
            let (length, crc) = bytes.withUnsafeBytes { (Int(LittleEndian.uint32($0, at: 12)), LittleEndian.uint32($0, at: 16)) }
            guard length == bytes.count - encryptedHeaderSize else {
                throw StrataError.corrupted(file: file, offset: 12, reason: "sealed payload length \(length) but \(bytes.count - encryptedHeaderSize) bytes follow")
            }
            guard CRC32C.mask(CRC32C.checksum(bytes[encryptedHeaderSize...])) == crc else {
                throw StrataError.corrupted(file: file, offset: encryptedHeaderSize, reason: "manifest checksum mismatch")
            }
            let identifier = Array(bytes[20..<(20 + EncryptionKey.identifierSize)])
            try FileCipher.checkKey(key, fileIdentifier: identifier, store: store)
            let salt = Array(bytes[(20 + EncryptionKey.identifierSize)..<encryptedHeaderSize])
            let cipher = FileCipher(key: key!, purpose: .manifest, fileNumber: 0, salt: salt)
            let plain = bytes.withUnsafeBytes {
                cipher.open(UnsafeRawBufferPointer(rebasing: $0[encryptedHeaderSize...]), position: 0,
                            header: UnsafeRawBufferPointer(rebasing: $0[0..<16]))
            }
            guard let plain else {
                throw StrataError.corrupted(file: file, offset: encryptedHeaderSize, reason: "manifest fails authentication (AES-GCM tag mismatch)")
            }
            // The plaintext is version 2's payload; offsets in its faults count from the sealed bytes.
            return try plain.withUnsafeBytes {
                try decodePayload($0, version: encryptedVersion, file: file, payloadOffset: encryptedHeaderSize)
            }
        }
        let m = try decodeClear(bytes, file: file)
        try FileCipher.checkKey(key, fileIdentifier: nil, store: store)
        return m
    }

    /// The directory of a file path (`/a/b/MANIFEST` → `/a/b`).
    package static func directory(of file: String) -> String {
        guard let slash = file.lastIndex(of: "/") else { return "." }
        return slash == file.startIndex ? "/" : String(file[..<slash])
    }

    private static func decodeClear(_ bytes: [UInt8], file: String) throws -> Manifest {
        guard bytes.count >= headerSize else {
            throw StrataError.corrupted(file: file, offset: bytes.count, reason: "manifest of \(bytes.count) bytes is too short")
        }
        guard Array(bytes[0..<8]) == magic else {
            throw StrataError.corrupted(file: file, offset: 0, reason: "not a Strata manifest (bad magic)")
        }
        let (version, length, crc) = bytes.withUnsafeBytes {
            (LittleEndian.uint32($0, at: 8), Int(LittleEndian.uint32($0, at: 12)), LittleEndian.uint32($0, at: 16))
        }
        guard readableVersions.contains(version), version != encryptedVersion else { throw StrataError.unsupportedFormatVersion(file: file, found: version) }
        guard length == bytes.count - headerSize else {
            throw StrataError.corrupted(file: file, offset: 12, reason: "payload length \(length) but \(bytes.count - headerSize) bytes follow")
        }
        guard CRC32C.mask(CRC32C.checksum(bytes[headerSize...])) == crc else {
            throw StrataError.corrupted(file: file, offset: headerSize, reason: "manifest checksum mismatch")
        }
        return try bytes.withUnsafeBytes {
            try decodePayload(UnsafeRawBufferPointer(rebasing: $0[headerSize...]), version: version, file: file, payloadOffset: headerSize)
        }
    }

    /// Decodes a payload (version 2's layout, in clear) that starts at byte `payloadOffset` of
    /// `file`; faults name offsets in the file.
    private static func decodePayload(_ b: UnsafeRawBufferPointer, version: UInt32, file: String, payloadOffset: Int) throws -> Manifest {
        var p = 0
        func bad() -> StrataError { .corrupted(file: file, offset: payloadOffset + p, reason: "malformed manifest payload") }
        func u() throws -> UInt64 {
            guard let v = Varint.read(b, at: &p) else { throw bad() }
            return v
        }
        func key() throws -> [UInt8] {
            guard let n = Varint.readLength(b, at: &p, limit: b.count - p) else { throw bad() }
            defer { p += n }
            return Array(b[p..<(p + n)])
        }
        var m = Manifest()
        m.formatVersion = version
        // Counters beyond the limit cannot come from use; refusing them keeps every number
        // recovery derives from them (the next file, the next sequence) from overflowing.
        func counter(_ name: String) throws -> UInt64 {
            let at = p
            let v = try u()
            guard v <= LogFormat.maxCounter else {
                throw StrataError.corrupted(file: file, offset: payloadOffset + at,
                                            reason: "manifest \(name) \(v) exceeds the limit \(LogFormat.maxCounter)")
            }
            return v
        }
        m.nextFileNumber = try counter("nextFileNumber")
        m.lastSequence = try counter("lastSequence")
        m.logNumber = try counter("logNumber")
        let runCount = try u()
        guard runCount <= UInt64(b.count) else { throw bad() }
        for _ in 0..<runCount {
            let n = try u()
            guard n <= UInt64(b.count) else { throw bad() }
            var run: [SegmentMetadata] = []
            for _ in 0..<n {
                let at = p
                let number = try u(), size = try u(), records = try u()
                let s = try key(), l = try key()
                guard number < m.nextFileNumber else { throw bad() }
                guard size <= UInt64(Int.max) else {
                    throw StrataError.corrupted(file: file, offset: payloadOffset + at,
                                                reason: "segment \(number) has an impossible file size \(size)")
                }
                run.append(SegmentMetadata(number: number, fileSize: size, smallestKey: s, largestKey: l, records: records))
            }
            m.runs.append(run)
        }
        guard p == b.count else { throw bad() }
        return m
    }

    package static func read(directory: String, fileSystem: FileSystem, key: EncryptionKey? = nil) throws -> Manifest? {
        let path = directory + "/" + FileNames.manifest
        guard try fileSystem.exists(path) else { return nil }
        let bytes = try fileSystem.withFile(path, flags: .readOnly) { (f) in
            try f.read(at: 0, count: try f.size())
        }
        return try decode(bytes, file: path, key: key, store: directory)
    }

    package func write(directory: String, fileSystem: FileSystem, key: EncryptionKey? = nil) throws {
        try fileSystem.writeAtomically(encode(key: key), to: directory + "/" + FileNames.manifest, directory: directory)
    }

    /// Replaces the manifest (FORMAT.md 6.3). When it throws with `mayHaveReplaced` false, the old
    /// manifest is surely still in place; when true, the rename may have happened, and `MANIFEST`
    /// may be the old or the new one, after a crash too: the files of both must be kept.
    package func write(directory: String, fileSystem: FileSystem, key: EncryptionKey? = nil, mayHaveReplaced: inout Bool) throws {
        try fileSystem.writeAtomically(encode(key: key), to: directory + "/" + FileNames.manifest, directory: directory,
                                       mayHaveReplaced: &mayHaveReplaced)
    }
}

#if STRATA_INVARIANTS
extension Manifest {
    /// What every manifest a flush or compaction publishes holds (Engine+Flush.swift checks
    /// each; tests and recovery write others, from their own or crafted input): file numbers below the next one, the log
    /// number not above it, and in each run segments in key order. (Their bounds may overlap: the
    /// first segment of a run carries the run's range tombstones, and its bounds cover them; the
    /// point keys' ranges, which reads rely on, are checked by SortedRun.)
    package func checkInvariants() {
        Invariants.require(logNumber <= nextFileNumber, "manifest log number \(logNumber) ≥ next file number \(nextFileNumber)")
        var numbers = Set<UInt64>()
        for run in runs {
            for (i, s) in run.enumerated() {
                Invariants.require(s.number < nextFileNumber, "segment \(s.number) ≥ next file number \(nextFileNumber)")
                Invariants.require(numbers.insert(s.number).inserted, "segment \(s.number) listed twice")
                Invariants.require(ByteComparison.compare(s.smallestKey, s.largestKey) <= 0, "segment \(s.number) bounds reversed")
                if i > 0 {
                    Invariants.require(ByteComparison.compare(run[i - 1].smallestKey, s.smallestKey) < 0,
                                       "segments \(run[i - 1].number) and \(s.number) of one run out of key order")
                }
            }
        }
    }
}
#endif
