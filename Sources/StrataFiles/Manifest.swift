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
package struct Manifest: Equatable, Sendable {
    package static let magic: [UInt8] = Array("STRATMAN".utf8)  // never change
    /// The version written. Version 2 promises that the log named by `logNumber` was created (and
    /// its directory entry synced) before the manifest named it; version 1 did not (FORMAT.md 4.5).
    package static let version: UInt32 = 2
    /// Versions this build reads.
    package static let readableVersions: ClosedRange<UInt32> = 1...2
    package static let headerSize = 20

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

    package func encode() -> [UInt8] {
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
        LittleEndian.append(Self.version, to: &out)
        LittleEndian.append(UInt32(p.count), to: &out)
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(p)), to: &out)
        out.append(contentsOf: p)
        return out
    }

    package static func decode(_ bytes: [UInt8], file: String) throws -> Manifest {
        guard bytes.count >= headerSize else {
            throw StrataError.corrupted(file: file, offset: bytes.count, reason: "manifest of \(bytes.count) bytes is too short")
        }
        guard Array(bytes[0..<8]) == magic else {
            throw StrataError.corrupted(file: file, offset: 0, reason: "not a Strata manifest (bad magic)")
        }
        let (version, length, crc) = bytes.withUnsafeBytes {
            (LittleEndian.uint32($0, at: 8), Int(LittleEndian.uint32($0, at: 12)), LittleEndian.uint32($0, at: 16))
        }
        guard readableVersions.contains(version) else { throw StrataError.unsupportedFormatVersion(file: file, found: version) }
        guard length == bytes.count - headerSize else {
            throw StrataError.corrupted(file: file, offset: 12, reason: "payload length \(length) but \(bytes.count - headerSize) bytes follow")
        }
        guard CRC32C.mask(CRC32C.checksum(bytes[headerSize...])) == crc else {
            throw StrataError.corrupted(file: file, offset: headerSize, reason: "manifest checksum mismatch")
        }
        return try bytes.withUnsafeBytes { (all) throws -> Manifest in
            let b = UnsafeRawBufferPointer(rebasing: all[headerSize...])
            var p = 0
            func bad() -> StrataError { .corrupted(file: file, offset: headerSize + p, reason: "malformed manifest payload") }
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
                    throw StrataError.corrupted(file: file, offset: headerSize + at,
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
                        throw StrataError.corrupted(file: file, offset: headerSize + at,
                                                    reason: "segment \(number) has an impossible file size \(size)")
                    }
                    run.append(SegmentMetadata(number: number, fileSize: size, smallestKey: s, largestKey: l, records: records))
                }
                m.runs.append(run)
            }
            guard p == b.count else { throw bad() }
            return m
        }
    }

    package static func read(directory: String, fileSystem: FileSystem) throws -> Manifest? {
        let path = directory + "/" + FileNames.manifest
        guard try fileSystem.exists(path) else { return nil }
        let bytes = try fileSystem.withFile(path, flags: .readOnly) { (f) in
            try f.read(at: 0, count: try f.size())
        }
        return try decode(bytes, file: path)
    }

    package func write(directory: String, fileSystem: FileSystem) throws {
        try fileSystem.writeAtomically(encode(), to: directory + "/" + FileNames.manifest, directory: directory)
    }

    /// Replaces the manifest (FORMAT.md 6.3). When it throws with `mayHaveReplaced` false, the old
    /// manifest is surely still in place; when true, the rename may have happened, and `MANIFEST`
    /// may be the old or the new one, after a crash too: the files of both must be kept.
    package func write(directory: String, fileSystem: FileSystem, mayHaveReplaced: inout Bool) throws {
        try fileSystem.writeAtomically(encode(), to: directory + "/" + FileNames.manifest, directory: directory,
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
