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

// Crash tests: a child process (`strata-crash-helper write`) writes acknowledged batches with
// synchronous (or buffered) durability from one or more threads and is killed with SIGKILL at a
// random moment; the test then recovers the store and checks the guarantees of DESIGN.md: every
// acknowledged batch is there whole (unless an acknowledged later batch deleted it), no batch is
// there in part, a batch in flight is all or nothing, and deleted batches stay deleted.

/// The keys and values `strata-crash-helper write` writes (the same functions as in
/// Sources/strata-crash-helper/main.swift; keep them equal).
private enum CrashEncoding {
    static func padded(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
    static func batchPrefix(_ i: Int) -> [UInt8] { Array("batch/\(padded(i, 8))/".utf8) }
    static func batchKey(_ i: Int, _ j: Int) -> [UInt8] { batchPrefix(i) + Array(padded(j, 3).utf8) }
    static func batchValue(_ i: Int, _ j: Int, _ n: Int) -> [UInt8] {
        var v = Array("\(i):\(j):\(n):".utf8)
        let fillerLength = 16 + (i &* 7 &+ j &* 13) % 113
        for k in 0..<fillerLength { v.append(UInt8(97 + (i &+ j &+ k) % 26)) }
        return v
    }
    /// The key holding the id of thread `t`'s last committed batch.
    static func lastKey(thread t: Int, of threads: Int) -> [UInt8] { Array((threads == 1 ? "last" : "last/\(t)").utf8) }
    /// Every batch key is in `[scanStart, scanEnd)`.
    static let scanStart = Array("batch/".utf8)
    static let scanEnd = Array("batch0".utf8)

    /// Parses `batch/<i:08>/<j:03>`.
    static func parseKey(_ key: [UInt8]) -> (i: Int, j: Int)? {
        let s = String(decoding: key, as: UTF8.self)
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "batch", parts[1].count == 8, parts[2].count == 3,
              let i = Int(parts[1]), let j = Int(parts[2]) else { return nil }
        return (i, j)
    }

    /// The n a value claims (its third field).
    static func parseCount(_ value: [UInt8]) -> Int? {
        let fields = String(decoding: value, as: UTF8.self).split(separator: ":", maxSplits: 3)
        guard fields.count == 4 else { return nil }
        return Int(fields[2])
    }
}

/// One `BEGIN`/`ACK` line of the helper.
private struct BatchLine: Equatable {
    enum Deletion: Equatable { case none, batch(Int), range(Int, Int) }
    var acknowledged: Bool
    var id: Int
    var count: Int
    var deletion: Deletion

    static func parse(_ line: String) -> BatchLine? {
        let f = line.split(separator: " ").map(String.init)
        guard f.count >= 3, f[0] == "BEGIN" || f[0] == "ACK", let id = Int(f[1]), let n = Int(f[2]), (1...50).contains(n)
        else { return nil }
        var d = Deletion.none
        switch f.count {
        case 3: break
        case 5 where f[3] == "DEL":
            guard let k = Int(f[4]) else { return nil }
            d = .batch(k)
        case 6 where f[3] == "DELRANGE":
            guard let a = Int(f[4]), let b = Int(f[5]), a < b else { return nil }
            d = .range(a, b)
        default: return nil
        }
        return BatchLine(acknowledged: f[0] == "ACK", id: id, count: n, deletion: d)
    }
}

/// What the test knows a store holds: each batch id the helper committed, with its size or
/// deleted, and each writer thread's last committed batch.
private struct CrashModel {
    enum State: Equatable { case live(Int), deleted }
    let threads: Int
    var batches: [Int: State] = [:]
    /// Thread → the id of its last committed batch.
    var last: [Int: Int] = [:]

    init(threads: Int) { self.threads = threads }

    /// The id thread `t` writes next.
    func next(thread t: Int) -> Int { last[t].map { $0 + threads } ?? t }

    /// Applies a committed batch (its deletion first, as within the batch the deletion targets
    /// only earlier ids).
    mutating func apply(_ b: BatchLine) {
        switch b.deletion {
        case .none: break
        case .batch(let k):
            #expect(batches[k].map { if case .live = $0 { return true } else { return false } } == true,
                    "batch \(b.id) deletes batch \(k), which the model does not hold live")
            batches[k] = .deleted
        case .range(let lo, let hi):
            for (id, state) in batches where id >= lo && id < hi {
                if case .live = state { batches[id] = .deleted }
            }
        }
        #expect(batches[b.id] == nil, "batch id \(b.id) committed twice")
        batches[b.id] = .live(b.count)
        last[b.id % threads] = b.id
    }
}

