import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The running engine under faults (issue 10): descriptors have one owner, a failed publish never
// leaves a store that cannot open, a failed log sync or rotation stops the writes that follow,
// background failures are reported, and close reports a failed final sync.

/// A fresh directory for one engine, on tmpfs when there is one (`fsync` is free there, so the
/// fault sweeps stay fast). Paths are canonical, as the fault hook sees them.
private struct EngineDirectory {
    let path: String

    init(_ label: String) throws {
        let base = (try? FileSystem.real.exists("/dev/shm")) == true ? "/dev/shm"
            : FileManager.default.temporaryDirectory.standardizedFileURL.resolvingSymlinksInPath().path
        path = base + "/strata-fault-\(label)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Small memtables and segments, so that a few hundred writes rotate, flush and compact often.
private func smallOptions(faults: IOFaults? = nil) -> EngineOptions {
    var o = EngineOptions()
    o.fileSystem = FileSystem(environment: IOEnvironment(faults: faults))
    o.durability = .synchronous
    o.memtableSize = 4 << 10
    o.targetSegmentSize = 3 << 10
    o.segment.blockSize = 1 << 10
    o.cacheSize = 0
    o.compactionTrigger = 3
    return o
}

private func key(_ i: Int) -> [UInt8] { Array("key/\(String(format: "%05d", i))".utf8) }
private func value(_ i: Int) -> [UInt8] { Array("value \(i) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 120) }

private func put(_ engine: Engine, _ i: Int, durability: Durability? = nil) throws {
    var b = WriteBatch()
    b.put(key(i), value(i))
    try engine.write(b, durability: durability)
}

private func get(_ engine: Engine, _ i: Int) throws -> [UInt8]? {
    try engine.get(Keyspace.keyValue.prefix + key(i))
}

/// What the process's open descriptors refer to (`/proc/self/fd`), for those under `directory`.
private func openFiles(under directory: String) -> [String] {
    guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
    return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
        .filter { $0.hasPrefix(directory + "/") }
}

/// Classes of the calls a fault is injected into: the operation and the kind of file.
private func callClass(_ op: IOOperation, _ path: String, directory: String) -> String? {
    guard [.write, .fsync, .rename, .ftruncate].contains(op) else { return nil }
    let kind: String
    if path == directory {
        kind = "directory"
    } else if path.hasPrefix(directory + "/") {
        let name = path.dropFirst(directory.count + 1)
        if name.hasSuffix(".log") { kind = "log" }
        else if name.hasSuffix(".seg.tmp") || name.hasSuffix(".seg") { kind = "segment" }
        else if name.hasPrefix("MANIFEST") { kind = "manifest" }
        else { kind = "other" }
    } else {
        return nil
    }
    return "\(op.rawValue) \(kind)"
}

/// Counts calls per class and fails the `ordinal`-th call (0-based) of `target`, once.
private final class FaultPlan: Sendable {
    let directory: String
    let target: String?
    let ordinal: Int
    let code: Int32
    let counts = Mutex<[String: Int]>([:])
    private let injectedFlag = Atomic<Bool>(false)
    var injected: Bool { injectedFlag.load(ordering: .sequentiallyConsistent) }

    init(directory: String, target: String? = nil, ordinal: Int = 0, code: Int32 = EIO) {
        self.directory = directory
        self.target = target
        self.ordinal = ordinal
        self.code = code
    }

    func hook(_ op: IOOperation, _ path: String) -> Int32? {
        guard let c = callClass(op, path, directory: directory) else { return nil }
        let n: Int = counts.withLock { counts in
            defer { counts[c, default: 0] += 1 }
            return counts[c, default: 0]
        }
        if c == target && n == ordinal {
            injectedFlag.store(true, ordering: .sequentiallyConsistent)
            return code
        }
        return nil
    }
}

/// A counter and flag the fault hooks share with the test.
private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .sequentiallyConsistent) }
    var value: Int { count.load(ordering: .sequentiallyConsistent) }
}

private final class Flag: Sendable {
    private let flag: Atomic<Bool>
    init(_ value: Bool = false) { flag = Atomic(value) }
    func set(_ value: Bool = true) { flag.store(value, ordering: .sequentiallyConsistent) }
    var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }
    /// Sets the flag; returns whether it was set before.
    func testAndSet() -> Bool { flag.exchange(true, ordering: .sequentiallyConsistent) }
}

