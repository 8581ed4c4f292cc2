import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Randomized model-based tests of the whole engine through the public `Store` API: every read is
// checked against an in-memory reference, while flushes, compactions and close/reopen happen
// underneath. Plus a concurrency test of snapshot consistency with concurrent writers.

// MARK: - Deterministic randomness

// MARK: - Helpers

/// Bytewise order, shorter first on a shared prefix: the order the store promises for its keys.
private func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    let n = min(a.count, b.count)
    if n > 0 {
        let c = a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in memcmp(pa.baseAddress!, pb.baseAddress!, n) } }
        if c != 0 { return c < 0 ? -1 : 1 }
    }
    return a.count < b.count ? -1 : (a.count > b.count ? 1 : 0)
}

private func hex(_ bytes: [UInt8], max: Int = 24) -> String {
    let digits = "0123456789abcdef".map { $0 }
    var s = ""
    for b in bytes.prefix(max) {
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 15)])
    }
    if bytes.count > max { s += "…(\(bytes.count) bytes)" }
    return "[" + s + "]"
}

private func describe(_ value: [UInt8]?) -> String {
    guard let value else { return "nil" }
    return "\(value.count) bytes \(hex(value, max: 12))"
}

private func bound(_ b: [UInt8]?) -> String { b.map { hex($0) } ?? "nil" }

private struct KV: Equatable {
    var key: [UInt8]
    var value: [UInt8]
}

/// Removes a directory, retrying a few times: files a store's background work deletes while the
/// removal walks the directory make it fail.
private func removeDirectory(_ url: URL) {
    for _ in 0..<20 {
        if (try? FileManager.default.removeItem(at: url)) != nil || !FileManager.default.fileExists(atPath: url.path) { return }
        usleep(20_000)
    }
}

