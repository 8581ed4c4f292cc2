import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Recovery (FORMAT.md 4.3–4.5): torn tails against corruption in log version 2, the recovery
// report, one validation shared with `strata-dump verify`, refused opens that change nothing,
// extreme numbers from disk, and damaged regions scanned at memory speed.

// MARK: - Crafting stores

/// A batch payload as the log stores it: first sequence, count, operations (`put k → v` each).
private func batchPayload(first: UInt64, keys: [String]) -> [UInt8] {
    var batch = WriteBatch()
    for k in keys { batch.put(Array(k.utf8), Array("v-\(k)".utf8)) }
    var p: [UInt8] = []
    LittleEndian.append(first, to: &p)
    LittleEndian.append(UInt32(batch.count), to: &p)
    return p + batch.operations
}

/// A version 2 log: its bytes and each record's offset.
private func v2Log(number: UInt64, _ payloads: [[UInt8]]) -> (bytes: [UInt8], offsets: [Int]) {
    var bytes = LogFormat.header(logNumber: number)
    var offsets: [Int] = []
    for p in payloads {
        offsets.append(bytes.count)
        p.withUnsafeBytes { LogFormat.appendRecord(type: .batch, sequence: LogFormat.batchSequence($0), payload: $0, to: &bytes) }
    }
    return (bytes, offsets)
}

/// A version 1 log, as earlier builds wrote it.
private func v1Log(number: UInt64, _ payloads: [[UInt8]]) -> (bytes: [UInt8], offsets: [Int]) {
    var bytes = LogFormat.header(logNumber: number, version: 1)
    var offsets: [Int] = []
    for p in payloads {
        offsets.append(bytes.count)
        var r: [UInt8] = [0, 0, 0, 0]
        LittleEndian.append(UInt32(p.count), to: &r)
        r.append(LogFormat.RecordType.batch.rawValue)
        r += p
        let crc = CRC32C.mask(CRC32C.checksum(r[4...]))
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { r[i] = $0[i] } }
        bytes += r
    }
    return (bytes, offsets)
}

private func manifestBytes(nextFileNumber: UInt64, lastSequence: UInt64 = 0, logNumber: UInt64,
                           runs: [[SegmentMetadata]] = [], version: UInt8 = 2) -> [UInt8] {
    var m = Manifest()
    m.nextFileNumber = nextFileNumber
    m.lastSequence = lastSequence
    m.logNumber = logNumber
    m.runs = runs
    var bytes = m.encode()
    bytes[8] = version  // the CRC covers the payload only
    return bytes
}

/// Every entry of the directory but `LOCK` (which open creates, and whose content is for people
/// only): a file's bytes, or a directory's listing.
private func snapshot(_ dir: TemporaryDirectory) throws -> [String: [UInt8]] {
    var out: [String: [UInt8]] = [:]
    for name in dir.list() where name != FileNames.lock {
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: dir.file(name), isDirectory: &isDirectory)
        out[name] = isDirectory.boolValue
            ? Array(((try? FileManager.default.contentsOfDirectory(atPath: dir.file(name))) ?? []).sorted().joined(separator: "/").utf8)
            : try dir.read(name)
    }
    return out
}

private func openError(_ dir: TemporaryDirectory) -> StrataError? {
    do {
        let s = try Store.open(at: dir.url)
        try? s.close()
        return nil
    } catch let e as StrataError {
        return e
    } catch {
        Issue.record("not a StrataError: \(error)")
        return nil
    }
}