@Suite("Engine under faults")
struct EngineFaultTests {

    // MARK: A manifest that cannot be seen

    /// `stat` of `MANIFEST` failing with EACCES or EIO is not "no manifest": the open throws the
    /// error, and the store is neither replaced by a new one nor changed.
    @Test("a manifest that cannot be stat'ed fails the open; no new store is made over the old one",
          arguments: [EACCES, EIO])
    func unreadableManifestFailsTheOpen(code: Int32) throws {
        let d = try EngineDirectory("stat-\(code)")
        defer { d.remove() }
        do {
            let engine = try Engine(directory: d.path, options: smallOptions())
            for i in 0..<20 { try put(engine, i) }
            try engine.close()
        }
        let before = try directoryBytes(d.path)
        let faults = IOFaults({ op, path in op == .stat && path == d.file("MANIFEST") ? code : nil })
        #expect(throws: StrataError.io(path: d.file("MANIFEST"), errno: code, operation: "stat")) {
            _ = try Engine(directory: d.path, options: smallOptions(faults: faults))
        }
        #expect(try directoryBytes(d.path) == before)
        let engine = try Engine(directory: d.path, options: smallOptions())
        defer { _ = try? engine.close() }
        for i in 0..<20 { #expect(try get(engine, i) == value(i)) }
    }

    /// Every file of `directory` but the lock, with its bytes.
    private func directoryBytes(_ directory: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name != "LOCK" {
            out[name] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        }
        return out
    }

    // MARK: The store directory's entry