private func temporaryStoreDirectory(_ label: String) -> URL {
    FileManager.default.temporaryDirectory
        .appendingPathComponent("strata-model-\(label)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
}

// MARK: - Reference model

/// The reference: a sorted array of the live keys plus a dictionary of their values.
private struct ReferenceModel {
    private(set) var keys: [[UInt8]] = []
    private(set) var values: [[UInt8]: [UInt8]] = [:]

    var count: Int { keys.count }

    /// The index of the first key `>= key`.
    func lowerBound(_ key: [UInt8]) -> Int {
        var lo = 0, hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if compareBytes(keys[mid], key) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    func get(_ key: [UInt8]) -> [UInt8]? { values[key] }

    mutating func put(_ key: [UInt8], _ value: [UInt8]) {
        if values.updateValue(value, forKey: key) == nil { keys.insert(key, at: lowerBound(key)) }
    }

    mutating func delete(_ key: [UInt8]) {
        if values.removeValue(forKey: key) != nil { keys.remove(at: lowerBound(key)) }
    }

    /// Removes `start <= k < end`; nothing when `start >= end`. Returns how many keys went.
    @discardableResult
    mutating func deleteRange(_ start: [UInt8], _ end: [UInt8]) -> Int {
        guard compareBytes(start, end) < 0 else { return 0 }
        let i = lowerBound(start), j = lowerBound(end)
        guard i < j else { return 0 }
        for k in keys[i..<j] { values[k] = nil }
        keys.removeSubrange(i..<j)
        return j - i
    }

    func scan(from: [UInt8]?, to: [UInt8]?, reverse: Bool, limit: Int) -> [KV] {
        let i = from.map { lowerBound($0) } ?? 0
        let j = to.map { lowerBound($0) } ?? keys.count
        guard i < j, limit > 0 else { return [] }
        let n = min(limit, j - i)
        var out: [KV] = []
        out.reserveCapacity(n)
        for m in 0..<n {
            let k = reverse ? keys[j - 1 - m] : keys[i + m]
            out.append(KV(key: k, value: values[k]!))
        }
        return out
    }
}

// MARK: - The randomized driver

/// One operation of the history kept for failure reports.
private enum Step: CustomStringConvertible {
    enum BatchOp {
        case put([UInt8], Int)
        case delete([UInt8])
        case deleteRange([UInt8], [UInt8])
    }

    case batch([BatchOp], synchronous: Bool)
    case put([UInt8], Int)
    case delete([UInt8])
    case get([UInt8])
    case scan(from: [UInt8]?, to: [UInt8]?, reverse: Bool, limit: Int)
    case cursor(from: [UInt8]?, to: [UInt8]?, reverse: Bool, steps: Int)
    case snapshotTake(Int)
    case snapshotDrop(Int)
    case snapshotGet(Int, [UInt8])
    case snapshotScan(Int, from: [UInt8]?, to: [UInt8]?, reverse: Bool, limit: Int)
    case compact
    case reopen

    var description: String {
        switch self {
        case .batch(let ops, let sync):
            let parts = ops.map { op -> String in
                switch op {
                case .put(let k, let n): return "put \(hex(k)) (\(n) bytes)"
                case .delete(let k): return "delete \(hex(k))"
                case .deleteRange(let s, let e): return "deleteRange \(hex(s))..<\(hex(e))"
                }
            }
            return "batch\(sync ? " (synchronous)" : "") { " + parts.joined(separator: "; ") + " }"
        case .put(let k, let n): return "put \(hex(k)) (\(n) bytes)"
        case .delete(let k): return "delete \(hex(k))"
        case .get(let k): return "get \(hex(k))"
        case .scan(let f, let t, let r, let l):
            return "scan from \(bound(f)) to \(bound(t)) reverse \(r) limit \(l == .max ? "max" : String(l))"
        case .cursor(let f, let t, let r, let n):
            return "cursor from \(bound(f)) to \(bound(t)) reverse \(r), \(n) steps"
        case .snapshotTake(let id): return "take snapshot #\(id)"
        case .snapshotDrop(let id): return "drop snapshot #\(id)"
        case .snapshotGet(let id, let k): return "snapshot #\(id) get \(hex(k))"
        case .snapshotScan(let id, let f, let t, let r, let l):
            return "snapshot #\(id) scan from \(bound(f)) to \(bound(t)) reverse \(r) limit \(l == .max ? "max" : String(l))"
        case .compact: return "compact()"
        case .reopen: return "close + reopen"
        }
    }
}

private struct ModelFailure: Error, CustomStringConvertible {
    var description: String
}

/// A write of ``ModelRun`` as its observer is told of it.
enum ModelWriteEvent {
    /// A write is about to start; the reference already holds its result.
    case writing(synchronous: Bool)
    /// The write returned.
    case wrote
    /// The store was closed (every write acknowledged before is durable).
    case closed
}

/// Runs one seed: `operations` random operations against a store and the reference model.
final class ModelRun {
    let seed: UInt64
    var rng: SplitMix64
    let directory: URL
    let options: StoreOptions
    var store: Store
    fileprivate var model = ReferenceModel()
    /// Told of every write (the power-loss tests journal the reference's states from it).
    var observer: ((ModelWriteEvent) -> Void)?
    /// Sorted key pool: most keys come from here so that writes and reads collide.
    let pool: [[UInt8]]
    fileprivate var snapshots: [(id: Int, snapshot: StoreSnapshot, model: ReferenceModel)] = []
    var nextSnapshotID = 0
    var op = 0
    fileprivate var history: [(op: Int, step: Step)] = []
    var historyNext = 0
    static let historyLength = 20

    // Non-vacuity statistics.
    var readsChecked = 0
    var snapshotReadsChecked = 0
    var rangeDeletedKeys = 0
    var compactions = 0
    var reopens = 0
    var maxRuns = 0
    var sawRunOfSeveralSegments = false
    var maxLiveKeys = 0

    static let prefixes: [[UInt8]] = [
        [], Array("a".utf8), Array("ab".utf8), Array("abc".utf8), Array("b".utf8), [0x00], [0xFF], [0xFF, 0xFF],
        Array("key/".utf8), Array("key/user/".utf8), [0x61, 0x00],
    ]
    static let alphabet: [UInt8] = [0x00, 0x01, 0x2F, 0x30, 0x31, 0x61, 0x62, 0x63, 0x7F, 0x80, 0xFE, 0xFF]

    init(seed: UInt64, directory: URL) throws {
        self.seed = seed
        self.rng = SplitMix64(seed: seed)
        self.directory = directory
        var o = StoreOptions(durability: .buffered)
        o.memtableSize = 64 << 10
        o.segmentSize = 64 << 10
        o.blockSize = 1024
        // Vary what the seed does not otherwise reach: no block cache, no bloom filters.
        o.cacheSize = seed % 2 == 0 ? 256 << 10 : 0
        o.bloomBitsPerKey = seed % 3 == 0 ? 0 : 10
        // Seen by a power-loss simulator when a test attaches one to the directory.
        o.fileSystem = PowerLoss.fileSystem
        self.options = o
        var set = Set<[UInt8]>()
        while set.count < 700 { set.insert(Self.randomKey(&rng)) }
        pool = set.sorted { compareBytes($0, $1) < 0 }
        store = try Store.open(at: directory, options: o)
    }

    static func randomKey(_ rng: inout SplitMix64) -> [UInt8] {
        var k = prefixes[rng.below(prefixes.count)]
        let length = rng.chance(40) ? 8 + rng.below(60) : rng.below(4)
        for _ in 0..<length { k.append(alphabet[rng.below(alphabet.count)]) }
        return k
    }

    // MARK: Random material

    func poolKey() -> [UInt8] { pool[rng.below(pool.count)] }

    /// A key from the pool most of the time, else a fresh random one (often absent).
    func someKey(poolPerMille: Int = 750) -> [UInt8] {
        rng.chance(poolPerMille) ? poolKey() : Self.randomKey(&rng)
    }

    func makeValue() -> [UInt8] {
        let r = rng.below(1000)
        let n = r < 100 ? 0 : r < 850 ? 1 + rng.below(40) : r < 975 ? 100 + rng.below(500) : 1024 + rng.below(3073)
        return makeValue(length: n)
    }

    func makeValue(length n: Int) -> [UInt8] {
        var v = [UInt8](repeating: 0, count: n)
        let x = rng.next() ^ (UInt64(op) << 24)
        v.withUnsafeMutableBufferPointer { p in
            for i in 0..<n { p[i] = UInt8(truncatingIfNeeded: (x >> UInt64((i & 7) << 3)) &+ UInt64(i >> 3)) }
        }
        return v
    }

    /// Range-deletion bounds: mostly a short stretch of the pool, sometimes inverted or empty,
    /// sometimes fresh keys (in either order).
    func rangeBounds() -> ([UInt8], [UInt8]) {
        if rng.chance(850) {
            let i = rng.below(pool.count)
            let j = min(pool.count - 1, i + rng.below(16))
            return rng.chance(80) ? (pool[j], pool[i]) : (pool[i], pool[j])
        }
        let s = Self.randomKey(&rng)
        if rng.chance(500) { return (s, s + [Self.alphabet[rng.below(Self.alphabet.count)]]) }
        return (s, Self.randomKey(&rng))
    }

    func scanBound() -> [UInt8]? { rng.chance(150) ? nil : someKey() }

    func scanBounds() -> ([UInt8]?, [UInt8]?) {
        let from = scanBound()
        if let from, rng.chance(600) {
            // Close to `from`, so that small limits still reach the end of the range sometimes.
            var i = 0, hi = pool.count
            while i < hi {
                let mid = (i + hi) / 2
                if compareBytes(pool[mid], from) < 0 { i = mid + 1 } else { hi = mid }
            }
            let j = i + rng.below(12)
            return (from, j < pool.count ? pool[j] : nil)
        }
        return (from, scanBound())
    }

    func scanLimit() -> Int {
        let r = rng.below(100)
        return r < 70 ? 1 + rng.below(8) : r < 92 ? 9 + rng.below(56) : (r < 95 ? 0 : .max)
    }

    // MARK: History and failures

    fileprivate func record(_ step: Step) {
        if history.count < Self.historyLength {
            history.append((op, step))
        } else {
            history[historyNext] = (op, step)
        }
        historyNext = (historyNext + 1) % Self.historyLength
    }

    fileprivate func failure(_ what: String) -> ModelFailure {
        var lines = ["model mismatch, seed \(seed), operation \(op): \(what)", "last operations (oldest first):"]
        let ordered = history.count < Self.historyLength ? history : Array(history[historyNext...] + history[..<historyNext])
        for h in ordered { lines.append("  #\(h.op) \(h.step)") }
        return ModelFailure(description: lines.joined(separator: "\n"))
    }

    func check(_ got: [UInt8]?, _ expected: [UInt8]?, _ what: @autoclosure () -> String) throws {
        readsChecked += 1
        if got != expected {
            throw failure("\(what()): got \(describe(got)), expected \(describe(expected))")
        }
    }

    fileprivate func check(_ got: [(key: [UInt8], value: [UInt8])], _ expected: [KV], _ what: @autoclosure () -> String) throws {
        readsChecked += 1
        let n = min(got.count, expected.count)
        for i in 0..<n where got[i].key != expected[i].key || got[i].value != expected[i].value {
            throw failure("\(what()): item \(i) is \(hex(got[i].key)) = \(describe(got[i].value)), expected \(hex(expected[i].key)) = \(describe(expected[i].value))")
        }
        if got.count != expected.count {
            let extra = got.count > n ? "first extra \(hex(got[n].key))" : "first missing \(hex(expected[n].key))"
            throw failure("\(what()): \(got.count) items, expected \(expected.count); \(extra)")
        }
    }

    // MARK: Operations

    func run(operations: Int) throws {
        var nextReopen = 2_000 + rng.below(3_000)
        while op < operations {
            op += 1
            do {
                if op == nextReopen {
                    try reopen()
                    nextReopen = op + 2_000 + rng.below(3_000)
                } else if rng.below(2_500) == 0 || op == operations / 2 {
                    try compact()
                } else {
                    try randomOperation()
                }
            } catch let e as ModelFailure {
                throw e
            } catch {
                throw failure("unexpected error: \(error)")
            }
            if op % 250 == 0 { sampleStatistics() }
        }
        try checkEverything("final state")
    }

    func randomOperation() throws {
        let r = rng.below(1000)
        switch r {
        case 0..<300: try writeBatch()
        case 300..<350:
            let k = poolKey(), v = makeValue()
            record(.put(k, v.count))
            model.put(k, v)
            observer?(.writing(synchronous: false))
            try store.put(k, v)
            observer?(.wrote)
        case 350..<380:
            let k = someKey(poolPerMille: 900)
            record(.delete(k))
            model.delete(k)
            observer?(.writing(synchronous: false))
            try store.delete(k)
            observer?(.wrote)
        case 380..<400: try bigBatch()
        case 400..<640:
            let k = someKey()
            record(.get(k))
            try check(try store.get(k), model.get(k), "get \(hex(k))")
        case 640..<850:
            let (from, to) = scanBounds()
            let reverse = rng.chance(500), limit = scanLimit()
            record(.scan(from: from, to: to, reverse: reverse, limit: limit))
            try check(try store.scan(from: from, to: to, reverse: reverse, limit: limit),
                      model.scan(from: from, to: to, reverse: reverse, limit: limit),
                      "scan from \(bound(from)) to \(bound(to)) reverse \(reverse) limit \(limit)")
        case 850..<890: try cursorWalk()
        case 890..<950: try snapshotRead()
        case 950..<975: try takeSnapshot()
        default:
            if !snapshots.isEmpty {
                let i = rng.below(snapshots.count)
                record(.snapshotDrop(snapshots[i].id))
                snapshots.remove(at: i)
            } else {
                try takeSnapshot()
            }
        }
    }

    func writeBatch() throws {
        var batch = WriteBatch()
        var ops: [Step.BatchOp] = []
        var used: [[UInt8]] = []
        let count = 1 + rng.below(8)
        var pendingInRange: ([UInt8], [UInt8])?
        for _ in 0..<count {
            let r = rng.below(100)
            if let (s, e) = pendingInRange, compareBytes(s, e) < 0, rng.chance(600) {
                // A put inside the range just deleted, in the same batch: the put must win.
                let lo = model.lowerBound(s)
                var k = s
                if lo < model.count, compareBytes(model.keys[lo], e) < 0 { k = model.keys[lo] }
                let v = makeValue()
                batch.put(k, v); model.put(k, v); ops.append(.put(k, v.count)); used.append(k)
                pendingInRange = nil
                continue
            }
            pendingInRange = nil
            if r < 15, !used.isEmpty {
                // Override an earlier operation of this batch on the same key.
                let k = used[rng.below(used.count)]
                if rng.chance(700) {
                    let v = makeValue()
                    batch.put(k, v); model.put(k, v); ops.append(.put(k, v.count))
                } else {
                    batch.delete(k); model.delete(k); ops.append(.delete(k))
                }
            } else if r < 65 {
                let k = poolKey(), v = makeValue()
                batch.put(k, v); model.put(k, v); ops.append(.put(k, v.count)); used.append(k)
            } else if r < 88 {
                let k = someKey(poolPerMille: 900)
                batch.delete(k); model.delete(k); ops.append(.delete(k)); used.append(k)
            } else {
                let (s, e) = rangeBounds()
                batch.deleteRange(from: s, to: e)
                rangeDeletedKeys += model.deleteRange(s, e)
                ops.append(.deleteRange(s, e))
                pendingInRange = (s, e)
            }
        }
        let synchronous = rng.below(400) == 0
        record(.batch(ops, synchronous: synchronous))
        observer?(.writing(synchronous: synchronous))
        try store.write(batch, durability: synchronous ? .synchronous : nil)
        observer?(.wrote)
    }

    /// Many medium-sized puts in one batch, so that memtables fill and flush often.
    func bigBatch() throws {
        var batch = WriteBatch()
        var ops: [Step.BatchOp] = []
        for _ in 0..<(10 + rng.below(30)) {
            let k = poolKey(), v = makeValue(length: 100 + rng.below(900))
            batch.put(k, v); model.put(k, v); ops.append(.put(k, v.count))
        }
        record(.batch(ops, synchronous: false))
        observer?(.writing(synchronous: false))
        try store.write(batch)
        observer?(.wrote)
    }

    func cursorWalk() throws {
        let (from, to) = scanBounds()
        let reverse = rng.chance(500)
        let steps = 1 + rng.below(12)
        record(.cursor(from: from, to: to, reverse: reverse, steps: steps))
        let expected = model.scan(from: from, to: to, reverse: reverse, limit: steps)
        let cursor = try store.cursor(from: from, to: to, reverse: reverse)
        let what = "cursor from \(bound(from)) to \(bound(to)) reverse \(reverse)"
        // Alternates the copying and the zero-copy step, so that both are checked against the model.
        for i in 0...steps {
            let pair: (key: [UInt8], value: [UInt8])?
            if i % 2 == 0 {
                pair = try cursor.next()
            } else {
                pair = try cursor.nextUnsafe { k, v in (key: Array(k), value: Array(v)) }
            }
            readsChecked += 1
            if i < expected.count {
                guard let (key, value) = pair else { throw failure("\(what): ended after \(i) items, expected \(hex(expected[i].key)) next") }
                if key != expected[i].key || value != expected[i].value {
                    throw failure("\(what): item \(i) is \(hex(key)) = \(describe(value)), expected \(hex(expected[i].key)) = \(describe(expected[i].value))")
                }
            } else if i == expected.count && expected.count < steps {
                if let (key, _) = pair { throw failure("\(what): item \(i) \(hex(key)) past the expected end (\(expected.count) items)") }
                if try cursor.next() != nil { throw failure("\(what): an ended cursor returned a pair") }
                break
            }
        }
    }

    func takeSnapshot() throws {
        let id = nextSnapshotID
        nextSnapshotID += 1
        record(.snapshotTake(id))
        let s = try store.snapshot()
        if snapshots.count >= 3 { snapshots.remove(at: rng.below(snapshots.count)) }
        snapshots.append((id, s, model))
    }

    func snapshotRead() throws {
        guard !snapshots.isEmpty else { return try takeSnapshot() }
        let (id, snapshot, frozen) = snapshots[rng.below(snapshots.count)]
        snapshotReadsChecked += 1
        if rng.chance(500) {
            let k = someKey()
            record(.snapshotGet(id, k))
            try check(try snapshot.get(k), frozen.get(k), "snapshot #\(id) get \(hex(k))")
        } else {
            let (from, to) = scanBounds()
            let reverse = rng.chance(500), limit = scanLimit()
            record(.snapshotScan(id, from: from, to: to, reverse: reverse, limit: limit))
            try check(try snapshot.scan(from: from, to: to, reverse: reverse, limit: limit),
                      frozen.scan(from: from, to: to, reverse: reverse, limit: limit),
                      "snapshot #\(id) scan from \(bound(from)) to \(bound(to)) reverse \(reverse) limit \(limit)")
        }
    }

    func compact() throws {
        record(.compact)
        try store.compact()
        compactions += 1
        let stats = store.statistics
        if stats.sortedRuns > 1 || stats.immutableMemtables != 0 {
            throw failure("after compact(): \(stats.sortedRuns) runs and \(stats.immutableMemtables) immutable memtables")
        }
        // Snapshots taken before the compaction must still read their state from the old files.
        for s in snapshots {
            let expected = s.model.scan(from: nil, to: nil, reverse: false, limit: 50)
            try check(try s.snapshot.scan(limit: 50), expected, "snapshot #\(s.id) first 50 after compact()")
        }
    }

    func reopen() throws {
        record(.reopen)
        snapshots.removeAll()
        try store.close()
        observer?(.closed)
        reopens += 1
        store = try Store.open(at: directory, options: options)
        try checkEverything("after reopen")
    }

    func checkEverything(_ when: String) throws {
        try check(try store.scan(), model.scan(from: nil, to: nil, reverse: false, limit: .max), "full scan \(when)")
        try check(try store.scan(reverse: true), model.scan(from: nil, to: nil, reverse: true, limit: .max),
                  "full reverse scan \(when)")
        for k in pool.prefix(50) { try check(try store.get(k), model.get(k), "get \(hex(k)) \(when)") }
    }

    /// A digest of key-value pairs in key order; `referenceDigest` is that of the reference.
    static func digest(_ pairs: [(key: [UInt8], value: [UInt8])]) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ bytes: [UInt8]) {
            h = (h ^ UInt64(bytes.count)) &* 0x1000_0000_01B3
            for b in bytes { h = (h ^ UInt64(b)) &* 0x1000_0000_01B3 }
        }
        for p in pairs {
            mix(p.key)
            mix(p.value)
        }
        return h
    }

    var referenceDigest: UInt64 {
        Self.digest(model.scan(from: nil, to: nil, reverse: false, limit: .max).map { ($0.key, $0.value) })
    }

    var referenceCount: Int { model.count }

    func sampleStatistics() {
        let stats = store.statistics
        maxRuns = max(maxRuns, stats.sortedRuns)
        if stats.segments > stats.sortedRuns { sawRunOfSeveralSegments = true }
        maxLiveKeys = max(maxLiveKeys, model.count)
    }

    func finish() {
        snapshots.removeAll()
        try? store.close()
        removeDirectory(directory)
    }
}

