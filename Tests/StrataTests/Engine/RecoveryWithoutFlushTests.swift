import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Recovery that writes no segment (FORMAT.md 4.5, 9.4): open replays the logs into memtables and
// keeps them live until a flush in the background; reopening, crashing right after an open, many
// crash/reopen cycles without a flush, and power cuts during the deferred flush lose nothing.

private func names(_ dir: TemporaryDirectory) -> (logs: [UInt64], segments: [UInt64]) {
    var logs: [UInt64] = [], segments: [UInt64] = []
    for name in dir.list() {
        switch FileNames.parse(name) {
        case .log(let n): logs.append(n)
        case .segment(let n): segments.append(n)
        default: break
        }
    }
    return (logs.sorted(), segments.sorted())
}

/// Every key-value record of the store.
private func contents(_ store: Store) throws -> [String: String] {
    var out: [String: String] = [:]
    for (k, v) in try store.scan() {
        out[String(decoding: k, as: UTF8.self)] = String(decoding: v, as: UTF8.self)
    }
    return out
}

@Suite struct RecoveryWithoutFlushTests {
    @Test("reopening replays the log into the memtable: no new segment, every record kept, the log stays live")
    func reopenWritesNoSegment() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var expected: [String: String] = [:]
        let store = try Store.open(at: dir.url)
        for i in 0..<500 {
            try store.put(Array("k\(i)".utf8), Array("v\(i)".utf8))
            expected["k\(i)"] = "v\(i)"
        }
        try store.delete(Array("k7".utf8))
        expected["k7"] = nil
        try store.close()
        #expect(names(dir).segments.isEmpty)

        for round in 0..<3 {
            let reopened = try Store.open(at: dir.url)
            #expect(names(dir).segments.isEmpty, "round \(round): open wrote a segment")
            #expect(reopened.statistics.segments == 0)
            #expect(reopened.recovery.batchesReplayed >= 501)
            #expect(try contents(reopened) == expected, "round \(round)")
            let m = try #require(try Manifest.read(directory: dir.path, fileSystem: .real))
            #expect(m.logNumber == 1, "the manifest names the replayed log as the first to replay")
            #expect(names(dir).logs.contains(1))
            // The new writes go with the replayed ones, as if written in this run.
            try reopened.put(Array("r\(round)".utf8), [UInt8(round)])
            expected["r\(round)"] = String(decoding: [UInt8(round)], as: UTF8.self)
            try reopened.close()
        }
        // Every open appended to log 1 (clean, the newest, named by the manifest): no log was
        // added, and none was flushed.
        #expect(names(dir).logs == [1], "\(names(dir).logs)")