    @Test("an open that finds no manifest syncs the store directory's parent and the directory itself; one that finds a manifest does not")
    func openSyncsTheDirectoryEntry() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("entry")
        defer { d.remove() }
        // A directory of this test's own, made before the first open, as a crash between open's
        // mkdir and its sync of the parent would leave it: no open creates it.
        let parent = d.file("parent")
        let store = parent + "/store"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let synced = Mutex<[String]>([])
        for round in 0..<3 {
            synced.withLock { $0 = [] }
            try faults.with({ op, path in
                if op == .fsync && (path == parent || path == store) { synced.withLock { $0.append(path) } }
                // The first open fails after its syncs, before it writes a manifest: the next open
                // must sync again.
                if round == 0 && op == .open && path == store + "/MANIFEST.tmp" { return 5 }
                return nil
            }) {
                do {
                    let engine = try Engine(directory: store, options: smallOptions(faults: faults))
                    try engine.close()
                } catch StrataError.io(path: _, errno: 5, operation: "open") where round == 0 {}
            }
            let paths = synced.withLock { $0 }
            if round < 2 {
                #expect(paths.contains(parent), "open \(round) did not sync the parent: \(paths)")
                #expect(paths.contains(store), "open \(round) did not sync the store directory: \(paths)")
            } else {
                #expect(paths.isEmpty, "an open that found a manifest synced \(paths)")
            }
        }
    }

    // MARK: An open after a clean close

    @Test("an open after a clean close writes nothing: every file stays byte for byte, and writes go on in the log the manifest names")
    func openAfterACleanCloseWritesNothing() throws {
        let d = try EngineDirectory("reuse")
        defer { d.remove() }
        // No compaction: it would write in the background after any open.
        func quiet(faults: IOFaults? = nil) -> EngineOptions {
            var o = smallOptions(faults: faults)
            o.compactionTrigger = 1_000
            return o
        }
        do {
            let engine = try Engine(directory: d.path, options: quiet())
            for i in 0..<400 { try put(engine, i) }
            // Everything goes to segments: the manifest names a new, empty log.
            try engine.close(flushMinimum: 0)
        }
        let before = try directoryBytes(d.path)
        let faults = IOFaults()
        let changes = Mutex<[String]>([])
        try faults.with({ op, path in
            if [.write, .fsync, .rename, .unlink, .ftruncate, .link, .mkdir].contains(op) && !path.hasSuffix("/LOCK") {
                changes.withLock { $0.append("\(op.rawValue) \(path)") }
            }
            return nil
        }) {
            let engine = try Engine(directory: d.path, options: quiet(faults: faults))
            #expect(try get(engine, 7) == value(7))
            #expect(changes.withLock { $0 } == [], "the open wrote")
            try engine.close()
        }
        #expect(try directoryBytes(d.path) == before)

        // Writes go to that log, and the next open replays them from it.
        let logs = before.keys.filter { $0.hasSuffix(".log") }
        #expect(logs.count == 1)
        do {
            let engine = try Engine(directory: d.path, options: quiet())
            for i in 400..<410 { try put(engine, i, durability: .synchronous) }
            try engine.close()
        }
        let after = try directoryBytes(d.path)
        let log = try #require(logs.first)
        #expect((after[log]?.count ?? 0) > (before[log]?.count ?? 0), "the writes did not go to \(log)")
        let engine = try Engine(directory: d.path, options: quiet())
        defer { _ = try? engine.close() }
        for i in 0..<410 { #expect(try get(engine, i) == value(i)) }
        #expect(engine.recovery.batchesReplayed == 10)
    }

    @Test("an encrypted store's open creates a new log every time: a sealed log is never appended to after an open")
    func anEncryptedStoreNeverReusesItsLog() throws {
        let d = try EngineDirectory("reuse-sealed")
        defer { d.remove() }
        var options = smallOptions()
        options.encryptionKey = EncryptionFixture.testKey
        var logs: [Set<String>] = []
        for _ in 0..<3 {
            try Engine(directory: d.path, options: options).close()
            logs.append(Set(try FileManager.default.contentsOfDirectory(atPath: d.path).filter { $0.hasSuffix(".log") }))
        }
        #expect(logs[0] != logs[1] && logs[1] != logs[2], "\(logs)")
    }

    // MARK: Descriptors

    @Test("after hundreds of rotations, flushes and compactions no descriptor refers to a deleted file")
    func descriptorsFollowTheLiveFiles() throws {
        let d = try EngineDirectory("fds")
        defer { d.remove() }
        let engine = try Engine(directory: d.path, options: smallOptions())
        for i in 0..<6000 {
            try put(engine, i, durability: .buffered)
            if i % 500 == 499 {
                // Background flushes and compactions run meanwhile, so the count of segments
                // open varies; but a deleted file is never open, and only the active log is.
                let files = openFiles(under: d.path)
                let deleted = files.filter { $0.hasSuffix(" (deleted)") }
                #expect(deleted.isEmpty, "descriptors of deleted store files: \(deleted)")
                let logs = files.filter { $0.hasSuffix(".log") }
                #expect(logs.count == 1, "log descriptors open: \(logs.sorted())")
            }
        }
        try engine.compactAll()
        let stats = engine.statistics
        #expect(stats.flushes >= 200, "only \(stats.flushes) flushes")
        #expect(stats.compactions >= 20, "only \(stats.compactions) compactions")
        let files = openFiles(under: d.path)
        #expect(files.filter { $0.hasSuffix(" (deleted)") }.isEmpty, "\(files)")
        // The segments, the log and LOCK.
        #expect(files.count <= stats.segments + 2, "\(files.count) descriptors for \(stats.segments) segments: \(files.sorted())")
        try engine.close()
        #expect(openFiles(under: d.path).isEmpty, "descriptors left open after close: \(openFiles(under: d.path))")
    }

    // MARK: Injected-fault sweep

    /// The workload of the sweep: writes (some synchronous) through several rotations, flushes
    /// and compactions, then a full compaction and close. Returns the keys acknowledged.
    private func workload(_ engine: Engine) -> [Int] {
        var acknowledged: [Int] = []
        for i in 0..<360 {
            do {
                try put(engine, i, durability: i % 8 == 0 ? .synchronous : .buffered)
                acknowledged.append(i)
            } catch {}
            if i == 200 { _ = try? engine.compactAll() }
        }
        _ = try? engine.compactAll()
        for i in 360..<380 {
            do {
                try put(engine, i, durability: .synchronous)
                acknowledged.append(i)
            } catch {}
        }
        return acknowledged
    }

    /// Runs the workload with `plan` installed, abandons the engine, reopens without faults and
    /// checks every acknowledged write. Returns the problems found.
    private func trial(_ plan: FaultPlan, directory d: EngineDirectory) -> [String] {
        let faults = IOFaults()
        guard let first = try? Engine(directory: d.path, options: smallOptions(faults: faults)) else { return ["the first open failed"] }
        let acknowledged: [Int] = faults.with({ plan.hook($0, $1) }) {
            let acks = workload(first)
            _ = try? first.close()
            return acks
        }
        do {
            let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
            defer { _ = try? engine.close() }
            var missing: [Int] = []
            for i in acknowledged where try get(engine, i) != value(i) { missing.append(i) }
            if !missing.isEmpty { return ["acknowledged writes lost: \(missing)"] }
            // The reopened store takes writes again.
            try put(engine, 100_000)
            return []
        } catch {
            return ["the store does not open: \(error)"]
        }
    }

    @Test("a single failed write, fsync, rename or ftruncate anywhere in a workload loses nothing acknowledged")
    func injectedFaultSweep() throws {
        // A dry run counts the calls of each class.
        let dry = try EngineDirectory("sweep-dry")
        let counting = FaultPlan(directory: dry.path)
        #expect(trial(counting, directory: dry).isEmpty)
        dry.remove()
        let counts = counting.counts.withLock { $0 }
        #expect((counts["rename manifest"] ?? 0) >= 10, "too few publishes to sweep: \(counts)")
        #expect((counts["rename segment"] ?? 0) >= 10, "too few segments to sweep: \(counts)")

        // Every call of every class but the commits' log writes and syncs, which are many and
        // alike: a spread sample of those. The interleaving of background work differs from run
        // to run, so an ordinal may name a slightly different call each time; the classes keep
        // publish, flush and rotation calls apart.
        var rng = SplitMix64(seed: 0x5EED_F417)
        var cases: [(String, Int, Int32)] = []
        for (c, n) in counts.sorted(by: { $0.key < $1.key }) {
            let ordinals = c.hasSuffix(" log") && n > 40 ? (0..<40).map { _ in rng.below(n) } : Array(0..<n)
            for k in ordinals {
                cases.append((c, k, EIO))
                if c.hasPrefix("write ") { cases.append((c, k, ENOSPC)) }
            }
        }
        var failures: [String] = []
        var injected = 0
        for (c, k, code) in cases {
            let d = try EngineDirectory("sweep")
            defer { d.remove() }
            let plan = FaultPlan(directory: d.path, target: c, ordinal: k, code: code)
            let problems = trial(plan, directory: d)
            if plan.injected { injected += 1 }
            for p in problems { failures.append("\(c) #\(k) errno \(code): \(p)") }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(cases.count) injected faults: \(failures.prefix(20))")
        #expect(injected * 10 >= cases.count * 9, "only \(injected) of \(cases.count) faults were injected")
    }

    /// The publish case of the issue, by itself: the directory sync after the MANIFEST rename of a
    /// flush fails. The new manifest may be on disk, so the segments it lists must stay.
    @Test("a failed directory sync after the manifest rename keeps the new segments and fails the engine")
    func failedSyncAfterManifestRename() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("publish")
        defer { d.remove() }
        let renamed = Flag()
        let failed = Flag()
        let prefix = d.path
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        var acknowledged: [Int] = []
        faults.with({ op, path in
            guard path == prefix || path.hasPrefix(prefix + "/") else { return nil }
            if op == .rename && path.hasSuffix("/MANIFEST") { renamed.set(); return nil }
            if op == .fsync && path == prefix && renamed.isSet
                && !failed.testAndSet() { return EIO }
            return nil
        }) {
            for i in 0..<200 {
                do { try put(engine, i); acknowledged.append(i) } catch { break }
            }
            _ = try? engine.compactAll()
        }
        #expect(failed.isSet)
        let stats = engine.statistics
        guard case .io(_, EIO, "fsync")? = stats.writeError else {
            Issue.record("the engine did not fail: \(String(describing: stats.writeError))")
            return
        }
        #expect(throws: StrataError.self) { try put(engine, 1000) }
        #expect(throws: StrataError.self) { try engine.close() }
        let again = try Engine(directory: d.path, options: smallOptions(faults: faults))
        defer { _ = try? again.close() }
        for i in acknowledged { #expect(try get(again, i) == value(i), "key \(i)") }
    }

    // MARK: Rotation and log sync

    /// Writes under `.buffered` (no commit syncs the log) until the memtable rotates with the
    /// `target` call failing; returns the engine, the error of that write, and the keys acknowledged.
    private func failRotation(_ d: EngineDirectory, target: String, code: Int32, logFsyncsAfter: Counter)
        throws -> (Engine, StrataError?, [Int]) {
        let faults = IOFaults()
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        let firstLog = try #require(try FileSystem.real.listDirectory(d.path).first { $0.hasSuffix(".log") })
        let plan = FaultPlan(directory: d.path, target: target, ordinal: 0, code: code)
        let firstLogPath = d.file(firstLog)
        var acknowledged: [Int] = []
        var failure: StrataError?
        faults.with({ op, path in
            if plan.injected && op == .fsync && path.hasPrefix(d.path + "/") && path.hasSuffix(".log") {
                logFsyncsAfter.add()
            }
            // Only the calls of the rotation: writes to the first log are commits.
            if op == .write && path == firstLogPath { return nil }
            return plan.hook(op, path)
        }) {
            for i in 0..<100 {
                do {
                    try put(engine, i, durability: .buffered)
                    acknowledged.append(i)
                } catch {
                    if failure == nil { failure = error as? StrataError }
                }
            }
        }
        #expect(plan.injected, "no \(target) call was made")
        return (engine, failure, acknowledged)
    }

    @Test("a failed rotation stops every later write and never syncs the old log again",
          arguments: [("fsync log", EIO), ("fsync directory", EIO), ("write log", ENOSPC)])
    func failedRotationFailsTheEngine(target: String, code: Int32) throws {
        let d = try EngineDirectory("rotation")
        defer { d.remove() }
        let fsyncsAfter = Counter()
        let (engine, failure, acknowledged) = try failRotation(d, target: target, code: code, logFsyncsAfter: fsyncsAfter)
        guard case .io(_, code, _)? = failure else {
            Issue.record("the rotating write did not fail with errno \(code): \(String(describing: failure))")
            _ = try? engine.close()
            return
        }
        // Every write after the failure failed too (the loop tried 100).
        #expect(acknowledged == Array(0..<acknowledged.count), "writes acknowledged after the failure: \(acknowledged)")
        #expect(acknowledged.count < 100)
        #expect(fsyncsAfter.value == 0, "a log was synced again after the failure")
        #expect(engine.statistics.writeError != nil)
        #expect(throws: StrataError.self) { try engine.sync() }
        #expect(throws: StrataError.self) { try engine.close() }
        let again = try Engine(directory: d.path, options: smallOptions())
        defer { _ = try? again.close() }
        for i in acknowledged { #expect(try get(again, i) == value(i), "key \(i)") }
    }

    @Test("a failed sync of the buffered-durability timer fails the writes that follow")
    func failedTimerSyncFailsTheEngine() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("timer")
        defer { d.remove() }
        var options = smallOptions(faults: faults)
        options.durability = .buffered
        options.syncInterval = 0.005
        options.memtableSize = 1 << 20
        let engine = try Engine(directory: d.path, options: options)
        let prefix = d.path + "/"
        try faults.with({ op, path in op == .fsync && path.hasPrefix(prefix) && path.hasSuffix(".log") ? EIO : nil }) {
            try put(engine, 0)
            // Wait for the timer (there is no other log sync), at most about ten seconds.
            for _ in 0..<2000 where engine.statistics.writeError == nil { usleep(5000) }
        }
        #expect(engine.statistics.writeError != nil)
        #expect(throws: StrataError.self) { try put(engine, 1) }
        #expect(throws: StrataError.self) { try engine.close() }
    }

    @Test("a failed Store.sync fails the writes that follow; it is never retried")
    func failedExplicitSyncFailsTheEngine() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("sync")
        defer { d.remove() }
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        try put(engine, 0, durability: .buffered)
        let prefix = d.path + "/"
        let plan = FaultPlan(directory: d.path, target: "fsync log")
        faults.with({ op, path in path.hasPrefix(prefix) ? plan.hook(op, path) : nil }) {
            _ = #expect(throws: StrataError.self) { try engine.sync() }
        }
        #expect(throws: StrataError.self) { try put(engine, 1, durability: .buffered) }
        #expect(throws: StrataError.self) { try engine.sync() }
        #expect(throws: StrataError.self) { try engine.close() }
    }

    // MARK: Background failures and close

    @Test("a failed flush is reported in statistics, retried, and stalls writes only while it fails")
    func failedFlushIsReported() throws {
        let d = try EngineDirectory("flush")
        defer { d.remove() }
        let faults = IOFaults()
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        defer { _ = try? engine.close() }
        let prefix = d.path + "/"
        let failing = Flag(true)
        var firstFailure: Int?
        // The failing write starts a retried flush, which may be writing its segment when the
        // writes stop; once it fails, its files are gone. Wait for it with the fault in place.
        func segmentFiles() throws -> Bool {
            try FileSystem.real.listDirectory(d.path).contains { $0.hasSuffix(".seg.tmp") || $0.hasSuffix(".seg") }
        }
        var leftover = false
        try faults.with({ op, path in
            op == .rename && path.hasPrefix(prefix) && path.hasSuffix(".seg") && failing.isSet ? EIO : nil
        }) {
            for i in 0..<400 {
                do { try put(engine, i, durability: .buffered) } catch {
                    firstFailure = i
                    break
                }
            }
            engine.waitForBackgroundWork()
            leftover = try segmentFiles()
        }
        // With every flush failing, writes stop once the waiting memtables are full.
        #expect(firstFailure != nil, "writes never failed while no memtable could be flushed")
        let stats = engine.statistics
        #expect(stats.backgroundFailures >= 1)
        guard case .io(_, EIO, "rename")? = stats.lastBackgroundError else {
            Issue.record("last background error: \(String(describing: stats.lastBackgroundError))")
            return
        }
        #expect(stats.writeError == nil, "a failed flush before the manifest rename does not fail the engine")
        let listing = try FileSystem.real.listDirectory(d.path).sorted()
        #expect(!leftover, "a failed flush left its segment files behind: \(listing)")
        // Once the fault is gone, flushes succeed and writes continue.
        failing.set(false)
        // The first write to wait for a flush may still be told of the last failure.
        for i in 1000..<1200 {
            do { try put(engine, i, durability: .buffered) } catch { try put(engine, i, durability: .buffered) }
        }
        try engine.compactAll()
        #expect(engine.statistics.flushes >= 1)
        for i in 1000..<1200 { #expect(try get(engine, i) == value(i)) }
    }

    @Test("an obsolete segment that cannot be deleted is reported; the next open deletes it")
    func failedSegmentDeletionIsReported() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("unlink-seg")
        defer { d.remove() }
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        let prefix = d.path + "/"
        try faults.with({ op, path in op == .unlink && path.hasPrefix(prefix) && path.hasSuffix(".seg") ? EACCES : nil }) {
            for i in 0..<300 { try put(engine, i, durability: .buffered) }
            try engine.compactAll()
            engine.waitForFailureObserver()
        }
        let stats = engine.statistics
        #expect(stats.compactions >= 1)
        #expect(stats.backgroundFailures >= 1)
        guard case .io(let path, EACCES, "unlink")? = stats.lastBackgroundError else {
            Issue.record("last background error: \(String(describing: stats.lastBackgroundError))")
            _ = try? engine.close()
            return
        }
        #expect(path.hasSuffix(".seg"))
        #expect(stats.writeError == nil)
        let live = stats.segments
        try engine.close()
        #expect(try FileSystem.real.listDirectory(d.path).filter { $0.hasSuffix(".seg") }.count > live,
                "the obsolete segments are still there")
        // An open that cannot delete them either reports it.
        try faults.with({ op, path in op == .unlink && path.hasPrefix(prefix) && path.hasSuffix(".seg") ? EACCES : nil }) {
            let failing = try Engine(directory: d.path, options: smallOptions(faults: faults))
            let s = failing.statistics
            #expect(s.backgroundFailures >= 1)
            if case .io(let path, EACCES, "unlink")? = s.lastBackgroundError {
                #expect(path.hasSuffix(".seg"))
            } else {
                Issue.record("at open: \(String(describing: s.lastBackgroundError))")
            }
            try failing.close()
        }
        // The next open deletes the segments the manifest does not list.
        let again = try Engine(directory: d.path, options: smallOptions(faults: faults))
        #expect(again.statistics.backgroundFailures == 0)
        for i in 0..<300 { #expect(try get(again, i) == value(i)) }
        #expect(try FileSystem.real.listDirectory(d.path).filter { $0.hasSuffix(".seg") }.count == again.statistics.segments)
        try again.close()
    }

    @Test("a flushed log that cannot be deleted is reported")
    func failedLogDeletionIsReported() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("unlink")
        defer { d.remove() }
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        let prefix = d.path + "/"
        try faults.with({ op, path in op == .unlink && path.hasPrefix(prefix) && path.hasSuffix(".log") ? EACCES : nil }) {
            for i in 0..<100 { try put(engine, i, durability: .buffered) }
            try engine.compactAll()
        }
        let stats = engine.statistics
        #expect(stats.backgroundFailures >= 1)
        guard case .io(_, EACCES, "unlink")? = stats.lastBackgroundError else {
            Issue.record("last background error: \(String(describing: stats.lastBackgroundError))")
            _ = try? engine.close()
            return
        }
        #expect(stats.writeError == nil)
        try engine.close()
        // The next open deletes the logs below the manifest's log number.
        let again = try Engine(directory: d.path, options: smallOptions(faults: faults))
        for i in 0..<100 { #expect(try get(again, i) == value(i)) }
        try again.close()
        #expect(try FileSystem.real.listDirectory(d.path).filter { $0.hasSuffix(".log") }.count == 1)
    }

    @Test("close closes the log and throws a failed final sync; the store opens again")
    func closeReportsAFailedFinalSync() throws {
        let faults = IOFaults()
        let d = try EngineDirectory("close")
        defer { d.remove() }
        let engine = try Engine(directory: d.path, options: smallOptions(faults: faults))
        let log = try #require(try FileSystem.real.listDirectory(d.path).first { $0.hasSuffix(".log") })
        try put(engine, 0)
        try put(engine, 1, durability: .buffered)
        #expect(openFiles(under: d.path).contains { $0.hasSuffix(".log") })
        let prefix = d.path + "/"
        faults.with({ op, path in op == .fsync && path.hasPrefix(prefix) && path.hasSuffix(".log") ? EIO : nil }) {
            _ = #expect(throws: StrataError.io(path: d.file(log), errno: EIO, operation: "fsync")) { try engine.close() }
        }
        #expect(openFiles(under: d.path).isEmpty, "descriptors left open: \(openFiles(under: d.path))")
        try engine.close()  // idempotent
        let again = try Engine(directory: d.path, options: smallOptions(faults: faults))
        #expect(try get(again, 0) == value(0))
        #expect(try get(again, 1) == value(1))
        try again.close()
    }
}