// MARK: - Concurrency helpers

/// Messages from worker threads, collected for the test to report.
private final class FailureLog: Sendable {
    private let messages = Mutex<[String]>([])

    func add(_ message: String) { messages.withLock { if $0.count < 20 { $0.append(message) } } }

    var all: [String] { messages.withLock { $0 } }
}

/// Runs each body on its own thread and resumes when all have finished.
private func runOnThreads(_ bodies: [@Sendable () -> Void]) async {
    let group = DispatchGroup()
    for body in bodies {
        group.enter()
        let thread = Thread {
            body()
            group.leave()
        }
        thread.stackSize = 4 << 20
        thread.start()
    }
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        group.notify(queue: .global()) { c.resume() }
    }
}

private final class SharedCounters: Sendable {
    /// Writers finished.
    let done = Atomic<Int>(0)
    let snapshotsChecked = Atomic<Int>(0)
    let maxPairsSeen = Atomic<Int>(0)
}

private func pairKey(_ w: Int, _ p: Int, _ half: String) -> [UInt8] { Array("w\(w)/p\(p < 10 ? "0" : "")\(p)/\(half)".utf8) }

private func counterKey(_ w: Int) -> [UInt8] { Array("w\(w)/counter".utf8) }

private func be64(_ x: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: x >> (56 - 8 * UInt64($0))) } }