/// The batches found in a store (id → value by j) and the writer threads' last keys.
private struct FoundBatches {
    var keys: [Int: [Int: [UInt8]]] = [:]
    /// Thread → the id in its last key.
    var last: [Int: Int] = [:]
    var problems: [String] = []

    init(store: Store, threads: Int) throws {
        for (key, value) in try store.scan(from: CrashEncoding.scanStart, to: CrashEncoding.scanEnd) {
            guard let (i, j) = CrashEncoding.parseKey(key) else {
                problems.append("unexpected key \(String(decoding: key, as: UTF8.self))")
                continue
            }
            keys[i, default: [:]][j] = value
        }
        for t in 0..<threads {
            guard let v = try store.get(CrashEncoding.lastKey(thread: t, of: threads)) else { continue }
            if let id = Int(String(decoding: v, as: UTF8.self)), id % threads == t {
                last[t] = id
            } else {
                problems.append("malformed value of thread \(t)'s last key: \(v)")
            }
        }
        // Every batch found must be whole and hold exactly the values the helper wrote.
        for (i, values) in keys {
            guard let anyValue = values.values.first, let n = CrashEncoding.parseCount(anyValue) else {
                problems.append("batch \(i): malformed value")
                continue
            }
            if values.count != n || Set(values.keys) != Set(0..<n) {
                problems.append("batch \(i) is partly present: \(values.count) of \(n) keys, j = \(values.keys.sorted())")
                continue
            }
            for (j, v) in values where v != CrashEncoding.batchValue(i, j, n) {
                problems.append("batch \(i) key \(j): wrong value \(String(decoding: v, as: UTF8.self))")
            }
        }
    }

    func count(of id: Int) -> Int? { keys[id].map(\.count) }
}

@Suite struct CrashTests {
    /// How one group of trials runs the helper. Groups run in parallel.
    struct Group: Sendable, CustomTestStringConvertible {
        /// A fresh directory for every trial, or one directory reused across the group's trials,
        /// so that recovery meets segments, logs and the leftovers of several killed runs.
        var fresh: Bool
        /// Writer threads in the helper (several exercise group commit).
        var threads: Int
        /// `.buffered` durability: a killed process still loses nothing acknowledged.
        var buffered: Bool
        var index: Int
        /// Sealed with the test key (FORMAT.md 8.1, 11.4).
        var encrypted = false

        var testDescription: String {
            "group \(index): \(fresh ? "fresh" : "reused") directory, \(threads) thread(s), \(buffered ? "buffered" : "synchronous")"
                + (encrypted ? ", encrypted" : "")
        }

        var key: EncryptionKey? { encrypted ? EncryptionFixture.testKey : nil }
    }

    static let groups: [Group] = [
        Group(fresh: true, threads: 1, buffered: false, index: 0),
        Group(fresh: true, threads: 1, buffered: false, index: 1),
        Group(fresh: false, threads: 1, buffered: false, index: 2),
        Group(fresh: false, threads: 1, buffered: false, index: 3),
        Group(fresh: false, threads: 3, buffered: false, index: 4),
        Group(fresh: false, threads: 2, buffered: true, index: 5),
        Group(fresh: false, threads: 1, buffered: false, index: 6, encrypted: true),
    ]

    /// 30 trials by default; `STRATA_CRASH_TRIALS` raises the count for soak runs.
    static var trialsPerGroup: Int {
        let total = ProcessInfo.processInfo.environment["STRATA_CRASH_TRIALS"].flatMap { Int($0) } ?? 30
        return max(1, (max(total, 1) + groups.count - 1) / groups.count)
    }

    private static func temporaryDirectory(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("strata-crash-\(name)-\(getpid())-\(UUID().uuidString)")
    }

    @Test("kill -9 during writes: acknowledged batches survive whole, none is torn, deletions hold",
          arguments: CrashTests.groups)
    func killDuringWrites(group: Group) throws {
        var random = SplitMix64(state: 0x5EED_C0DE ^ UInt64(group.index) &* 0x1_0000_0001)
        let base = Self.temporaryDirectory("g\(group.index)")
        defer { try? FileManager.default.removeItem(at: base) }
        var model = CrashModel(threads: group.threads)
        var directory = base.appendingPathComponent("store")
        var lateTrials = 0, totalAcks = 0
        for trial in 0..<Self.trialsPerGroup {
            if group.fresh {
                directory = base.appendingPathComponent("store-\(trial)")
                model = CrashModel(threads: group.threads)
            }
            let seed = random.next()
            // In the reused directories every third trial kills the helper soon after it starts,
            // often inside its own recovery (replaying logs, writing segments and the manifest).
            let early = !group.fresh && trial % 3 == 1
            let delay = early ? Double(random.below(150)) / 1000 : Double(20 + random.below(381)) / 1000
            let label = "group \(group.index) trial \(trial) seed \(seed) \(early ? "early kill after" : "delay") \(Int(delay * 1000)) ms"
            let acks = try runTrial(directory: directory, group: group, seed: seed, delay: delay, early: early,
                                    model: &model, label: label)
            if !early {
                lateTrials += 1
                totalAcks += acks
            }
        }
        #expect(totalAcks >= lateTrials, "every trial but the early kills waits for at least one acknowledgement")
    }