private func expectCorrupted(_ error: StrataError?, fileSuffix: String, offset: Int? = nil,
                             sourceLocation: SourceLocation = #_sourceLocation) {
    guard case .corrupted(let f, let o, _)? = error else {
        Issue.record("expected .corrupted naming \(fileSuffix), got \(error.map { "\($0)" } ?? "no error")", sourceLocation: sourceLocation)
        return
    }
    #expect(f.hasSuffix("/" + fileSuffix), "names \(f)", sourceLocation: sourceLocation)
    if let offset { #expect(o == offset, "offset", sourceLocation: sourceLocation) }
}

/// A store whose current log holds `count` batches of one key each (closing does not flush).
private func storeWithLog(_ dir: TemporaryDirectory, count: Int = 10) throws -> (name: String, records: [LogReader.Record]) {
    let store = try Store.open(at: dir.url)
    for i in 0..<count { try store.put(Array("k\(i)".utf8), Array("v\(i)".utf8)) }
    try store.close()
    let logs = dir.list().filter { if case .log = FileNames.parse($0) { return true } else { return false } }
    let name = try #require(logs.last)
    return (name, try LogReader(path: dir.file(name), fileSystem: .real).records)
}

@Suite struct RecoveryTests {
    // MARK: Log version 2: only a torn final write is cut

    @Test("a zeroed or flipped header of the last record, its payload intact: corruption, not a silent cut")
    func damagedLastHeaderIsCorruption() throws {
        for damage in ["zeroed", "flipped"] {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let (name, records) = try storeWithLog(dir)
            let last = try #require(records.last)
            var bytes = try dir.read(name)
            if damage == "zeroed" {
                for i in last.offset..<(last.offset + 21) { bytes[i] = 0 }
            } else {
                bytes[last.offset + 5] ^= 0x01  // inside the length
            }
            try dir.write(name, bytes)
            let before = try snapshot(dir)
            expectCorrupted(openError(dir), fileSuffix: name, offset: last.offset)
            #expect(try snapshot(dir) == before, "\(damage): the refused open changed the directory")
            let report = try StoreVerifier.verify(storeAt: dir.path)
            #expect(report.faults.contains { $0.file.hasSuffix(name) && $0.offset == last.offset }, "\(report.faults)")
        }
    }

    @Test("a zeroed page in the middle of a log: corruption")
    func zeroedPageInTheMiddleIsCorruption() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (name, records) = try storeWithLog(dir, count: 200)
        var bytes = try dir.read(name)
        let victim = records[100]
        for i in victim.offset..<min(bytes.count, victim.offset + 64) { bytes[i] = 0 }
        try dir.write(name, bytes)
        expectCorrupted(openError(dir), fileSuffix: name, offset: victim.offset)
    }

    // MARK: The recovery report

    @Test("Store.recovery names each cut tail, the logs and the batches replayed")
    func recoveryReport() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (name, records) = try storeWithLog(dir)
        let last = try #require(records.last)
        var bytes = try dir.read(name)
        let size = bytes.count
        bytes.removeLast(3)
        try dir.write(name, bytes)
        let store = try Store.open(at: dir.url)
        let r = store.recovery
        #expect(r.logsReplayed == 1)
        #expect(r.batchesReplayed == records.count - 1)
        try #require(r.cutTails.count == 1)
        #expect(r.cutTails[0].file.hasSuffix("/" + name))
        #expect(r.cutTails[0].offset == last.offset)
        #expect(r.cutTails[0].bytesCut == size - 3 - last.offset)
        #expect(!r.isClean)
        #expect(try store.get(Array("k8".utf8)) == Array("v8".utf8))
        #expect(try store.get(Array("k9".utf8)) == nil)
        try store.close()
        let again = try Store.open(at: dir.url)
        defer { try? again.close() }
        #expect(again.recovery.isClean)
        #expect(again.recovery.batchesReplayed == 0)
    }

    @Test("strata-dump verify reports a torn tail as a finding with its size")
    func verifyNotesTornTail() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (name, records) = try storeWithLog(dir)
        var bytes = try dir.read(name)
        bytes.removeLast(3)
        try dir.write(name, bytes)
        let report = try StoreVerifier.verify(storeAt: dir.path)
        #expect(report.isClean)
        let note = report.notes.first { $0.file.hasSuffix(name) && $0.offset == records.last?.offset }
        #expect(note?.message.contains("torn tail of \(bytes.count - records.last!.offset) bytes") == true, "\(report.notes)")
    }

    // MARK: Create the log before the manifest names it

    @Test("the log the manifest names is missing: corruption, not silent loss")
    func namedLogMissingIsCorruption() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (name, _) = try storeWithLog(dir)
        try FileManager.default.removeItem(atPath: dir.file(name))
        let before = try snapshot(dir)
        expectCorrupted(openError(dir), fileSuffix: name, offset: 0)
        #expect(try snapshot(dir) == before)
        let report = try StoreVerifier.verify(storeAt: dir.path)
        #expect(report.faults.contains { $0.file.hasSuffix(name) }, "\(report.faults)")
    }

    /// A version 1 manifest was written before its log existed: a crash in between left it naming
    /// a log that was never created, with nothing to replay. Such a store still opens.
    @Test("a version 1 manifest naming a log that was never created (the old order's crash): opens")
    func version1ManifestWithoutItsLogOpens() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        try store.put(Array("a".utf8), Array("1".utf8))
        try store.compact()  // log 1 flushed to a segment; the manifest names the new, empty log
        try store.close()
        let named = FileNames.log(try #require(try Manifest.read(directory: dir.path, fileSystem: .real)).logNumber)
        #expect(named != "000001.log" && dir.list().contains(named))
        try FileManager.default.removeItem(atPath: dir.file(named))
        var manifest = try dir.read("MANIFEST")
        manifest[8] = 1
        try dir.write("MANIFEST", manifest)
        let reopened = try Store.open(at: dir.url)
        #expect(try reopened.get(Array("a".utf8)) == Array("1".utf8))
        try reopened.close()
        #expect(try dir.read("MANIFEST")[8] == 2, "written in the new version from then on")
        // The same, but a newer log exists: the named one existed and was lost.
        try FileManager.default.removeItem(atPath: dir.file("MANIFEST"))
        try dir.write("MANIFEST", manifestBytes(nextFileNumber: 9, logNumber: 7, version: 1))
        for n in dir.list() where n.hasSuffix(".seg") || n.hasSuffix(".log") { try FileManager.default.removeItem(atPath: dir.file(n)) }
        try dir.write("000008.log", LogFormat.header(logNumber: 8))
        expectCorrupted(openError(dir), fileSuffix: "000007.log")
    }

    @Test("open creates the new log before the manifest names it")
    func newLogExistsBeforeTheManifestNamesIt() throws {
        // Every manifest a store writes names a log that exists at that moment: after each open,
        // the manifest's log is on disk.
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        for round in 0..<3 {
            let store = try Store.open(at: dir.url)
            try store.put(Array("k\(round)".utf8), [1])
            let m = try #require(try Manifest.read(directory: dir.path, fileSystem: .real))
            #expect(m.formatVersion == Manifest.version)
            #expect(dir.list().contains(FileNames.log(m.logNumber)))
            try store.close()
        }
    }

    // MARK: One validation for open and verify

    @Test("a log record whose sequence is 0 or goes backwards: open refuses, verify reports the same record",
          arguments: ["zero", "backwards", "backwardsAcrossLogs", "headerDiffers"])
    func badSequencesAreRefused(_ kind: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("MANIFEST", manifestBytes(nextFileNumber: 3, logNumber: 1))
        var badLog = "000001.log"
        var badOffset = 0
        switch kind {
        case "zero":
            let log = v2Log(number: 1, [batchPayload(first: 1, keys: ["a"]), batchPayload(first: 0, keys: ["b"])])
            try dir.write(badLog, log.bytes)
            badOffset = log.offsets[1]
        case "backwards":
            let log = v2Log(number: 1, [batchPayload(first: 5, keys: ["a", "b"]), batchPayload(first: 6, keys: ["a"])])
            try dir.write(badLog, log.bytes)
            badOffset = log.offsets[1]
        case "backwardsAcrossLogs":
            try dir.write("000001.log", v2Log(number: 1, [batchPayload(first: 5, keys: ["a"])]).bytes)
            let log = v2Log(number: 2, [batchPayload(first: 3, keys: ["a"])])
            badLog = "000002.log"
            try dir.write(badLog, log.bytes)
            badOffset = log.offsets[0]
        default:
            // A CRC-valid header whose sequence is not the batch's.
            var bytes = LogFormat.header(logNumber: 1)
            batchPayload(first: 4, keys: ["a"]).withUnsafeBytes {
                LogFormat.appendRecord(type: .batch, sequence: 9, payload: $0, to: &bytes)
            }
            try dir.write(badLog, bytes)
            badOffset = LogFormat.headerSize
        }
        let before = try snapshot(dir)
        expectCorrupted(openError(dir), fileSuffix: badLog, offset: badOffset)
        #expect(try snapshot(dir) == before)
        let report = try StoreVerifier.verify(storeAt: dir.path)
        #expect(report.faults.contains { $0.file.hasSuffix(badLog) && $0.offset == badOffset }, "\(report.faults)")
    }

    // MARK: A refused open changes nothing

    /// A store with leftovers a successful open deletes: temporary files, an unlisted segment, a
    /// log below the manifest's log number. Returns the names of the log the manifest names (it
    /// holds the writes `b0`…`b4`) and of the segment holding `a0`…`a4`.
    private func storeWithLeftovers(_ dir: TemporaryDirectory) throws -> (log: String, segment: String) {
        let store = try Store.open(at: dir.url)
        for i in 0..<5 { try store.put(Array("a\(i)".utf8), [UInt8(i)]) }
        let oldLog = try dir.read("000001.log")
        try store.compact()  // log 1 flushed to a segment and deleted
        for i in 0..<5 { try store.put(Array("b\(i)".utf8), [UInt8(i)]) }
        try store.close()
        let m = try #require(try Manifest.read(directory: dir.path, fileSystem: .real))
        let segment = try #require(m.runs.first?.first)
        try dir.write("000001.log", oldLog)
        try dir.write("000050.seg", [UInt8](repeating: 7, count: 100))
        try dir.write("000051.seg.tmp", [1, 2, 3])
        try dir.write("MANIFEST.tmp", [4, 5, 6])
        return (FileNames.log(m.logNumber), FileNames.segment(segment.number))
    }

    @Test("a refused open leaves the directory byte for byte as it was",
          arguments: ["bad log record", "log is a directory", "segment is a directory", "stray maximal number",
                      "later log goes backwards", "bad manifest counter"])
    func refusedOpenChangesNothing(_ fault: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (log, segment) = try storeWithLeftovers(dir)
        switch fault {
        case "bad log record":
            let records = try LogReader(path: dir.file(log), fileSystem: .real).records
            var bytes = try dir.read(log)
            bytes[records[2].offset + 30] ^= 0x40
            try dir.write(log, bytes)
        case "log is a directory":
            try FileManager.default.removeItem(atPath: dir.file(log))
            try FileManager.default.createDirectory(atPath: dir.file(log) + "/inside", withIntermediateDirectories: true)
        case "segment is a directory":
            try FileManager.default.removeItem(atPath: dir.file(segment))
            try FileManager.default.createDirectory(atPath: dir.file(segment) + "/inside", withIntermediateDirectories: true)
        case "stray maximal number":
            try dir.write("18446744073709551615.log", LogFormat.header(logNumber: .max))
        case "later log goes backwards":
            try dir.write("000040.log", v2Log(number: 40, [batchPayload(first: 1, keys: ["x"])]).bytes)
        default:
            let m = try #require(try Manifest.read(directory: dir.path, fileSystem: .real))
            var bytes = manifestBytes(nextFileNumber: m.nextFileNumber, lastSequence: .max, logNumber: m.logNumber, runs: m.runs)
            bytes[8] = 2
            try FileManager.default.removeItem(atPath: dir.file("MANIFEST"))
            try dir.write("MANIFEST", bytes)
        }
        let before = try snapshot(dir)
        let error = openError(dir)
        #expect(error != nil, "\(fault): opened")
        #expect(try snapshot(dir) == before, "\(fault): the refused open (\(String(describing: error))) changed the directory")
        if case .corrupted? = error {
            let report = try StoreVerifier.verify(storeAt: dir.path)
            #expect(!report.isClean, "\(fault): verify finds nothing")
        }
    }

    @Test("a failure to delete a leftover after the store opened does not fail the open")
    func undeletableLeftoverDoesNotFailTheOpen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        _ = try storeWithLeftovers(dir)
        // A "temporary file" and a stale log that are non-empty directories cannot be unlinked.
        try FileManager.default.createDirectory(atPath: dir.file("junk.tmp") + "/inside", withIntermediateDirectories: true)
        try FileManager.default.removeItem(atPath: dir.file("000001.log"))
        try FileManager.default.createDirectory(atPath: dir.file("000001.log") + "/inside", withIntermediateDirectories: true)
        let store = try Store.open(at: dir.url)
        #expect(try store.get(Array("b4".utf8)) == [4])
        #expect(!dir.list().contains("000050.seg"))
        #expect(!dir.list().contains("MANIFEST.tmp"))
        #expect(dir.list().contains("000001.log"), "left for the next open")
        try store.close()
        // The leftovers stay harmless: the store opens again with everything.
        let again = try Store.open(at: dir.url)
        defer { try? again.close() }
        #expect(try again.get(Array("a0".utf8)) == [0])
        #expect(try again.get(Array("b4".utf8)) == [4])
    }

    // MARK: Missing MANIFEST and impossible names

    @Test("verify reports what open refuses: MANIFEST missing beside a log or a segment, a file number above the limit",
          arguments: ["log", "segment", "stray"])
    func verifyFindsWhatOpenRefuses(_ what: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        try store.put(Array("a".utf8), [1])
        try store.close()
        var file = "MANIFEST"
        switch what {
        case "log":
            try FileManager.default.removeItem(atPath: dir.file("MANIFEST"))
        case "segment":
            let reopened = try Store.open(at: dir.url)
            try reopened.compact()  // the log's records go to a segment
            try reopened.close()
            for n in dir.list() where n.hasSuffix(".log") { try FileManager.default.removeItem(atPath: dir.file(n)) }
            try FileManager.default.removeItem(atPath: dir.file("MANIFEST"))
        default:
            file = "18446744073709551615.seg"
            try dir.write(file, [0])
        }
        expectCorrupted(openError(dir), fileSuffix: file, offset: 0)
        let report = try StoreVerifier.verify(storeAt: dir.path)
        #expect(!report.isClean)
        #expect(report.faults.contains { $0.file.hasSuffix("/" + file) }, "\(report.faults)")
    }

    // MARK: Extreme numbers from disk

    @Test("manifest counters at or near 2^64-1, and a segment size of 2^63: open refuses with .corrupted naming MANIFEST",
          arguments: ["nextFileNumber", "logNumber", "lastSequence", "fileSize", "nextFileNumber-1", "2^63"])
    func extremeManifestNumbers(_ which: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let bytes: [UInt8]
        switch which {
        case "nextFileNumber": bytes = manifestBytes(nextFileNumber: .max, logNumber: 0)
        case "nextFileNumber-1": bytes = manifestBytes(nextFileNumber: .max - 1, logNumber: 0)
        case "2^63": bytes = manifestBytes(nextFileNumber: 1 << 63, logNumber: 0)
        case "logNumber": bytes = manifestBytes(nextFileNumber: 5, logNumber: .max)
        case "lastSequence": bytes = manifestBytes(nextFileNumber: 5, lastSequence: .max - 1, logNumber: 0)
        default:
            bytes = manifestBytes(nextFileNumber: 5, logNumber: 0, runs: [[
                SegmentMetadata(number: 2, fileSize: 1 << 63, smallestKey: [1], largestKey: [2], records: 1)]])
            try dir.write("000002.seg", [0])
        }
        try dir.write("MANIFEST", bytes)
        expectCorrupted(openError(dir), fileSuffix: "MANIFEST")
        #expect(!(try StoreVerifier.verify(storeAt: dir.path)).isClean)
    }

    @Test("a log record whose sequence numbers reach past the limit: open refuses, naming the log and the record",
          arguments: [UInt64.max, UInt64.max - 1, UInt64(1) << 63, (UInt64(1) << 63) - 1])
    func extremeLogSequence(_ first: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("MANIFEST", manifestBytes(nextFileNumber: 2, logNumber: 1))
        // Two keys: the last sequence is first + 1.
        let log = v2Log(number: 1, [batchPayload(first: 1, keys: ["a"]), batchPayload(first: first, keys: ["b", "c"])])
        try dir.write("000001.log", log.bytes)
        expectCorrupted(openError(dir), fileSuffix: "000001.log", offset: log.offsets[1])
        let report = try StoreVerifier.verify(storeAt: dir.path)
        #expect(report.faults.contains { $0.offset == log.offsets[1] }, "\(report.faults)")
    }

    @Test("a large but possible sequence opens, takes writes and reopens")
    func largeSequenceOpens() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("MANIFEST", manifestBytes(nextFileNumber: 2, logNumber: 1))
        try dir.write("000001.log", v2Log(number: 1, [batchPayload(first: 1 << 62, keys: ["a"])]).bytes)
        let store = try Store.open(at: dir.url)
        #expect(store.statistics.lastSequence == 1 << 62)
        try store.put(Array("b".utf8), [2])
        try store.close()
        let again = try Store.open(at: dir.url)
        defer { try? again.close() }
        #expect(try again.get(Array("a".utf8)) == Array("v-a".utf8))
        #expect(try again.get(Array("b".utf8)) == [2])
    }

    // MARK: Garbage is scanned at memory speed

    /// 8 MB of non-zero garbage after a torn record: a version 1 log opens (the garbage is a torn
    /// tail), a version 2 log is refused (garbage is not what a crash leaves). Both finish quickly.
    @Test("8 MB of garbage after a torn tail: open and verify finish", arguments: [1, 2])
    func garbageTail(version: Int) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // A version 1 log is only ever the newest under a version 1 manifest (FORMAT.md §8).
        try dir.write("MANIFEST", manifestBytes(nextFileNumber: 2, logNumber: 1, version: UInt8(version)))
        let payloads = (0..<20).map { batchPayload(first: UInt64(1 + $0), keys: ["k\($0)"]) }
        var (bytes, offsets) = version == 1 ? v1Log(number: 1, payloads) : v2Log(number: 1, payloads)
        let torn = offsets[19]
        bytes.removeLast(4)
        var rng = SplitMix64(seed: 0x8_0000 + UInt64(version))
        var garbage = [UInt8](repeating: 0, count: 8 << 20)
        garbage.withUnsafeMutableBytes { g in
            for i in stride(from: 0, to: g.count, by: 8) { g.storeBytes(of: rng.next() | 0x0101_0101_0101_0101, toByteOffset: i, as: UInt64.self) }
        }
        try dir.write("000001.log", bytes + garbage)
        let clock = ContinuousClock()
        let start = clock.now
        if version == 1 {
            let store = try Store.open(at: dir.url)
            #expect(store.recovery.cutTails.first?.offset == torn)
            #expect(store.recovery.cutTails.first?.bytesCut == bytes.count - torn + garbage.count)
            #expect(try store.get(Array("k18".utf8)) == Array("v-k18".utf8))
            #expect(try store.get(Array("k19".utf8)) == nil)
            try store.close()
        } else {
            expectCorrupted(openError(dir), fileSuffix: "000001.log", offset: torn)
        }
        let opened = clock.now
        _ = try StoreVerifier.verify(storeAt: dir.path)
        print("log v\(version), 8 MB garbage tail: open \(opened - start), verify \(clock.now - opened)")
    }
}