private func readBE64(_ b: [UInt8]) -> UInt64? {
    guard b.count >= 8 else { return nil }
    return b.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
}

// MARK: - Tests

@Suite struct EngineModelTests {
    /// Four seeds of 26,000 operations each: 104,000 operations, every read checked.
    @Test(arguments: [UInt64(0x5EED_0001), 0x5EED_0002, 0x5EED_0003, 0xC0FF_EE00_D15C_0123])
    func randomOperationsMatchTheReferenceModel(seed: UInt64) throws {
        let directory = temporaryStoreDirectory("seed\(seed)")
        let run = try ModelRun(seed: seed, directory: directory)
        defer { run.finish() }
        try run.run(operations: 26_000)
        // The run must have exercised what it claims to: flushes to several runs, runs of several
        // segments, compactions, reopens, range deletions, snapshots.
        #expect(run.op == 26_000)
        #expect(run.readsChecked > 10_000)
        #expect(run.snapshotReadsChecked > 500)
        #expect(run.rangeDeletedKeys > 100)
        #expect(run.compactions >= 2)
        #expect(run.reopens >= 4)
        #expect(run.maxRuns >= 3, "flushes should leave several sorted runs at times")
        #expect(run.sawRunOfSeveralSegments, "compaction should write runs of several segments")
        #expect(run.maxLiveKeys > 200)
    }

