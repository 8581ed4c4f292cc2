import Foundation
import Logging
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// What the engine decides on its own goes to the logger of StoreOptions (issue 11): a torn tail
// cut at open, flushes and compactions with their sizes, failed background work, write stalls,
// and the failed state; and nothing at all without a logger.

/// Small memtables and segments, so that a few hundred writes rotate, flush and compact often.
private func smallOptions(faults: IOFaults? = nil, logger: Logger?) -> EngineOptions {
    var o = EngineOptions()
    o.fileSystem = FileSystem(environment: IOEnvironment(faults: faults))
    o.durability = .synchronous
    o.memtableSize = 4 << 10
    o.targetSegmentSize = 3 << 10
    o.segment.blockSize = 1 << 10
    o.cacheSize = 0
    o.compactionTrigger = 3
    o.logger = logger
    return o
}

private func key(_ i: Int) -> [UInt8] { Array("key/\(String(format: "%05d", i))".utf8) }
private func value(_ i: Int, _ round: Int = 0) -> [UInt8] {
    Array("value \(i) \(round) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 120)
}

private func put(_ engine: Engine, _ i: Int, round: Int = 0, durability: Durability? = .buffered) throws {
    var b = WriteBatch()
    b.put(key(i), value(i, round))
    try engine.write(b, durability: durability)
}

private func get(_ engine: Engine, _ i: Int) throws -> [UInt8]? {
    try engine.get(Keyspace.keyValue.prefix + key(i))
}

/// A metadata value as a number (the engine logs numbers as decimal strings).
private func number(_ entry: CapturingLogHandler.Entry, _ key: String) -> Int64? {
    entry.metadata[key].flatMap { Int64($0) }
}

@Suite struct DiagnosticsTests {
    @Test("a torn tail cut at open is a warning naming the log file, the offset and the bytes cut")
    func tornTailIsAWarning() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        for i in 0..<10 { try store.put(Array("k\(i)".utf8), Array("v\(i)".utf8)) }
        try store.close()
        let logs = dir.list().filter { if case .log = FileNames.parse($0) { return true } else { return false } }
        let name = try #require(logs.last)
        let last = try #require(try LogReader(path: dir.file(name), fileSystem: .real).records.last)
        var bytes = try dir.read(name)
        bytes.removeLast(3)
        try dir.write(name, bytes)

        let (logger, record) = CapturingLogHandler.logger()
        var options = StoreOptions()
        options.logger = logger
        let reopened = try Store.open(at: dir.url, options: options)
        let cut = try #require(reopened.recovery.cutTails.first)
        try reopened.close()  // every message is out once close returns

        let warnings = record.at(.warning)
        try #require(warnings.count == 1, "\(record.all)")
        let w = warnings[0]
        #expect(w.message.contains("torn tail"))
        #expect(w.metadata["file"] == cut.file)
        #expect(w.metadata["file"]?.hasSuffix("/" + name) == true)
        #expect(number(w, "offset") == Int64(last.offset))
        #expect(number(w, "bytes") == Int64(bytes.count - last.offset))
        #expect(w.metadata["reason"] == cut.reason)
        #expect(w.metadata["strata.store"] == reopened.directory.path)
        #expect(record.at(.error).isEmpty)
    }

    @Test("each flush and compaction is logged with what it read, wrote and reclaimed, as statistics count them")
    func flushesAndCompactionsAreLogged() throws {
        let d = try TemporaryDirectory()
        defer { d.remove() }
        let (logger, record) = CapturingLogHandler.logger()
        let engine = try Engine(directory: d.path, options: smallOptions(logger: logger))
        // Every key three times: compaction drops the older versions.
        for round in 0..<3 { for i in 0..<100 { try put(engine, i, round: round) } }
        try engine.compactAll()
        engine.waitForBackgroundWork()
        let stats = engine.statistics
        try engine.close()

        let flushes = record.containing("Flushed a memtable")
        #expect(flushes.allSatisfy { $0.level == .info })
        #expect(UInt64(flushes.count) == stats.flushes)
        #expect(flushes.compactMap { number($0, "output.bytes") }.reduce(0, +) == Int64(stats.flushBytesWritten))
        #expect(flushes.allSatisfy { (number($0, "memtable.bytes") ?? 0) > 0 && $0.metadata["memtable.log"]?.hasSuffix(".log") == true })

        let compactions = record.containing("Compacted sorted runs")
        #expect(compactions.allSatisfy { $0.level == .info })
        try #require(UInt64(compactions.count) == stats.compactions && !compactions.isEmpty, "\(record.all)")
        #expect(compactions.compactMap { number($0, "input.bytes") }.reduce(0, +) == Int64(stats.compactionBytesRead))
        #expect(compactions.compactMap { number($0, "output.bytes") }.reduce(0, +) == Int64(stats.compactionBytesWritten))
        for c in compactions {
            let reclaimed = try #require(number(c, "reclaimed.bytes"), "\(c)")
            #expect(reclaimed == number(c, "input.bytes")! - number(c, "output.bytes")!)
            #expect((number(c, "input.runs") ?? 0) >= 1 && (number(c, "input.segments") ?? 0) >= 1, "\(c)")
        }
        // The full compaction of compactAll comes last: it merged every run into one and dropped
        // the two older versions of each key.
        let full = try #require(compactions.last)
        #expect(full.metadata["bottommost"] == "true")
        #expect(number(full, "runs") == 1)
        #expect((number(full, "reclaimed.bytes") ?? 0) > 0, "\(full)")
        #expect(number(full, "output.records") == 100, "\(full)")
        #expect((number(full, "input.records") ?? 0) > 100, "\(full)")
        // The debug lines name the files.
        let started = record.containing("Compaction started")
        #expect(started.count == compactions.count)
        #expect(started.allSatisfy { $0.level == .debug && $0.metadata["input.files"]?.contains(".seg") == true })
        #expect(record.at(.warning).isEmpty && record.at(.error).isEmpty, "\(record.all)")
        #expect(record.all.allSatisfy { $0.metadata["strata.store"] == d.path })
    }

    @Test("a failed background flush is a warning naming the error; the engine goes on")
    func failedFlushIsAWarning() throws {
        let faults = IOFaults()
        let d = try TemporaryDirectory()
        defer { d.remove() }
        let (logger, record) = CapturingLogHandler.logger()
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults, logger: logger))
        defer { _ = try? engine.close() }
        let prefix = d.path + "/"
        var failedWrite: StrataError?
        faults.with({ op, path in
            op == .rename && path.hasPrefix(prefix) && path.hasSuffix(".seg") ? EIO : nil
        }) {
            for i in 0..<400 {
                do { try put(engine, i) } catch {
                    failedWrite = error as? StrataError
                    break
                }
            }
            engine.waitForBackgroundWork()
        }
        let stats = engine.statistics
        engine.diagnostics.drain()
        #expect(failedWrite != nil, "writes never failed while no memtable could be flushed")
        let flushFailures = record.at(.warning).filter { $0.metadata["work"] == "flush" }
        try #require(!flushFailures.isEmpty, "\(record.all)")
        for w in flushFailures {
            #expect(w.metadata["error"]?.contains("rename failed for \(prefix)") == true, "\(w)")
            #expect(w.metadata["error"]?.contains(".seg") == true, "\(w)")
        }
        #expect(UInt64(record.at(.warning).count) == stats.backgroundFailures, "\(record.all)")
        #expect(record.at(.error).isEmpty, "a flush that failed before publishing does not fail the engine")
        #expect(stats.writeError == nil)
        // Writers may have waited for the retried flush before one was told of its failure.
        #expect(record.containing("Write stall over").count == Int(stats.writeStalls))
    }

    @Test("the failed state is one error naming the failed call; later failed writes add none")
    func failedStateIsOneError() throws {
        let faults = IOFaults()
        let d = try TemporaryDirectory()
        defer { d.remove() }
        let (logger, record) = CapturingLogHandler.logger()
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults, logger: logger))
        try put(engine, 0, durability: .synchronous)
        let prefix = d.path + "/"
        faults.with({ op, path in op == .fsync && path.hasPrefix(prefix) && path.hasSuffix(".log") ? EIO : nil }) {
            _ = #expect(throws: StrataError.self) { try put(engine, 1, durability: .synchronous) }
        }
        #expect(throws: StrataError.self) { try put(engine, 2, durability: .synchronous) }
        let failure = try #require(engine.failure)
        #expect(throws: StrataError.self) { try engine.close() }

        let errors = record.at(.error)
        try #require(errors.count == 1, "\(record.all)")
        #expect(errors[0].metadata["error"] == failure.description)
        #expect(failure.description.contains("fsync failed for \(prefix)"))
    }

    @Test("a write stall is counted, timed, and logged once over")
    func writeStallIsCountedAndLogged() throws {
        let faults = IOFaults()
        let d = try TemporaryDirectory()
        defer { d.remove() }
        let (logger, record) = CapturingLogHandler.logger()
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults, logger: logger))
        let prefix = d.path + "/"
        // The first flush is held at its segment's rename until the writer has stalled: 200
        // writes fill far more memtables than may wait for a flush, so the writer must stall.
        let release = Signal()
        let finished = Signal()
        let writeFailure = Mutex<String?>(nil)
        var sawStall = false
        faults.with({ op, path in
            if op == .rename && path.hasPrefix(prefix) && path.hasSuffix(".seg") { _ = release.wait(seconds: 60) }
            return nil
        }) {
            let writer = Thread {
                do { for i in 0..<200 { try put(engine, i) } } catch { writeFailure.withLock { $0 = "\(error)" } }
                finished.fire()
            }
            writer.start()
            for _ in 0..<6000 where engine.statistics.writeStalls == 0 { usleep(5_000) }
            sawStall = engine.statistics.writeStalls > 0
            release.fire()
            #expect(finished.wait(seconds: 60), "the writes never finished")
        }
        #expect(sawStall, "the writer never stalled behind the held flush")
        #expect(writeFailure.withLock { $0 } == nil)
        engine.waitForBackgroundWork()
        let stats = engine.statistics
        try engine.close()
        #expect(stats.writeStalls >= 1)
        #expect(stats.writeStallSeconds > 0)
        let over = record.containing("Write stall over")
        #expect(over.count == Int(stats.writeStalls), "\(record.all)")
        #expect(over.allSatisfy { $0.level == .info && $0.metadata["stall.ms"] != nil })
        #expect(over.contains { $0.metadata["stall.reason"] == WriteStall.Reason.memtables.rawValue }, "\(over)")
        #expect(record.containing("Writes stalled").count == over.count)
        let again = try Engine(directory: d.path, options: smallOptions(faults: faults, logger: nil))
        defer { _ = try? again.close() }
        for i in 0..<200 { #expect(try get(again, i) == value(i)) }
    }

    @Test("without a logger nothing is evaluated and the engine works; a logger's level filters")
    func silentWithoutALogger() throws {
        let evaluated = Mutex(0)
        func note() -> Logger.Message { evaluated.withLock { $0 += 1 }; return "x" }
        EngineLog.silent(.critical, note(), ["k": "\(note())"])
        #expect(evaluated.withLock { $0 } == 0)
        for level in Logger.Level.allCases { #expect(!EngineLog.silent.isEnabled(level)) }

        let d = try TemporaryDirectory()
        defer { d.remove() }
        let engine = try Engine(directory: d.path, options: smallOptions(logger: nil))
        for round in 0..<2 { for i in 0..<100 { try put(engine, i, round: round) } }
        try engine.compactAll()
        #expect(engine.statistics.compactions >= 1)
        try engine.close()

        // A logger at .notice hears nothing of a healthy engine's flushes and compactions.
        let (logger, record) = CapturingLogHandler.logger(level: .notice)
        let noisy = try Engine(directory: d.path, options: smallOptions(logger: logger))
        for i in 0..<100 { try put(noisy, i, round: 3) }
        try noisy.compactAll()
        try noisy.close()
        #expect(record.all.isEmpty, "\(record.all)")
    }
}
