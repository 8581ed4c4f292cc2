import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Bad input: damaged, truncated, foreign or future-version files, a store locked by another
// process, options out of range and failing system calls. Each case checks the exact
// `StrataError` and that the store either opens without the bad part or refuses to open — it
// never returns wrong data — and, where it refused, that the refusal damaged nothing (restoring
// the original bytes gives back the whole store).

/// A store directory for one test, removed by `cleanup()`.
private struct Scratch {
    let url: URL

    init(_ name: String) {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-badinput-\(name)-\(getpid())-\(UUID().uuidString)", isDirectory: true)
    }

    /// The directory as the engine names it in errors (symlinks resolved).
    var canonical: String { url.standardizedFileURL.resolvingSymlinksInPath().path }

    func path(_ name: String) -> String { canonical + "/" + name }

    func cleanup() {
        if let s = Store.opened(at: url) { try? s.close() }
        try? FileManager.default.removeItem(at: url)
    }

    /// File names of `kind` in the directory, sorted by number.
    func files(_ isKind: (FileNames.Kind) -> Bool) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: canonical).filter { isKind(FileNames.parse($0)) }.sorted()
    }

    func logs() throws -> [String] { try files { if case .log = $0 { return true } else { return false } } }
    func segments() throws -> [String] { try files { if case .segment = $0 { return true } else { return false } } }
}

private func readBytes(_ path: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

private func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

private func patchLE32(_ bytes: inout [UInt8], at offset: Int, _ value: UInt32) {
    for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
}

private func key(_ batch: Int, _ j: Int) -> [UInt8] { Array("b\(1000 + batch)/\(j)".utf8) }
private func value(_ batch: Int, _ j: Int) -> [UInt8] { Array("value \(batch).\(j) ".utf8) + [UInt8](repeating: UInt8(batch & 0xFF), count: 40) }
private let keysPerBatch = 4

/// Writes batches `range`, one `WriteBatch` (one log record) each.
private func writeBatches(_ store: Store, _ range: Range<Int>) throws {
    for b in range {
        var batch = WriteBatch()
        for j in 0..<keysPerBatch { batch.put(key(b, j), value(b, j)) }
        try store.write(batch)
    }
}

/// Checks that exactly the batches `present` of `0..<total` are in the store, whole and right.
private func expectBatches(_ store: Store, present: Range<Int>, total: Int,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
    var expected: [[UInt8]: [UInt8]] = [:]
    for b in present { for j in 0..<keysPerBatch { expected[key(b, j)] = value(b, j) } }
    var actual: [[UInt8]: [UInt8]] = [:]
    for (k, v) in try store.scan() { actual[k] = v }
    func names(_ keys: some Sequence<[UInt8]>) -> [String] { keys.map { String(decoding: $0, as: UTF8.self) }.sorted() }
    let missing = names(expected.keys.filter { actual[$0] == nil })
    let extra = names(actual.keys.filter { expected[$0] == nil })
    let wrong = names(expected.keys.filter { actual[$0] != nil && actual[$0] != expected[$0] })
    #expect(missing.isEmpty && extra.isEmpty && wrong.isEmpty,
            "scan, expecting batches \(present) of 0..<\(total): missing \(missing), unexpected \(extra), wrong values \(wrong)",
            sourceLocation: sourceLocation)
    for b in 0..<total {
        let got = try store.get(key(b, keysPerBatch - 1))
        #expect(got == (present.contains(b) ? value(b, keysPerBatch - 1) : nil), "get in batch \(b)", sourceLocation: sourceLocation)
    }
}

/// The error `Store.open` throws, or nil (after closing the store) if it opens.
private func openError(_ url: URL, options: StoreOptions = StoreOptions()) -> StrataError? {
    do {
        let store = try Store.open(at: url, options: options)
        try? store.close()
        return nil
    } catch let e as StrataError {
        return e
    } catch {
        Issue.record("Store.open threw a non-Strata error: \(error)")
        return nil
    }
}

/// The error `body` throws, or nil.
private func thrownError(_ body: () throws -> Void) -> StrataError? {
    do {
        try body()
        return nil
    } catch let e as StrataError {
        return e
    } catch {
        Issue.record("threw a non-Strata error: \(error)")
        return nil
    }
}