    /// Writers commit pairs of keys in single batches while readers check snapshots: a snapshot
    /// never shows half a batch, never goes back in time, and reads the same through `get`,
    /// forward and reverse scans.
    @Test func concurrentWritersAndSnapshotReaders() async throws {
        let directory = temporaryStoreDirectory("concurrent")
        defer { removeDirectory(directory) }
        var options = StoreOptions(durability: .buffered)
        options.memtableSize = 64 << 10
        options.segmentSize = 64 << 10
        options.blockSize = 1024
        options.cacheSize = 128 << 10
        let store = try await Store.open(at: directory, options: options)
        defer { try? store.close() }

        let writers = 3, batchesPerWriter = 3_000, pairs = 50
        let failures = FailureLog()
        let counters = SharedCounters()

        var bodies: [@Sendable () -> Void] = []
        for w in 0..<writers {
            bodies.append {
                defer { counters.done.add(1, ordering: .releasing) }
                var rng = SplitMix64(seed: 0xC0C0 + UInt64(w))
                for i in 0..<batchesPerWriter {
                    var batch = WriteBatch()
                    // Value: the batch number, then filler so that memtables fill and flush.
                    let value = be64(UInt64(i)) + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 40 + rng.below(200))
                    let p = i % pairs
                    batch.put(pairKey(w, p, "a"), value)
                    batch.put(pairKey(w, p, "b"), value)
                    if i % 7 == 0 {
                        let q = (i + 25) % pairs
                        if rng.chance(500) {
                            batch.delete(pairKey(w, q, "a"))
                            batch.delete(pairKey(w, q, "b"))
                        } else {
                            batch.deleteRange(from: pairKey(w, q, ""), to: pairKey(w, q, "c"))
                        }
                    }
                    batch.put(counterKey(w), be64(UInt64(i)))
                    do {
                        try store.write(batch, durability: i % 300 == 0 ? .synchronous : nil)
                    } catch {
                        failures.add("writer \(w) batch \(i): \(error)")
                        return
                    }
                }
            }
        }

