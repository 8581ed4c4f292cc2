import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A clean close writes the memtables to segments (Engine+Close.swift) unless they hold less than
// `Engine.closeFlushMinimumBytes`, so that the next open has nothing to replay; a flush that fails
// at close, and a power cut at any system call of it, lose nothing acknowledged: the log, synced
// first, stays and is replayed.

private func logNumbers(_ dir: TemporaryDirectory) -> [UInt64] {
    dir.list().compactMap { if case .log(let n) = FileNames.parse($0) { n } else { nil } }.sorted()
}

private func kvKey(_ i: Int) -> [UInt8] { Keyspace.keyValue.prefix + Array("key/\(i)".utf8) }
private func kvValue(_ i: Int) -> [UInt8] { Array("value \(i) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 60) }

/// Small memtables, so that a few hundred writes leave sealed memtables waiting for a flush.
private func smallOptions(faults: IOFaults? = nil) -> EngineOptions {
    var o = EngineOptions()
    o.durability = .buffered
    o.memtableSize = 8 << 10
    o.targetSegmentSize = 4 << 10
    o.segment.blockSize = 1 << 10
    o.cacheSize = 0
    // Seen by the power-loss simulator of the test that attaches one; faults where a test sets them.
    o.fileSystem = FileSystem(environment: IOEnvironment(faults: faults, observer: PowerLoss.fileSystem.environment.observer))
    return o
}

/// Writes 300 records (and deletes every tenth one, a range too) into `engine`; returns what the
/// store must hold.
@discardableResult
private func fill(_ engine: Engine) throws -> [[UInt8]: [UInt8]] {
    var expected: [[UInt8]: [UInt8]] = [:]
    for i in 0..<300 {
        var b = WriteBatch()
        b.putRaw(kvKey(i), kvValue(i))
        expected[kvKey(i)] = kvValue(i)
        if i % 10 == 9 {
            b.deleteRaw(kvKey(i - 3))
            expected[kvKey(i - 3)] = nil
        }
        try engine.write(b, durability: .buffered)
    }
    var b = WriteBatch()
    b.deleteRangeRaw(kvKey(20), kvKey(25))
    try engine.write(b, durability: .buffered)
    for k in expected.keys where !k.lexicographicallyPrecedes(kvKey(20)) && k.lexicographicallyPrecedes(kvKey(25)) {
        expected[k] = nil
    }
    return expected
}

private func contents(_ engine: Engine) throws -> [[UInt8]: [UInt8]] {
    var found: [[UInt8]: [UInt8]] = [:]
    let cursor = try engine.snapshot().cursor()
    while try cursor.next() { found[cursor.key] = Array(cursor.value) }
    return found
}

@Suite("Flush at close")
struct CloseFlushTests {
    @Test("a close with a megabyte or more in memtables flushes them; with less, the log stays and is replayed")
    func closeFlushesAboveTheMinimum() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = EngineOptions()
        options.durability = .buffered
        let small = try Engine(directory: dir.path, options: options)
        let expected = try fill(small)
        try small.close()
        let reopened = try Engine(directory: dir.path, options: options)
        #expect(reopened.recovery.batchesReplayed > 0, "a small memtable stays in its log")
        #expect(try contents(reopened) == expected)
        // Over a megabyte of records (with the replayed ones): the close writes them all.
        var more = expected
        for start in stride(from: 1000, to: 13_000, by: 500) {
            var b = WriteBatch()
            for i in start..<(start + 500) {
                b.putRaw(kvKey(i), kvValue(i))
                more[kvKey(i)] = kvValue(i)
            }
            try reopened.write(b, durability: .buffered)
        }
        #expect(reopened.statistics.memtableBytes >= Engine.closeFlushMinimumBytes)
        try reopened.close()
        let again = try Engine(directory: dir.path, options: options)
        defer { _ = try? again.close() }
        #expect(again.recovery.batchesReplayed == 0)
        #expect(try contents(again) == more)
    }

    @Test("after a clean close the next open replays no record, and finds every one in segments")
    func cleanCloseLeavesNothingToReplay() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let engine = try Engine(directory: dir.path, options: smallOptions())
        let expected = try fill(engine)
        try engine.close(flushMinimum: 0)
        // One log is left: the empty one the close rotated to, which the manifest names.
        let m = try #require(try Manifest.read(directory: dir.path, fileSystem: .real))
        #expect(logNumbers(dir) == [m.logNumber], "\(dir.list())")

        for round in 0..<3 {
            let again = try Engine(directory: dir.path, options: smallOptions())
            #expect(again.recovery.batchesReplayed == 0, "round \(round)")
            #expect(again.recovery.isClean)
            #expect(try contents(again) == expected, "round \(round)")
            try again.close(flushMinimum: 0)
            #expect(logNumbers(dir).count == 1, "round \(round): \(dir.list())")
        }
    }

    @Test("a close after a crash recovery flushes the replayed records and retires their logs")
    func closeFlushesReplayedRecords() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let first = try Engine(directory: dir.path, options: EngineOptions())
        let expected = try fill(first)
        try first.close(flushMinimum: .max)
        let replayed = logNumbers(dir)
        let second = try Engine(directory: dir.path, options: EngineOptions())
        #expect(second.recovery.batchesReplayed > 0)
        try second.close(flushMinimum: 0)
        #expect(Set(logNumbers(dir)).isDisjoint(with: replayed), "\(dir.list())")
        let third = try Engine(directory: dir.path, options: EngineOptions())
        defer { _ = try? third.close() }
        #expect(third.recovery.batchesReplayed == 0)
        #expect(try contents(third) == expected)
    }

    @Test("a failed write, fsync, rename, create or unlink during the flush at close loses nothing",
          arguments: ["write segment", "fsync segment", "rename segment", "fsync directory", "write manifest",
                      "fsync manifest", "rename manifest", "write log", "fsync log", "unlink log", "open log"])
    func failedFlushAtCloseLosesNothing(call: String) throws {
        for ordinal in 0..<3 {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let faults = IOFaults()
            let engine = try Engine(directory: dir.path, options: smallOptions(faults: faults))
            let expected = try fill(engine)
            let prefix = dir.path + "/"
            let seen = Mutex<[String: Int]>([:])
            let injected = Mutex(false)
            // Only the flush's calls: the final sync of the log (the first log fsync) is spared,
            // since a failure there is close's own error (EngineFaultTests).
            let spared = Mutex(call == "fsync log" ? 1 : 0)
            var thrown: Error?
            faults.with({ op, path in
                let kind: String
                if path == dir.path { kind = "directory" }
                else if path.hasPrefix(prefix) {
                    let name = path.dropFirst(prefix.count)
                    kind = name.hasSuffix(".log") ? "log" : name.contains(".seg") ? "segment"
                        : name.hasPrefix("MANIFEST") ? "manifest" : "other"
                } else { return nil }
                let c = "\(op.rawValue) \(kind)"
                guard c == call else { return nil }
                if spared.withLock({ s in defer { s = max(s - 1, 0) }; return s > 0 }) { return nil }
                let n: Int = seen.withLock { s in defer { s[c, default: 0] += 1 }; return s[c, default: 0] }
                guard n == ordinal else { return nil }
                injected.withLock { $0 = true }
                return ENOSPC
            }) {
                do { try engine.close(flushMinimum: 0) } catch { thrown = error }
            }
            guard injected.withLock({ $0 }) else {
                #expect(ordinal > 0, "\(call): the close made no such call")
                continue
            }
            // Close throws only when the engine failed: a failed sync (of the new log or the
            // directory), or a manifest replacement of unknown outcome.
            if let thrown, !["rename manifest", "fsync directory", "fsync log"].contains(call) {
                Issue.record("\(call) #\(ordinal): close threw \(thrown)")
            }
            let again = try Engine(directory: dir.path, options: smallOptions())
            defer { _ = try? again.close() }
            #expect(try contents(again) == expected, "\(call) #\(ordinal)")
        }
    }

    @Test("power cuts at every system call of the flush at close lose nothing")
    func powerCutsDuringTheFlushAtClose() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.path + "/store"
        let engine = try Engine(directory: directory, options: smallOptions())
        let expected = try fill(engine)
        try engine.sync()
        // The simulator takes the directory as durable when it attaches: no flush or compaction
        // of the fill may still be running then, or its later calls would cut a half-made state.
        engine.waitForBackgroundWork()
        let simulator = try PowerLossSimulator(directory: directory, cloneRoot: temporary.path + "/cut", seed: 11,
                                               cutChance: 1, maxCuts: 300, progress: .init(start: [0]))
        do {
            PowerLoss.attach(simulator)
            defer { PowerLoss.detach(simulator) }
            try engine.close(flushMinimum: 0)
        }
        let cuts = simulator.allCuts
        #expect(cuts.contains { $0.after.contains(".seg") }, "no cut while the close wrote a segment")
        #expect(cuts.contains { $0.after.contains("MANIFEST") })
        for cut in cuts {
            let label = "cut \(cut.number) after \(cut.after)"
            _ = PowerLossSimulator.verifyClone(cut.directory, label: label)
            do {
                let reopened = try Engine(directory: cut.directory, options: smallOptions())
                defer { try? reopened.close() }
                #expect(try contents(reopened) == expected, "\(label)")
            } catch {
                Issue.record("\(label): the clone does not open: \(error)")
            }
        }
    }
}