private func expectCorrupted(_ error: StrataError?, file: String, offset: Int? = nil,
                             sourceLocation: SourceLocation = #_sourceLocation) {
    guard case .corrupted(let f, let o, _)? = error else {
        Issue.record("expected .corrupted naming \(file), got \(error.map { "\($0)" } ?? "no error")", sourceLocation: sourceLocation)
        return
    }
    #expect(f == file, "corrupted names the file", sourceLocation: sourceLocation)
    if let offset { #expect(o == offset, "corrupted offset", sourceLocation: sourceLocation) }
}

private func expectUnsupported(_ error: StrataError?, file: String, found: UInt32,
                               sourceLocation: SourceLocation = #_sourceLocation) {
    guard case .unsupportedFormatVersion(let f, let v)? = error else {
        Issue.record("expected .unsupportedFormatVersion, got \(error.map { "\($0)" } ?? "no error")", sourceLocation: sourceLocation)
        return
    }
    #expect(f == file, sourceLocation: sourceLocation)
    #expect(v == found, sourceLocation: sourceLocation)
}

/// The ways `manifestDamage` damages a manifest.
enum BadInputManifestDamage: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case truncated, truncatedToHeader, bitFlip, wrongMagic, futureVersion, missingSegment
    var testDescription: String { rawValue }
}

@Suite struct BadInputTests {
    // MARK: Write-ahead log

    static let batchCount = 10