    /// Runs the helper on `directory`, kills it, checks the recovered store against `model` and
    /// updates the model. Returns the number of acknowledged batches.
    /// With `early`, the helper is killed `delay` seconds after it was started, acknowledged
    /// anything or not; otherwise `delay` seconds after its first acknowledgement.
    private func runTrial(directory: URL, group: Group, seed: UInt64, delay: Double, early: Bool,
                          model: inout CrashModel, label: String) throws -> Int {
        var arguments = ["write", directory.path, String(seed), String(group.threads)]
        if group.buffered { arguments.append("buffered") }
        if group.encrypted { arguments.append("encrypted") }
        let child = try CrashHelperProcess(arguments)
        if !early {
            let started = child.waitFor(timeout: 120) { lines in lines.contains { $0.hasPrefix("ACK ") } }
            if !started {
                child.killAndWait()
                Issue.record("\(label): no acknowledgement from the helper; stderr: \(child.errorText)")
                return 0
            }
        }
        child.run(for: delay)
        let status = child.killAndWait()
        #expect(CrashHelperProcess.killed(status, by: SIGKILL),
                "\(label): the helper ended by itself (status \(status)); stderr: \(child.errorText)")

        // The helper's account, per thread t: BEGIN i, ACK i, BEGIN i+T, … continuing after the
        // thread's last batch in the store (its last complete line may be a BEGIN).
        let threads = group.threads
        var acks: [BatchLine] = []
        var inFlight: [Int: BatchLine] = [:]
        var expectedNext: [Int: Int] = [:]
        for t in 0..<threads { expectedNext[t] = model.next(thread: t) }
        for line in child.lines {
            guard let b = BatchLine.parse(line) else {
                Issue.record("\(label): unexpected helper output line \(line.debugDescription)")
                return 0
            }
            let t = b.id % threads
            if b.acknowledged {
                #expect(inFlight[t].map { $0.id == b.id && $0.count == b.count && $0.deletion == b.deletion } == true,
                        "\(label): ACK \(b.id) without a matching BEGIN")
                acks.append(b)
                inFlight[t] = nil
            } else {
                #expect(inFlight[t] == nil, "\(label): BEGIN \(b.id) while \(inFlight[t]?.id ?? -1) is in flight")
                #expect(b.id == expectedNext[t], "\(label): thread \(t) wrote batch \(b.id), expected \(expectedNext[t] ?? -1)")
                expectedNext[t] = b.id + threads
                inFlight[t] = b
            }
        }
        if !early { #expect(!acks.isEmpty, "\(label): the acknowledged lines were lost") }
        for b in acks { model.apply(b) }

        // Encrypted: after writes, flushes, compactions and the kill, no key is in clear.
        if group.encrypted {
            let inClear = try EncryptionFixture.filesContaining("batch/", in: TemporaryDirectory(existing: directory.path))
            #expect(inClear.isEmpty, "\(label): keys in clear in \(inClear)")
        }

        // The state a crash leaves must pass verification as it is (torn log tails are notes).
        let rawReport = try StoreVerifier.verify(storeAt: directory.path, key: group.key)
        #expect(rawReport.faults.isEmpty, "\(label): verifying the crashed store: \(rawReport.faults)")

        var options = StoreOptions()
        options.cacheSize = 64 << 10
        options.encryptionKey = group.key
        let store = try Store.open(at: directory, options: options)
        let found: FoundBatches
        do {
            found = try FoundBatches(store: store, threads: threads)
        } catch {
            try? store.close()
            throw error
        }
        try store.close()
        for p in found.problems { Issue.record("\(label): \(p)") }

        // The batches in flight when the helper died: whole (checked above) or absent.
        for b in inFlight.values.sorted(by: { $0.id < $1.id }) {
            guard let n = found.count(of: b.id) else { continue }
            #expect(n == b.count, "\(label): in-flight batch \(b.id) has \(n) keys, it was written with \(b.count)")
            model.apply(b)
        }
        try check(found, against: model, label: label)

        // A second recovery (nothing to replay now) sees the same, and the files verify clean.
        let report = try StoreVerifier.verify(storeAt: directory.path, key: group.key)
        #expect(report.faults.isEmpty, "\(label): verifying the recovered store: \(report.faults)")
        let again = try Store.open(at: directory, options: options)
        let second: FoundBatches
        do {
            second = try FoundBatches(store: again, threads: threads)
        } catch {
            try? again.close()
            throw error
        }
        try again.close()
        #expect(second.keys == found.keys && second.last == found.last, "\(label): a second reopen reads differently")
        return acks.count
    }

    /// The system calls made on one store's files, in order, with markers the test adds.
    private final class CallRecorder: Sendable {
        let events = Mutex<[String]>([])
        func add(_ e: String) { events.withLock { $0.append(e) } }
    }

    /// A crash of the machine (not only of the process) keeps a new file only if its directory was
    /// synced after the file was created: `fdatasync` of the file does not make its directory entry
    /// durable. So a write acknowledged into a new log must come after a directory sync that
    /// follows the log's creation. Recorded through the I/O fault seam (injecting nothing); the
    /// background flush is held back while a segment is being written, so that its own directory
    /// sync cannot hide a missing one.
    @Test("a new log's directory entry is synced before a write acknowledged into it")
    func newLogDirectoryEntryIsSyncedBeforeAcknowledging() throws {
        let directory = Self.temporaryDirectory("dirsync")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let canonical = directory.standardizedFileURL.resolvingSymlinksInPath().path
        let recorder = CallRecorder()
        let hook: @Sendable (IOOperation, String) -> Int32? = { op, path in
            guard path == canonical || path.hasPrefix(canonical + "/") else { return nil }
            let name = path == canonical ? "DIR" : String(path.dropFirst(canonical.count + 1))
            recorder.add("\(op.rawValue) \(name)")
            if op == .open && name.hasSuffix(".seg.tmp") { usleep(150_000) }
            return nil
        }
        let faults = IOFaults()
        try faults.with(hook) {
            var options = StoreOptions(durability: .synchronous)
            options.memtableSize = 64 << 10
            options.fileSystem = .injecting(faults)
            let store = try Store.open(at: directory, options: options)
            recorder.add("OPENED")
            let filler = [UInt8](repeating: 0x5A, count: 4000)
            for i in 0..<100 {
                var batch = WriteBatch()
                batch.put(Array("dirsync/\(1000 + i)".utf8), filler)
                try store.write(batch)
                recorder.add("ACK \(i)")
            }
            try store.close()
        }

        let events = recorder.events.withLock { $0 }
        let opened = try #require(events.firstIndex(of: "OPENED"))
        // Logs created after the open: the writer opens each new log once (recovery's reads of
        // old logs happen before OPENED).
        let creations = events.indices.filter { $0 > opened && events[$0].hasPrefix("open ") && events[$0].hasSuffix(".log") }
        #expect(creations.count >= 3, "the memtable should have switched logs several times: \(creations.count)")
        for c in creations {
            guard let ack = events[(c + 1)...].firstIndex(where: { $0.hasPrefix("ACK ") }) else { continue }
            let synced = events[(c + 1)..<ack].contains("fsync DIR")
            #expect(synced, "\(events[c]) was created, then \(events[ack]) returned with no directory sync in between: \(events[c..<ack])")
        }
    }

    private func check(_ found: FoundBatches, against model: CrashModel, label: String) throws {
        var missing: [Int] = [], resurrected: [Int] = [], wrongSize: [Int] = []
        for (id, state) in model.batches {
            switch state {
            case .live(let n):
                guard let have = found.count(of: id) else { missing.append(id); continue }
                if have != n { wrongSize.append(id) }
            case .deleted:
                if found.keys[id] != nil { resurrected.append(id) }
            }
        }
        let unknown = found.keys.keys.filter { model.batches[$0] == nil }
        #expect(missing.isEmpty, "\(label): acknowledged batches lost: \(missing.sorted())")
        #expect(resurrected.isEmpty, "\(label): deleted batches present: \(resurrected.sorted())")
        #expect(wrongSize.isEmpty, "\(label): batches with another size than acknowledged: \(wrongSize.sorted())")
        #expect(unknown.isEmpty, "\(label): batches never acknowledged nor in flight: \(unknown.sorted())")
        #expect(found.last == model.last, "\(label): the last keys hold \(found.last), expected \(model.last)")
    }
}