        for r in 0..<2 {
            bodies.append {
                var lastCounter = [UInt64?](repeating: nil, count: writers)
                var iteration = 0
                // A snapshot kept across many writes, flushes and compactions, with what it first read.
                var held: (snapshot: StoreSnapshot, contents: [(key: [UInt8], value: [UInt8])])?
                while counters.done.load(ordering: .acquiring) < writers {
                    iteration += 1
                    do {
                        if r == 1 && iteration == 40 { try store.compact() }
                        let snapshot = try store.snapshot()
                        let forward = try snapshot.scan()
                        var map: [[UInt8]: [UInt8]] = [:]
                        for (k, v) in forward { map[k] = v }
                        var seenPairs = 0
                        for w in 0..<writers {
                            // The counter never goes back, and the pair it names holds that batch.
                            let counter = map[counterKey(w)].flatMap(readBE64)
                            if let last = lastCounter[w], counter.map({ $0 < last }) ?? true {
                                failures.add("reader \(r): writer \(w) counter went from \(last) to \(String(describing: counter))")
                            }
                            lastCounter[w] = counter
                            for p in 0..<pairs {
                                let a = map[pairKey(w, p, "a")], b = map[pairKey(w, p, "b")]
                                if a != b {
                                    failures.add("reader \(r): writer \(w) pair \(p) torn: a \(describe(a)), b \(describe(b))")
                                }
                                if let a {
                                    seenPairs += 1
                                    let batchNumber = readBE64(a) ?? .max
                                    if counter.map({ batchNumber > $0 }) ?? true {
                                        failures.add("reader \(r): writer \(w) pair \(p) from batch \(batchNumber) but counter \(String(describing: counter))")
                                    }
                                }
                            }
                            if let c = counter {
                                let a = map[pairKey(w, Int(c) % pairs, "a")].flatMap(readBE64)
                                if a != c {
                                    failures.add("reader \(r): writer \(w) counter \(c) but its pair holds batch \(String(describing: a))")
                                }
                            }
                        }
                        _ = counters.maxPairsSeen.fetchAndMax(seenPairs)
                        // The same snapshot reads the same backwards and through get.
                        let backward = try snapshot.scan(reverse: true)
                        if backward.count != forward.count || !zip(backward.reversed(), forward).allSatisfy({ $0.key == $1.key && $0.value == $1.value }) {
                            failures.add("reader \(r): reverse scan (\(backward.count)) differs from forward scan (\(forward.count)) of one snapshot")
                        }
                        for w in 0..<writers {
                            let k = pairKey(w, iteration % pairs, "b")
                            if try snapshot.get(k) != map[k] {
                                failures.add("reader \(r): snapshot get \(String(decoding: k, as: UTF8.self)) differs from its scan")
                            }
                        }
                        if let (old, contents) = held, iteration % 10 == 0 {
                            let again = try old.scan()
                            if again.count != contents.count || !zip(again, contents).allSatisfy({ $0.key == $1.key && $0.value == $1.value }) {
                                failures.add("reader \(r): a held snapshot now reads \(again.count) pairs, first read \(contents.count)")
                            }
                            held = nil
                        }
                        if held == nil { held = (snapshot, forward) }
                        counters.snapshotsChecked.add(1, ordering: .relaxed)
                    } catch {
                        failures.add("reader \(r): \(error)")
                        return
                    }
                    if failures.all.count >= 5 { return }
                }
            }
        }

        await runOnThreads(bodies)
        let messages = failures.all
        #expect(messages.isEmpty, Comment(rawValue: "\(messages.count) failures:\n" + messages.joined(separator: "\n")))
        #expect(counters.snapshotsChecked.load(ordering: .relaxed) >= 4, "readers should have checked several snapshots")
        #expect(counters.maxPairsSeen.load(ordering: .relaxed) > 0)

        // After the writers: every counter is at its last batch.
        for w in 0..<writers {
            #expect(try await store.get(counterKey(w)).flatMap(readBE64) == UInt64(batchesPerWriter - 1))
        }
        #expect(store.statistics.flushes >= 5, "the writes should have flushed several times")
    }
}

private extension Atomic<Int> {
    /// Stores the maximum of the current value and `x`; returns the old value.
    func fetchAndMax(_ x: Int) -> Int {
        var old = load(ordering: .relaxed)
        while old < x {
            let (exchanged, original) = compareExchange(expected: old, desired: x, ordering: .relaxed)
            if exchanged { return original }
            old = original
        }
        return old
    }
}