    /// A store whose only log holds `batchCount` records (close does not flush the memtable: the
    /// writes stay in the log and are replayed at the next open). Returns the log's path and its
    /// records as the reader sees them.
    private func storeWithLog(_ s: Scratch) throws -> (path: String, records: [LogReader.Record], size: Int) {
        let store = try Store.open(at: s.url)
        try writeBatches(store, 0..<Self.batchCount)
        try store.close()
        let logs = try s.logs()
        #expect(logs.count == 1, "one log after the first session: \(logs)")
        let path = s.path(try #require(logs.last))
        let reader = try LogReader(path: path, fileSystem: .real)
        #expect(reader.records.count == Self.batchCount, "one record per batch")
        #expect(reader.end == .clean)
        return (path, reader.records, try readBytes(path).count)
    }

    /// Opens the damaged store, expecting the last batch cut off; then checks the tail is gone for
    /// good and later writes land after it.
    private func expectTornTailRecovery(_ s: Scratch, logPath: String, lastRecordOffset: Int) throws {
        // The reader classifies the damage as a torn tail starting at the last record.
        let reader = try LogReader(path: logPath, fileSystem: .real)
        #expect(reader.end != .clean)
        if case .tornTail(let offset, _) = reader.end { #expect(offset == lastRecordOffset) }
        #expect(reader.validLength == lastRecordOffset)
        #expect(reader.records.count == Self.batchCount - 1)
        let damaged = try readBytes(logPath)

        let store = try Store.open(at: s.url)
        try expectBatches(store, present: 0..<(Self.batchCount - 1), total: Self.batchCount)
        // A torn tail is never cut in place (FORMAT.md 4.3): the log stays as it was until the
        // flush of its records deletes it.
        if FileManager.default.fileExists(atPath: logPath) {
            #expect(try readBytes(logPath) == damaged, "the torn log was changed in place")
        }
        try store.close()

        // A second open is clean and sees the same; new writes go on from there.
        let again = try Store.open(at: s.url)
        try expectBatches(again, present: 0..<(Self.batchCount - 1), total: Self.batchCount)
        try writeBatches(again, Self.batchCount..<(Self.batchCount + 2))
        try again.close()
        let third = try Store.open(at: s.url)
        defer { try? third.close() }
        for b in Self.batchCount..<(Self.batchCount + 2) {
            #expect(try third.get(key(b, 0)) == value(b, 0))
        }
        #expect(try third.get(key(Self.batchCount - 1, 0)) == nil)
    }

    @Test("a log cut in the middle of its last record: opens without that batch, the tail is cut")
    func logTruncatedInLastRecord() throws {
        let s = Scratch("logtrunc")
        defer { s.cleanup() }
        let (path, records, size) = try storeWithLog(s)
        let last = try #require(records.last)
        #expect(size == last.offset + LogFormat.recordHeaderSize + last.payload.count)
        var bytes = try readBytes(path)
        bytes.removeLast((size - last.offset) / 2)
        try writeBytes(bytes, to: path)
        try expectTornTailRecovery(s, logPath: path, lastRecordOffset: last.offset)
    }

    @Test("a log whose last record is cut inside its header: opens without that batch")
    func logTruncatedInLastRecordHeader() throws {
        let s = Scratch("logtrunchdr")
        defer { s.cleanup() }
        let (path, records, _) = try storeWithLog(s)
        let last = try #require(records.last)
        var bytes = try readBytes(path)
        bytes.removeLast(bytes.count - (last.offset + 5))
        try writeBytes(bytes, to: path)
        try expectTornTailRecovery(s, logPath: path, lastRecordOffset: last.offset)
    }

    @Test("a bit flip inside the last log record: a torn tail, opens without that batch")
    func logBitFlipInLastRecord() throws {
        let s = Scratch("logflip")
        defer { s.cleanup() }
        let (path, records, _) = try storeWithLog(s)
        let last = try #require(records.last)
        var bytes = try readBytes(path)
        bytes[last.offset + LogFormat.recordHeaderSize + last.payload.count / 2] ^= 0x10
        try writeBytes(bytes, to: path)
        try expectTornTailRecovery(s, logPath: path, lastRecordOffset: last.offset)
    }

    @Test("a zeroed tail after the last record (never written): opens with every batch")
    func logZeroedTail() throws {
        let s = Scratch("logzero")
        defer { s.cleanup() }
        let (path, _, size) = try storeWithLog(s)
        try writeBytes(try readBytes(path) + [UInt8](repeating: 0, count: 4096), to: path)
        let store = try Store.open(at: s.url)
        defer { try? store.close() }
        try expectBatches(store, present: 0..<Self.batchCount, total: Self.batchCount)
        if FileManager.default.fileExists(atPath: path) {
            #expect(try readBytes(path).count == size + 4096, "the zeroed tail was cut in place")
        }
    }

    @Test("a bit flip inside an earlier log record followed by valid records: open refuses, naming the log",
          arguments: [0, 3, 8])
    func logBitFlipInEarlierRecord(record: Int) throws {
        let s = Scratch("logmid")
        defer { s.cleanup() }
        let (path, records, _) = try storeWithLog(s)
        let original = try readBytes(path)
        var bytes = original
        let r = records[record]
        bytes[r.offset + LogFormat.recordHeaderSize + r.payload.count / 3] ^= 0x01
        try writeBytes(bytes, to: path)
        expectCorrupted(openError(s.url), file: path, offset: r.offset)
        #expect(Store.opened(at: s.url) == nil)
        // A second attempt fails the same way (the refusal neither cut the log nor took the lock).
        expectCorrupted(openError(s.url), file: path, offset: r.offset)
        #expect(try readBytes(path) == bytes, "the refused open left the log as it was")
        // With the original bytes back, every batch is there.
        try writeBytes(original, to: path)
        let store = try Store.open(at: s.url)
        defer { try? store.close() }
        try expectBatches(store, present: 0..<Self.batchCount, total: Self.batchCount)
    }

    @Test("a log with a wrong magic: open refuses with .corrupted")
    func logWrongMagic() throws {
        let s = Scratch("logmagic")
        defer { s.cleanup() }
        let (path, _, _) = try storeWithLog(s)
        var bytes = try readBytes(path)
        bytes[3] ^= 0x20
        try writeBytes(bytes, to: path)
        expectCorrupted(openError(s.url), file: path, offset: 0)
    }

    @Test("a log header with a bad checksum: open refuses with .corrupted")
    func logHeaderChecksum() throws {
        let s = Scratch("loghdr")
        defer { s.cleanup() }
        let (path, _, _) = try storeWithLog(s)
        var bytes = try readBytes(path)
        bytes[13] ^= 0x01  // inside the log number
        try writeBytes(bytes, to: path)
        expectCorrupted(openError(s.url), file: path, offset: 0)
    }

    @Test("a log of a future format version (header CRC recomputed): .unsupportedFormatVersion")
    func logFutureVersion() throws {
        let s = Scratch("logversion")
        defer { s.cleanup() }
        let (path, _, _) = try storeWithLog(s)
        var bytes = try readBytes(path)
        patchLE32(&bytes, at: 8, LogFormat.encryptedVersion + 1)
        patchLE32(&bytes, at: 20, CRC32C.mask(CRC32C.checksum(Array(bytes[0..<20]))))
        try writeBytes(bytes, to: path)
        expectUnsupported(openError(s.url), file: path, found: LogFormat.encryptedVersion + 1)
    }

    @Test("a log record with a valid checksum but a malformed batch: .corrupted naming the log and the record")
    func logMalformedBatchWithValidChecksum() throws {
        let s = Scratch("logbatch")
        defer { s.cleanup() }
        let (path, records, _) = try storeWithLog(s)
        let r = records[4]
        var bytes = try readBytes(path)
        // Payload: first sequence u64, count u32, then the operations; make the first op code unknown.
        let payloadStart = r.offset + LogFormat.recordHeaderSize
        bytes[payloadStart + 12] = 0x7F
        let crc = CRC32C.checksum(Array(bytes[(r.offset + 4)..<(payloadStart + r.payload.count)]))
        patchLE32(&bytes, at: r.offset, CRC32C.mask(crc))
        try writeBytes(bytes, to: path)
        let error = openError(s.url)
        expectCorrupted(error, file: path)
        if case .corrupted(_, let offset, _)? = error {
            #expect((r.offset..<(payloadStart + r.payload.count)).contains(offset),
                    "the error should point into the bad record at \(r.offset)…, not at \(offset)")
        }
    }

    @Test("a log below the manifest's log number (a crash after the flush's manifest edit): not replayed, and removed")
    func staleLogIsNotReplayed() throws {
        let s = Scratch("stalelog")
        defer { s.cleanup() }
        let (path, _, _) = try storeWithLog(s)
        let stale = try readBytes(path)
        // A flush writes that log to a segment and deletes it; then batch 0 is deleted.
        let store = try Store.open(at: s.url)
        try store.compact()
        #expect(!FileManager.default.fileExists(atPath: path))
        for j in 0..<keysPerBatch { try store.delete(key(0, j)) }
        try store.compact()  // flushes the deletions too
        try store.close()
        // The old log comes back, as if the crash came between the manifest edit and the delete.
        try writeBytes(stale, to: path)
        let third = try Store.open(at: s.url)
        try expectBatches(third, present: 1..<Self.batchCount, total: Self.batchCount)
        try third.close()
        #expect(!FileManager.default.fileExists(atPath: path),
                "a log below the manifest's log number is never needed again: recovery should delete it")
    }