        // A flush writes every replayed record to a segment and retires all their logs.
        let last = try Store.open(at: dir.url)
        try last.compact()
        let m = try #require(try Manifest.read(directory: dir.path, fileSystem: .real))
        #expect(names(dir).logs == [m.logNumber], "only the active log is left: \(names(dir).logs)")
        #expect(!names(dir).segments.isEmpty)
        #expect(try contents(last) == expected)
        try last.close()
        let final = try Store.open(at: dir.url)
        defer { try? final.close() }
        #expect(final.recovery.batchesReplayed == 0)
        #expect(try contents(final) == expected)
    }

    @Test("an open that replays nothing deletes the empty logs earlier opens left")
    func emptyLogsDoNotAccumulate() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        try store.put(Array("a".utf8), [1])
        try store.close()
        for _ in 0..<10 { try Store.open(at: dir.url).close() }
        // Log 1, with the record: each open appended to it and made no log.
        #expect(names(dir).logs == [1], "\(names(dir).logs)")
        let again = try Store.open(at: dir.url)
        defer { try? again.close() }
        #expect(try again.get(Array("a".utf8)) == [1])
    }

    @Test("an open that finds 8 logs with records writes them to segments: the logs stay bounded")
    func manyLogsAreWrittenAtOpen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var expected: [String: String] = [:]
        // An encrypted store's log is never reused (FORMAT.md 4.5, step 9): each open adds one.
        let options = StoreOptions(encryptionKey: try EncryptionKey(bytes: (0..<32).map { UInt8($0) }))
        for round in 0..<20 {
            let store = try Store.open(at: dir.url, options: options)
            try store.put(Array("k\(round)".utf8), Array("v\(round)".utf8))
            expected["k\(round)"] = "v\(round)"
            try store.close()
            #expect(names(dir).logs.count <= EngineRecovery.maxReplayedLogs, "round \(round): \(names(dir).logs)")
            #expect(names(dir).segments.isEmpty == (round < EngineRecovery.maxReplayedLogs), "round \(round)")
        }
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        #expect(try contents(store) == expected)
    }

    @Test("an open appends to the newest log when it can: no new log, the manifest untouched, the records synced")
    func newestLogIsReused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var expected: [String: String] = [:]
        let store = try Store.open(at: dir.url)
        for i in 0..<50 {
            try store.put(Array("k\(i)".utf8), Array("v\(i)".utf8))
            expected["k\(i)"] = "v\(i)"
        }
        try store.close()
        let manifest = try dir.read(FileNames.manifest)
        for round in 0..<5 {
            let faults = IOFaults()
            let calls = Mutex<[String]>([])
            var options = EngineOptions()
            options.fileSystem = FileSystem(environment: IOEnvironment(faults: faults))
            let engine = try faults.with({ op, path in
                if [.write, .fsync, .rename, .unlink, .ftruncate, .link, .mkdir].contains(op) && !path.hasSuffix("/LOCK") {
                    calls.withLock { $0.append("\(op.rawValue) \(path)") }
                }
                return nil
            }) { try Engine(directory: dir.path, options: options) }
            // The replayed log is synced, and that is all the open changes.
            #expect(calls.withLock { $0 } == ["fsync \(dir.path)/000001.log"], "round \(round)")
            var batch = WriteBatch()
            batch.put(Array("r\(round)".utf8), [UInt8(round)])
            _ = try engine.write(batch)
            expected["r\(round)"] = String(decoding: [UInt8(round)], as: UTF8.self)
            try engine.close()
            #expect(names(dir).logs == [1])
            #expect(names(dir).segments.isEmpty)
            #expect(try dir.read(FileNames.manifest) == manifest, "round \(round): the manifest was replaced")
        }
        let reopened = try Store.open(at: dir.url)
        defer { try? reopened.close() }
        #expect(try contents(reopened) == expected)
        #expect(reopened.recovery.batchesReplayed >= 55)
    }

    @Test("a log of 1 MiB or more is mapped at open: a failed mmap refuses the open with the log's path, changing nothing")
    func failedLogMappingRefusesTheOpen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let engine = try Engine(directory: dir.path, options: EngineOptions())
            var batch = WriteBatch()
            for i in 0..<2_000 { batch.put(Array("k\(i)".utf8), [UInt8](repeating: UInt8(i & 0xFF), count: 1_000)) }
            _ = try engine.write(batch)
            // Left in its log, as a kill would leave it.
            try engine.close(flushMinimum: .max)
        }
        let log = dir.path + "/" + FileNames.log(1)
        #expect(try dir.read(FileNames.log(1)).count >= 1 << 20)
        let before = try dir.list().sorted().map { ($0, try dir.read($0)) }.filter { $0.0 != FileNames.lock }
        let faults = IOFaults({ op, path in op == .mmap && path == log ? EIO : nil })
        var options = EngineOptions()
        options.fileSystem = FileSystem(environment: IOEnvironment(faults: faults))
        #expect(throws: StrataError.io(path: log, errno: EIO, operation: "mmap")) {
            _ = try Engine(directory: dir.path, options: options)
        }
        let after = try dir.list().sorted().map { ($0, try dir.read($0)) }.filter { $0.0 != FileNames.lock }
        #expect(after.map(\.0) == before.map(\.0))
        #expect(after.map(\.1) == before.map(\.1))
        // Without the fault, every record is there.
        let engine = try Engine(directory: dir.path, options: EngineOptions())
        defer { _ = try? engine.close() }
        #expect(try engine.get(Keyspace.keyValue.prefix + Array("k1999".utf8)) == [UInt8](repeating: UInt8(1999 & 0xFF), count: 1_000))
    }

    @Test("a torn tail is reported by one open: its log's memtable is flushed right after")
    func tornTailIsReportedOnce() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        for i in 0..<10 { try store.put(Array("k\(i)".utf8), [UInt8(i)]) }
        try store.close()
        var bytes = try dir.read("000001.log")
        bytes.removeLast(2)
        try dir.write("000001.log", bytes)
        let first = try Store.open(at: dir.url)
        #expect(first.recovery.cutTails.count == 1)
        #expect(try first.get(Array("k8".utf8)) == [8])
        #expect(try first.get(Array("k9".utf8)) == nil)
        try first.close()
        #expect(!names(dir).logs.contains(1), "the torn log was flushed and deleted")
        let second = try Store.open(at: dir.url)
        defer { try? second.close() }
        #expect(second.recovery.isClean)
        #expect(try second.get(Array("k8".utf8)) == [8])
    }

    // MARK: kill -9

    /// Runs `strata-crash-helper` with `arguments`, waits for `line`, and kills it.
    private func runAndKill(_ arguments: [String], until line: String) throws {
        let child = try CrashHelperProcess(arguments)
        let ready = child.waitFor(timeout: 60) { $0.contains(line) }
        let status = child.killAndWait()
        try #require(ready, "the helper never printed \(line): \(child.errorText)")
        #expect(CrashHelperProcess.killed(status, by: SIGKILL))
    }

    @Test("kill -9 right after an open that wrote no segment, then reopen: nothing lost")
    func killRightAfterOpen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var expected: [String: String] = [:]
        let store = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
        for i in 0..<300 {
            try store.put(Array("k\(i)".utf8), Array("v\(i)".utf8))
            expected["k\(i)"] = "v\(i)"
        }
        try store.close()
        for _ in 0..<3 {
            try runAndKill(["hold", dir.path], until: "OPEN")
            #expect(names(dir).segments.isEmpty)
        }
        let reopened = try Store.open(at: dir.url)
        defer { try? reopened.close() }
        #expect(try contents(reopened) == expected)
        #expect(try StoreVerifier.verify(storeAt: dir.path).faults.isEmpty)
    }

    @Test("many kill -9 / reopen cycles with writes and no flush in between: every acknowledged write survives")
    func manyCrashCyclesWithoutAFlush() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var expected: [String: String] = [:]
        for cycle in 0..<14 {
            try runAndKill(["put", dir.path, "c\(cycle)", "40"], until: "DONE")
            for i in 0..<40 { expected["c\(cycle)/\(i)"] = "v\(i)" }
            let (logs, segments) = names(dir)
            // Each open appends to the log the kill left (clean: every write returned): one log,
            // and no segment (nothing flushes here).
            #expect(logs == [1], "cycle \(cycle): \(logs)")
            #expect(segments.isEmpty, "cycle \(cycle): \(segments)")
        }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(try contents(store) == expected)
        #expect(try StoreVerifier.verify(storeAt: dir.path).faults.isEmpty)
    }

    // MARK: Power loss

    @Test("power cuts at every system call of an open without a flush and of the deferred flush lose nothing")
    func powerCutsDuringTheDeferredFlush() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.path + "/store"
        var options = EngineOptions()
        options.durability = .buffered
        options.fileSystem = PowerLoss.fileSystem
        var expected: [[UInt8]: [UInt8]] = [:]
        do {
            let engine = try Engine(directory: directory, options: options)
            for i in 0..<200 {
                var batch = WriteBatch()
                let key = Keyspace.keyValue.prefix + Array("k\(i)".utf8)
                batch.putRaw(key, Array("v\(i)".utf8))
                if i % 10 == 9 { batch.deleteRaw(Keyspace.keyValue.prefix + Array("k\(i - 5)".utf8)) }
                try engine.write(batch, durability: .buffered)
                expected[key] = Array("v\(i)".utf8)
                if i % 10 == 9 { expected[Keyspace.keyValue.prefix + Array("k\(i - 5)".utf8)] = nil }
            }
            try engine.close()  // syncs the log; no flush
        }
        // Every system call of the open and of the flush it defers (here asked for by compactAll)
        // is followed by a cut.
        let simulator = try PowerLossSimulator(directory: directory, cloneRoot: temporary.path + "/cut", seed: 7,
                                               cutChance: 1, maxCuts: 200, progress: .init(start: [0]))
        do {
            PowerLoss.attach(simulator)
            defer { PowerLoss.detach(simulator) }
            let engine = try Engine(directory: directory, options: options)
            try engine.compactAll()
            try engine.close()
        }
        let cuts = simulator.allCuts
        #expect(cuts.contains { $0.after.contains(".seg") }, "no cut while the flush wrote its segment")
        #expect(cuts.contains { $0.after.contains("MANIFEST") })
        #expect(cuts.contains { $0.after.hasPrefix("unlink") && $0.after.hasSuffix(".log") })
        for cut in cuts {
            let label = "cut \(cut.number) after \(cut.after)"
            _ = PowerLossSimulator.verifyClone(cut.directory, label: label)
            do {
                let engine = try Engine(directory: cut.directory, options: options)
                defer { try? engine.close() }
                var found: [[UInt8]: [UInt8]] = [:]
                let cursor = try engine.snapshot().cursor()
                while try cursor.next() { found[cursor.key] = Array(cursor.value) }
                #expect(found == expected, "\(label): \(found.count) records, \(expected.count) expected")
            } catch {
                Issue.record("\(label): the clone does not open: \(error)")
            }
        }
    }
}
