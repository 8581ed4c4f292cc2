import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Power-loss tests: the workloads of the model test (random batches of puts, deletes and range
// deletions with flushes, compactions, close/reopen, mixed durability) and of the crash tests
// (acknowledged batches from one or several threads, synchronous or buffered, in fresh or reused
// directories) run in-process through `PowerLossSimulator`, which takes crash clones at random
// system calls: what a power cut at that instant would leave (every file as of its last
// `fdatasync`, every directory entry as of the last directory `fsync`). Each clone must open, hold
// every batch promised durable before the cut, hold each thread's batches as a prefix of what it
// wrote (so no batch is half there and none is out of order), and verify clean. Opening a clone is
// itself cut at random system calls (recovery's own writes), and those clones must recover to the
// very same state. Unlike `kill -9`, this loses what the OS had buffered, so a missing, misplaced
// or misordered sync fails here.

/// One operation of a batch, as the reference replays it.
private enum Op: Sendable {
    case put([UInt8], [UInt8])
    case delete([UInt8])
    case deleteRange([UInt8], [UInt8])
}

/// Thread t writes only keys `t<t>/…`, and in every batch `t<t>~` = the number of its batches so far.
private enum Keys {
    static func prefix(_ t: Int) -> [UInt8] { Array("t\(t)/".utf8) }
    static func key(_ t: Int, _ k: Int) -> [UInt8] { prefix(t) + Array("k\(k < 10 ? "0" : "")\(k)".utf8) }
    static func marker(_ t: Int) -> [UInt8] { Array("t\(t)~".utf8) }
    static let keysPerThread = 40

    /// (thread, is marker) of a key the workload writes.
    static func parse(_ key: [UInt8]) -> (thread: Int, marker: Bool)? {
        guard key.count >= 3, key[0] == UInt8(ascii: "t"), (48...57).contains(key[1]) else { return nil }
        if key.count == 3 && key[2] == UInt8(ascii: "~") { return (Int(key[1] - 48), true) }
        if key[2] == UInt8(ascii: "/") { return (Int(key[1] - 48), false) }
        return nil
    }
}

private func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

private func show(_ key: [UInt8]) -> String { String(decoding: key, as: UTF8.self) }

/// The batches one writer thread committed, in order. Only that thread touches it while it writes.
private final class ThreadHistory: @unchecked Sendable {
    var batches: [[Op]] = []

    /// The thread's keys after its first `count` batches.
    func state(after count: Int) -> [[UInt8]: [UInt8]] {
        var d: [[UInt8]: [UInt8]] = [:]
        for batch in batches.prefix(count) {
            for op in batch {
                switch op {
                case .put(let k, let v): d[k] = v
                case .delete(let k): d[k] = nil
                case .deleteRange(let a, let b): d = d.filter { !(!less($0.key, a) && less($0.key, b)) }
                }
            }
        }
        return d
    }
}

/// What a recovered store holds, per thread: the batch count in its marker and its keys.
private struct Recovered: Equatable {
    var counts: [Int]
    var states: [[[UInt8]: [UInt8]]]
    var stray: [[UInt8]] = []

    init(engine: Engine, threads: Int) throws {
        counts = Array(repeating: 0, count: threads)
        states = Array(repeating: [:], count: threads)
        let prefix = Keyspace.keyValue.prefix
        let cursor = try engine.snapshot().cursor()
        while try cursor.next() {
            var key = cursor.key
            let value = Array(cursor.value)
            guard key.starts(with: prefix) else { stray.append(key); continue }
            key.removeFirst(prefix.count)
            guard let (t, marker) = Keys.parse(key), t < threads else { stray.append(key); continue }
            if marker {
                guard let n = Int(String(decoding: value, as: UTF8.self)) else { stray.append(key); continue }
                counts[t] = n
            } else {
                states[t][key] = value
            }
        }
    }
}

/// The engine the writers share (replaced on reopen) and their failures.
private final class WorkloadState: Sendable {
    let engine: Mutex<Engine>
    let failures = Mutex<[String]>([])
    init(_ engine: Engine) { self.engine = Mutex(engine) }
}

@Suite struct PowerLossTests {
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var threads: Int
        /// Chance that a batch is written `.synchronous` (else `.buffered`).
        var synchronousPerMille: Int
        /// Chance of a `sync()` after a batch.
        var syncPerMille: Int
        var compactPerMille: Int
        /// Close and reopen (one thread only).
        var reopenPerMille: Int
        /// Each trial continues from a clone of the one before (recovery meets its leftovers).
        var chained: Bool
        var batchesPerThread: Int
        var seed: UInt64
        /// Sealed with the test key (FORMAT.md 8.1): the encrypted forms under the same cuts.
        var encrypted = false

        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "model workload: mixed durability, compactions, reopens", threads: 1, synchronousPerMille: 300,
                 syncPerMille: 20, compactPerMille: 8, reopenPerMille: 6, chained: true, batchesPerThread: 400,
                 seed: 0x9A3E_0001),
        Scenario(name: "crash workload: synchronous, fresh directories", threads: 1, synchronousPerMille: 1000,
                 syncPerMille: 0, compactPerMille: 0, reopenPerMille: 0, chained: false, batchesPerThread: 300,
                 seed: 0x9A3E_0002),
        Scenario(name: "crash workload: synchronous, 3 threads, reused directory", threads: 3, synchronousPerMille: 1000,
                 syncPerMille: 0, compactPerMille: 3, reopenPerMille: 0, chained: true, batchesPerThread: 150,
                 seed: 0x9A3E_0003),
        Scenario(name: "crash workload: buffered, 2 threads, reused directory", threads: 2, synchronousPerMille: 0,
                 syncPerMille: 15, compactPerMille: 3, reopenPerMille: 0, chained: true, batchesPerThread: 200,
                 seed: 0x9A3E_0004),
        Scenario(name: "encrypted: mixed durability, compactions, reopens", threads: 1, synchronousPerMille: 300,
                 syncPerMille: 20, compactPerMille: 8, reopenPerMille: 6, chained: true, batchesPerThread: 300,
                 seed: 0x9A3E_0005, encrypted: true),
    ]

    /// 4 trials per scenario by default; `STRATA_POWERLOSS_TRIALS` (a total) raises the count.
    static var trialsPerScenario: Int {
        let total = ProcessInfo.processInfo.environment["STRATA_POWERLOSS_TRIALS"].flatMap { Int($0) } ?? 16
        return max(1, (max(total, 1) + scenarios.count - 1) / scenarios.count)
    }

    static func options(buffered: Bool, encrypted: Bool = false) -> EngineOptions {
        var o = EngineOptions()
        if encrypted { o.encryptionKey = EncryptionFixture.testKey }
        o.durability = buffered ? .buffered : .synchronous
        o.memtableSize = 16 << 10
        o.targetSegmentSize = 8 << 10
        o.segment.blockSize = 1024
        o.cacheSize = 64 << 10
        o.syncInterval = 0.02
        o.compactionTrigger = 3
        o.fileSystem = PowerLoss.fileSystem
        return o
    }

    @Test("power cuts at random system calls lose nothing promised durable and tear no batch",
          arguments: PowerLossTests.scenarios)
    func powerCutsDuringWorkloads(scenario: Scenario) throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let base = temporary.path
        var random = SplitMix64(seed: scenario.seed)
        var histories = (0..<scenario.threads).map { _ in ThreadHistory() }
        var directory = base + "/store-0"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var cutsChecked = 0, recoveryCutsChecked = 0, promisedChecked = 0
        // Where the cuts fell: writing a segment (flush or compaction), publishing a manifest.
        var inSegments = 0, atManifests = 0
        for trial in 0..<Self.trialsPerScenario {
            if !scenario.chained && trial > 0 {
                directory = base + "/store-\(trial)"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                histories = (0..<scenario.threads).map { _ in ThreadHistory() }
            }
            let seed = random.next()
            let label = "\(scenario.name), trial \(trial), seed \(seed)"
            let cuts = try runWorkload(scenario, directory: directory, cloneRoot: base + "/trial\(trial)-cut",
                                       histories: histories, seed: seed, label: label)
            var next: (directory: String, counts: [Int])?
            for cut in cuts {
                let cutLabel = "\(label), cut \(cut.number) at system call \(cut.event) (after \(cut.after))"
                guard let (counts, recoveryCuts) = check(cut, histories: histories, seed: seed &+ UInt64(cut.number),
                                                         label: cutLabel, encrypted: scenario.encrypted)
                else { continue }
                cutsChecked += 1
                if cut.after.contains(".seg") { inSegments += 1 }
                if cut.after.contains("MANIFEST") { atManifests += 1 }
                recoveryCutsChecked += recoveryCuts
                promisedChecked += cut.progress.durable.reduce(0, +)
                next = (cut.directory, counts)
            }
            if scenario.chained {
                // Continue from the last clone, already recovered once, or else from the store.
                if let next {
                    directory = next.directory
                    for (t, h) in histories.enumerated() { h.batches.removeLast(h.batches.count - next.counts[t]) }
                }
            }
            for cut in cuts where cut.directory != directory { try? FileManager.default.removeItem(atPath: cut.directory) }
        }
        #expect(cutsChecked >= Self.trialsPerScenario, "too few power cuts happened: \(cutsChecked)")
        #expect(recoveryCutsChecked > 0, "no power cut happened during a recovery")
        #expect(inSegments > 0 && atManifests > 0, "cuts while writing segments: \(inSegments), at manifests: \(atManifests)")
        if scenario.synchronousPerMille > 0 || scenario.syncPerMille > 0 {
            #expect(promisedChecked > 0, "no cut came after a batch was promised durable")
        }
    }

    /// `mkdir` makes the new directory's entry durable only once its parent is synced: a store
    /// whose directory the engine created must sync the parent before it acknowledges a write.
    @Test("a new store's directory entry is durable before the first acknowledged write")
    func newStoreDirectoryIsDurable() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let base = temporary.path
        let directory = base + "/store"
        let simulator = try PowerLossSimulator(directory: directory, cloneRoot: base + "/cut", seed: 1, cutChance: 0,
                                               maxCuts: 1, progress: .init(start: [0]))
        let history = ThreadHistory()
        do {
            PowerLoss.attach(simulator)
            defer { PowerLoss.detach(simulator) }
            let engine = try Engine(directory: directory, options: Self.options(buffered: false))
            var batch = WriteBatch()
            batch.put(Keys.key(0, 1), [1, 2, 3])
            batch.put(Keys.marker(0), Array("1".utf8))
            history.batches.append([.put(Keys.key(0, 1), [1, 2, 3])])
            simulator.update { $0.begun[0] = 1 }
            try engine.write(batch, durability: .synchronous)
            simulator.update { $0.acknowledged[0] = 1; $0.durable[0] = 1 }
            simulator.cutNow(label: "the first acknowledged write")
            try engine.close()
        }
        let cut = try #require(simulator.allCuts.first)
        #expect(check(cut, histories: [history], seed: 2, label: "power cut after \(cut.after)") != nil)
    }

    /// Runs the scenario's writers on `directory` under a simulator; returns its cuts.
    private func runWorkload(_ scenario: Scenario, directory: String, cloneRoot: String, histories: [ThreadHistory],
                             seed: UInt64, label: String) throws -> [PowerLossSimulator.Cut] {
        let threads = scenario.threads
        let options = Self.options(buffered: scenario.synchronousPerMille == 0, encrypted: scenario.encrypted)
        let start = histories.map(\.batches.count)
        let events = 120.0 * Double(scenario.batchesPerThread * threads) / 300
        let simulator = try PowerLossSimulator(directory: directory, cloneRoot: cloneRoot, seed: seed,
                                               cutChance: 6 / max(events, 60) / 4, maxCuts: 16,
                                               progress: .init(start: start))
        PowerLoss.attach(simulator)
        defer { PowerLoss.detach(simulator) }
        let shared = WorkloadState(try Engine(directory: directory, options: options))

        @Sendable func writer(_ t: Int) {
            var rng = SplitMix64(seed: seed ^ UInt64(t + 1) &* 0x9E37_79B9)
            let history = histories[t]
            do {
                for _ in 0..<scenario.batchesPerThread {
                    var ops: [Op] = []
                    var batch = WriteBatch()
                    for _ in 0..<(1 + rng.below(6)) {
                        let r = rng.below(100)
                        let k = Keys.key(t, rng.below(Keys.keysPerThread))
                        if r < 70 {
                            let n = rng.chance(50) ? 1500 + rng.below(1500) : rng.below(300)
                            let v = (0..<n).map { UInt8(truncatingIfNeeded: $0 &+ history.batches.count &* 31) }
                            batch.put(k, v); ops.append(.put(k, v))
                        } else if r < 90 {
                            batch.delete(k); ops.append(.delete(k))
                        } else {
                            let other = Keys.key(t, rng.below(Keys.keysPerThread + 2))
                            let (a, b) = less(k, other) ? (k, other) : (other, k)
                            batch.deleteRange(from: a, to: b); ops.append(.deleteRange(a, b))
                        }
                    }
                    let count = history.batches.count + 1
                    let marker = Array(String(count).utf8)
                    batch.put(Keys.marker(t), marker)
                    history.batches.append(ops)
                    let synchronous = rng.chance(scenario.synchronousPerMille)
                    simulator.update { $0.begun[t] = count }
                    let e = shared.engine.withLock { $0 }
                    try e.write(batch, durability: synchronous ? .synchronous : .buffered)
                    simulator.update {
                        $0.acknowledged[t] = count
                        if synchronous { $0.durable[t] = count }
                    }
                    if rng.chance(scenario.syncPerMille) {
                        let acknowledged = simulator.currentProgress.acknowledged
                        try e.sync()
                        simulator.update { p in for u in 0..<threads { p.durable[u] = max(p.durable[u], acknowledged[u]) } }
                    }
                    if t == 0 && rng.chance(scenario.compactPerMille) { try e.compactAll() }
                    if rng.chance(scenario.reopenPerMille) {
                        try e.close()
                        simulator.update { $0.durable = $0.acknowledged }
                        try shared.engine.withLock { $0 = try Engine(directory: directory, options: options) }
                    }
                }
            } catch {
                shared.failures.withLock { $0.append("thread \(t): \(error)") }
            }
        }

        if threads == 1 {
            writer(0)
        } else {
            let group = DispatchGroup()
            for t in 0..<threads {
                group.enter()
                let thread = Thread {
                    writer(t)
                    group.leave()
                }
                thread.stackSize = 4 << 20
                thread.start()
            }
            group.wait()
        }
        try shared.engine.withLock { try $0.close() }
        simulator.update { $0.durable = $0.acknowledged }
        for f in shared.failures.withLock({ $0 }) { Issue.record("\(label): the workload failed: \(f)") }
        return simulator.allCuts
    }

    /// Opens the clone a cut left (under a simulator of its own, cutting recovery too) and checks
    /// it against the histories; returns the recovered batch counts and the recovery cuts checked.
    private func check(_ cut: PowerLossSimulator.Cut, histories: [ThreadHistory], seed: UInt64,
                       label: String, encrypted: Bool = false) -> (counts: [Int], recoveryCuts: Int)? {
        let threads = histories.count
        let options = Self.options(buffered: false, encrypted: encrypted)
        // A cut before the first manifest was durable leaves no store at all: opening creates an
        // empty one, and `compare` then requires that nothing was promised.
        _ = PowerLossSimulator.verifyClone(cut.directory, label: label, key: options.encryptionKey)
        let simulator: PowerLossSimulator
        let recovered: Recovered
        do {
            simulator = try PowerLossSimulator(directory: cut.directory, cloneRoot: cut.directory + "-recovery", seed: seed,
                                               cutChance: 1.0 / 40, maxCuts: 2, progress: cut.progress)
            PowerLoss.attach(simulator)
            defer { PowerLoss.detach(simulator) }
            let engine = try Engine(directory: cut.directory, options: options)
            defer { try? engine.close() }
            recovered = try Recovered(engine: engine, threads: threads)
        } catch {
            Issue.record("\(label): the clone does not open: \(error)")
            return nil
        }
        var ok = compare(recovered, histories: histories, lower: cut.progress.durable, upper: cut.progress.begun,
                         label: label)
        // Power cuts during that recovery: each must recover to the same state.
        let recoveryCuts = simulator.allCuts
        for r in recoveryCuts {
            defer { try? FileManager.default.removeItem(atPath: r.directory) }
            let rLabel = "\(label); then recovery cut \(r.number) at system call \(r.event) (after \(r.after))"
            do {
                let engine = try Engine(directory: r.directory, options: options)
                defer { try? engine.close() }
                let again = try Recovered(engine: engine, threads: threads)
                ok = compare(again, histories: histories, lower: recovered.counts, upper: recovered.counts,
                             label: rLabel) && ok
            } catch {
                Issue.record("\(rLabel): does not open: \(error)")
                ok = false
            }
        }
        return ok ? (recovered.counts, recoveryCuts.count) : nil
    }

    /// Checks that each thread's batches in `found` are its first n, with `lower[t] ≤ n ≤ upper[t]`.
    private func compare(_ found: Recovered, histories: [ThreadHistory], lower: [Int], upper: [Int],
                         label: String) -> Bool {
        var ok = true
        if !found.stray.isEmpty {
            Issue.record("\(label): keys no batch wrote: \(found.stray.prefix(5).map(show))")
            ok = false
        }
        for (t, history) in histories.enumerated() {
            let n = found.counts[t]
            if n < lower[t] {
                Issue.record("\(label): thread \(t) has \(n) batches; \(lower[t]) were promised durable (\(upper[t]) begun)")
                ok = false
                continue
            }
            if n > upper[t] {
                Issue.record("\(label): thread \(t) has \(n) batches, only \(upper[t]) had begun")
                ok = false
                continue
            }
            let expected = history.state(after: n)
            if found.states[t] != expected {
                let keys = Set(expected.keys).union(found.states[t].keys).sorted(by: less)
                let wrong = keys.filter { expected[$0] != found.states[t][$0] }.prefix(5).map {
                    "\(show($0)): \(found.states[t][$0].map { "\($0.count) bytes" } ?? "absent"), expected \(expected[$0].map { "\($0.count) bytes" } ?? "absent")"
                }
                Issue.record("\(label): thread \(t)'s keys are not those of its first \(n) batches: \(wrong)")
                ok = false
            }
        }
        return ok
    }
}