    // MARK: Segments

    static let segmentKeys = 600

    private func segmentKey(_ i: Int) -> [UInt8] { Array("seg/\(10_000 + i)".utf8) }
    private func segmentValue(_ i: Int) -> [UInt8] { Array("segment value \(i) ".utf8) + [UInt8](repeating: UInt8(i % 251), count: 24) }

    /// Small blocks so that a segment has many; a cache too small to keep a data block around.
    private var coldOptions: StoreOptions {
        var o = StoreOptions()
        o.blockSize = 1 << 10
        o.cacheSize = 0
        return o
    }

    /// A store holding `segmentKeys` keys in one segment (`compact()` flushes the log), closed.
    /// Returns the segment's path.
    private func storeWithSegment(_ s: Scratch) throws -> String {
        let store = try Store.open(at: s.url, options: coldOptions)
        var batch = WriteBatch()
        for i in 0..<Self.segmentKeys { batch.put(segmentKey(i), segmentValue(i)) }
        try store.write(batch)
        try store.compact()
        try store.close()
        let segments = try s.segments()
        #expect(segments.count == 1, "one segment: \(segments)")
        return s.path(try #require(segments.first))
    }

    private func expectSegmentData(_ s: Scratch) throws {
        let store = try Store.open(at: s.url, options: coldOptions)
        defer { try? store.close() }
        let all = try store.scan()
        #expect(all.count == Self.segmentKeys)
        #expect(all.map(\.key) == (0..<Self.segmentKeys).map(segmentKey))
        #expect(all.map(\.value) == (0..<Self.segmentKeys).map(segmentValue))
    }

    @Test("a truncated segment: open refuses with .corrupted (the manifest records its size)",
          arguments: [1, 68, 2000])
    func segmentTruncated(cut: Int) throws {
        let s = Scratch("segtrunc")
        defer { s.cleanup() }
        let path = try storeWithSegment(s)
        let original = try readBytes(path)
        try writeBytes(Array(original.dropLast(cut)), to: path)
        expectCorrupted(openError(s.url, options: coldOptions), file: path)
        #expect(Store.opened(at: s.url) == nil)
        try writeBytes(original, to: path)
        try expectSegmentData(s)
    }

    @Test("a flipped byte in a data block: open succeeds, reading that block throws .corrupted")
    func segmentDataBlockBitFlip() throws {
        let s = Scratch("segflip")
        defer { s.cleanup() }
        let path = try storeWithSegment(s)
        var bytes = try readBytes(path)
        // The first data block starts at offset 0 and holds the smallest keys.
        bytes[7] ^= 0x04
        try writeBytes(bytes, to: path)

        let store = try Store.open(at: s.url, options: coldOptions)
        defer { try? store.close() }
        expectCorrupted(thrownError { _ = try store.get(segmentKey(0)) }, file: path, offset: 0)
        expectCorrupted(thrownError { _ = try store.scan() }, file: path, offset: 0)
        expectCorrupted(thrownError { _ = try store.scan(from: segmentKey(0), to: segmentKey(2)) }, file: path, offset: 0)
        // Asking again re-reads the block and fails again (nothing wrong was cached).
        expectCorrupted(thrownError { _ = try store.get(segmentKey(1)) }, file: path, offset: 0)
        // Blocks elsewhere in the file are intact and read right.
        let lastKey = Self.segmentKeys - 1
        #expect(try store.get(segmentKey(lastKey)) == segmentValue(lastKey))
        let tail = try store.scan(from: segmentKey(lastKey - 9))
        #expect(tail.map(\.key) == ((lastKey - 9)...lastKey).map(segmentKey))
        #expect(tail.map(\.value) == ((lastKey - 9)...lastKey).map(segmentValue))
    }

    @Test("a segment footer with a wrong magic: open refuses with .corrupted")
    func segmentWrongMagic() throws {
        let s = Scratch("segmagic")
        defer { s.cleanup() }
        let path = try storeWithSegment(s)
        let original = try readBytes(path)
        var bytes = original
        let footer = bytes.count - SegmentFormat.footerSize
        bytes[footer + 56] ^= 0xFF
        try writeBytes(bytes, to: path)
        expectCorrupted(openError(s.url, options: coldOptions), file: path, offset: footer + 56)
        try writeBytes(original, to: path)
        try expectSegmentData(s)
    }

    @Test("a segment footer with a bad checksum: open refuses with .corrupted")
    func segmentFooterChecksum() throws {
        let s = Scratch("segfootercrc")
        defer { s.cleanup() }
        let path = try storeWithSegment(s)
        var bytes = try readBytes(path)
        let footer = bytes.count - SegmentFormat.footerSize
        bytes[footer + 2] ^= 0x01  // inside the root index offset
        try writeBytes(bytes, to: path)
        expectCorrupted(openError(s.url, options: coldOptions), file: path, offset: footer)
    }

    @Test("a segment of a future format version: .unsupportedFormatVersion (checked before the CRC)")
    func segmentFutureVersion() throws {
        let s = Scratch("segversion")
        defer { s.cleanup() }
        let path = try storeWithSegment(s)
        var bytes = try readBytes(path)
        let footer = bytes.count - SegmentFormat.footerSize
        patchLE32(&bytes, at: footer + 52, SegmentFormat.encryptedVersion + 1)
        try writeBytes(bytes, to: path)
        expectUnsupported(openError(s.url, options: coldOptions), file: path, found: SegmentFormat.encryptedVersion + 1)
    }

    @Test("a segment shrunk while the store is open: reads throw .corrupted, never SIGBUS",
          arguments: [2, 4096])
    func segmentShrunkWhileOpen(divisor: Int) throws {
        let s = Scratch("segshrink")
        defer { s.cleanup() }
        let path = try storeWithSegment(s)
        let size = try readBytes(path).count
        let store = try Store.open(at: s.url, options: coldOptions)
        defer { try? store.close() }
        // Cut the file under the open store (its map still covers the old size).
        let fd = open(path, O_WRONLY)
        try #require(fd >= 0)
        #expect(ftruncate(fd, off_t(size / divisor)) == 0)
        close(fd)
        // A block past the new end, a block before it, and a scan: each is an error, not a crash.
        let lastKey = Self.segmentKeys - 1
        guard case .corrupted(let f1, _, _)? = thrownError({ _ = try store.get(segmentKey(lastKey)) }) else {
            Issue.record("get past the new end did not throw .corrupted")
            return
        }
        #expect(f1 == path)
        guard case .corrupted(let f2, _, _)? = thrownError({ _ = try store.get(segmentKey(0)) }) else {
            Issue.record("get of the first block did not throw .corrupted")
            return
        }
        #expect(f2 == path)
        guard case .corrupted(let f3, _, _)? = thrownError({ _ = try store.scan() }) else {
            Issue.record("scan did not throw .corrupted")
            return
        }
        #expect(f3 == path)
        guard case .corrupted(let f4, _, _)? = thrownError({ _ = try store.scan(reverse: true) }) else {
            Issue.record("reverse scan did not throw .corrupted")
            return
        }
        #expect(f4 == path)
    }

    // MARK: Manifest

    @Test("a damaged manifest: open refuses with the matching error", arguments: BadInputManifestDamage.allCases)
    func manifestDamage(_ damage: BadInputManifestDamage) throws {
        let s = Scratch("manifest-\(damage.rawValue)")
        defer { s.cleanup() }
        let segmentPath = try storeWithSegment(s)
        let path = s.path(FileNames.manifest)
        let original = try readBytes(path)
        #expect(original.count > Manifest.headerSize + 8)
        var bytes = original
        switch damage {
        case .truncated: bytes.removeLast(3)
        case .truncatedToHeader: bytes.removeLast(bytes.count - 11)
        case .bitFlip: bytes[Manifest.headerSize + (bytes.count - Manifest.headerSize) / 2] ^= 0x08
        case .wrongMagic: bytes[0] ^= 0x01
        case .futureVersion: patchLE32(&bytes, at: 8, Manifest.encryptedVersion + 1)
        case .missingSegment: try FileManager.default.removeItem(atPath: segmentPath)
        }
        let segmentBytes = damage == .missingSegment ? nil : try readBytes(segmentPath)
        try writeBytes(bytes, to: path)
        let error = openError(s.url, options: coldOptions)
        switch damage {
        case .truncated: expectCorrupted(error, file: path, offset: 12)
        case .truncatedToHeader: expectCorrupted(error, file: path)
        case .bitFlip: expectCorrupted(error, file: path, offset: Manifest.headerSize)
        case .wrongMagic: expectCorrupted(error, file: path, offset: 0)
        case .futureVersion: expectUnsupported(error, file: path, found: Manifest.encryptedVersion + 1)
        case .missingSegment: expectCorrupted(error, file: segmentPath)
        }
        #expect(Store.opened(at: s.url) == nil)
        if let segmentBytes {
            // The refused open changed nothing: with the original manifest back, all is there.
            #expect(try readBytes(segmentPath) == segmentBytes)
            try writeBytes(original, to: path)
            try expectSegmentData(s)
        }
    }

    // MARK: Lock

    @Test("a store held by another process: .locked; after that process dies, open succeeds")
    func lockedByAnotherProcess() throws {
        let s = Scratch("locked")
        defer { s.cleanup() }
        let store = try Store.open(at: s.url)
        try writeBatches(store, 0..<3)
        try store.close()

        let child = try CrashHelperProcess(["hold", s.url.path])
        let opened = child.waitFor(timeout: 120) { $0.contains("OPEN") }
        try #require(opened, "the helper did not open the store; stderr: \(child.errorText)")
        guard case .locked(let lockPath)? = openError(s.url) else {
            child.killAndWait()
            Issue.record("opening a store another process holds did not throw .locked")
            return
        }
        #expect(lockPath == s.path(FileNames.lock))
        #expect(Store.opened(at: s.url) == nil)
        guard case .locked? = thrownError({ try Store.destroy(at: s.url) }) else {
            child.killAndWait()
            Issue.record("destroying a store another process holds did not throw .locked")
            return
        }
        let status = child.killAndWait()
        #expect(CrashHelperProcess.killed(status, by: SIGKILL), "the helper exited early: \(child.errorText)")

        let again = try Store.open(at: s.url)
        defer { try? again.close() }
        try expectBatches(again, present: 0..<3, total: 3)
    }

    // MARK: Options

    @Test("options out of range: .invalidArgument", arguments: 0..<7)
    func invalidOptions(which: Int) throws {
        let s = Scratch("options")
        defer { s.cleanup() }
        var o = StoreOptions()
        switch which {
        case 0: o.memtableSize = 1
        case 1: o.blockSize = 0
        case 2: o.segmentSize = 1
        case 3: o.cacheSize = -1
        case 4: o.bloomBitsPerKey = 33
        case 5: o.syncInterval = .zero
        default: o.blockSize = 8 << 20
        }
        guard case .invalidArgument(let argument, let message)? = openError(s.url, options: o) else {
            Issue.record("options case \(which) did not throw .invalidArgument")
            return
        }
        let names = ["memtableSize", "blockSize", "segmentSize", "cacheSize", "bloomBitsPerKey", "syncInterval", "blockSize"]
        #expect(argument == names[which])
        #expect(!message.isEmpty)
        #expect(Store.opened(at: s.url) == nil)
    }

    // MARK: I/O faults

    /// Injects `code` for `operation` on the logs of `s` through `faults` (the store's own),
    /// runs `body`, and removes the hook.
    private func withLogFault<R>(_ s: Scratch, _ faults: IOFaults, _ operation: IOOperation, _ code: Int32,
                                 _ body: () throws -> R) rethrows -> R {
        let prefix = s.canonical + "/"
        return try faults.with({ op, path in
            op == operation && path.hasPrefix(prefix) && path.hasSuffix(".log") ? code : nil
        }, body)
    }

    @Test("a failed fsync or write of the log: that write throws .io, every later write too, never retried",
          arguments: [IOOperation.fsync, IOOperation.write])
    func logFaultIsSticky(operation: IOOperation) throws {
        let s = Scratch("fault-\(operation.rawValue)")
        defer { s.cleanup() }
        let faults = IOFaults()
        var options = StoreOptions()
        options.fileSystem = .injecting(faults)
        let store = try Store.open(at: s.url, options: options)
        try writeBatches(store, 0..<3)
        let logPath = s.path(try #require(try s.logs().last))

        let failed = withLogFault(s, faults, operation, EIO) { thrownError { try writeBatches(store, 3..<4) } }
        guard case .io(let path, let code, let op)? = failed else {
            Issue.record("the write under an injected \(operation) fault did not throw .io: \(failed.map { "\($0)" } ?? "no error")")
            try? store.close()
            return
        }
        #expect(path == logPath)
        #expect(code == EIO)
        #expect(op == operation.rawValue)

        // The hook is gone; the store still refuses to write and to sync.
        guard case .io? = thrownError({ try writeBatches(store, 4..<5) }) else {
            Issue.record("a write after a failed \(operation) did not throw .io")
            try? store.close()
            return
        }
        #expect(thrownError({ try store.sync() }) != nil, "sync after a failed \(operation) must fail")
        // Reads still work and see the acknowledged writes.
        for b in 0..<3 { #expect(try store.get(key(b, 0)) == value(b, 0)) }
        #expect(try store.get(key(4, 0)) == nil)
        try? store.close()

        // After reopening, the acknowledged batches are there; the one rejected up front is not.
        let again = try Store.open(at: s.url)
        defer { try? again.close() }
        for b in 0..<3 { for j in 0..<keysPerBatch { #expect(try again.get(key(b, j)) == value(b, j)) } }
        #expect(try again.get(key(4, 0)) == nil)
        // Batch 3 is uncertain (its write may have reached the file), but never partial.
        let batch3 = try (0..<keysPerBatch).map { try again.get(key(3, $0)) }
        #expect(batch3.allSatisfy { $0 == nil } || batch3.enumerated().allSatisfy { $0.element == value(3, $0.offset) })
        // And the reopened store writes again.
        try writeBatches(again, 5..<6)
        #expect(try again.get(key(5, 0)) == value(5, 0))
    }
}
