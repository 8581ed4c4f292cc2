import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Unit tests of the Engine layer's internal types: compaction picking, the merge of hand-built
// layers (memtables and sorted runs) through `MergedCursor` and `Snapshot`, the memtable's skiplist,
// memtable lookups at snapshot sequences and the write-batch encoding.

// MARK: - Deterministic randomness

// MARK: - Helpers

private func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in ByteComparison.compare(pa, pb) } }
}

/// Compares with an independent implementation (the one under test is `ByteComparison`).
private func lexLess(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

/// The index of the first element of `a` (partitioned by `isLeft`) for which `isLeft` is false.
private func partitionPoint<T>(_ a: [T], _ isLeft: (T) -> Bool) -> Int {
    var lo = 0, hi = a.count
    while lo < hi {
        let mid = (lo + hi) / 2
        if isLeft(a[mid]) { lo = mid + 1 } else { hi = mid }
    }
    return lo
}

/// An engine key in the key-value keyspace.
private func key(_ s: String) -> [UInt8] { Keyspace.keyValue.prefix + Array(s.utf8) }

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

private func show(_ k: [UInt8]) -> String {
    let p = Keyspace.keyValue.prefix
    if k.starts(with: p), let s = String(validating: k[p.count...], as: UTF8.self) { return "\"\(s)\"" }
    return k.map { String($0, radix: 16) }.joined(separator: " ")
}

/// A scratch directory for segment files, removed by `remove()`.
private struct ScratchDirectory {
    let path: String

    init(_ label: String) throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-engine-unit-\(label)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// One operation of a hand-built layer.
private enum LayerOp {
    case put([UInt8], [UInt8])
    case delete([UInt8])
    case deleteRange([UInt8], [UInt8])
}

/// A memtable holding `ops` with consecutive sequence numbers from `firstSequence`, applied as
/// one batch per operation (as the commit path would with single-operation batches).
private func makeMemtable(_ ops: [LayerOp], firstSequence: UInt64) throws -> Memtable {
    let m = Memtable(logNumber: 0)
    var seq = firstSequence
    for op in ops {
        var b = WriteBatch()
        switch op {
        case .put(let k, let v): b.putRaw(k, v)
        case .delete(let k): b.deleteRaw(k)
        case .deleteRange(let s, let e): b.deleteRangeRaw(s, e)
        }
        try b.operations.withUnsafeBytes { try m.apply(operations: $0, count: b.count, firstSequence: seq, file: "test") }
        seq += 1
    }
    return m
}

/// A sorted run written through `RunWriter` (as flushes and compactions write them): `records`
/// (any order, one per key) plus `tombstones`, split into several small segments.
private final class RunBuilder {
    let directory: ScratchDirectory
    private var nextNumber: UInt64 = 1

    init(_ directory: ScratchDirectory) { self.directory = directory }

    func run(records: [([UInt8], RecordKind, [UInt8])], tombstones: [([UInt8], [UInt8])] = [],
             targetFileSize: Int = 300) throws -> SortedRun {
        var options = SegmentWriterOptions()
        options.blockSize = 64
        let writer = RunWriter(directory: directory.path, fileSystem: .real, options: options, targetFileSize: targetFileSize) { [self] in
            defer { nextNumber += 1 }
            return nextNumber
        }
        writer.addRangeTombstones(tombstones.map { RangeTombstone(start: $0.0, end: $0.1) })
        for (k, kind, v) in records.sorted(by: { lexLess($0.0, $1.0) }) {
            try k.withUnsafeBytes { kp in try v.withUnsafeBytes { try writer.add(key: kp, kind: kind, value: $0) } }
        }
        let written = try writer.finish()
        return SortedRun(segments: try written.map {
            try SegmentReader(path: directory.path + "/" + FileNames.segment($0.number), number: $0.number, cache: nil, fileSystem: .real)
        })
    }
}

private struct Entry: Equatable, CustomStringConvertible {
    var key: [UInt8]
    var value: [UInt8]
    var description: String { "\(show(key))=\(String(decoding: value, as: UTF8.self))" }
}

private func collect(_ c: MergedCursor) throws -> [Entry] {
    var out: [Entry] = []
    while try c.next() {
        out.append(Entry(key: c.key, value: Array(c.value)))
        if out.count > 100_000 { break }
    }
    return out
}

private func scan(_ s: Snapshot, _ lower: [UInt8]? = nil, _ upper: [UInt8]? = nil, reverse: Bool = false) throws -> [Entry] {
    try collect(s.cursor(lower: lower, upper: upper, reverse: reverse))
}

private func entries(_ pairs: [(String, String)]) -> [Entry] {
    pairs.map { Entry(key: key($0.0), value: bytes($0.1)) }
}

private struct Operation: Equatable {
    var op: UInt8
    var key: [UInt8]
    var second: [UInt8]
}

private func decode(_ b: WriteBatch, file: String = "test.log", offset: Int = 0) throws -> [Operation] {
    try decode(b.operations, count: b.count, file: file, offset: offset)
}

private func decode(_ encoded: [UInt8], count: Int, file: String = "test.log", offset: Int = 0) throws -> [Operation] {
    var out: [Operation] = []
    try encoded.withUnsafeBytes { p in
        try WriteBatch.forEachOperation(in: p, count: count, file: file, offset: offset) { op, k, s in
            out.append(Operation(op: op.rawValue, key: Array(k), second: Array(s)))
        }
    }
    return out
}

private func isCorrupted(_ error: any Error, file: String, offset: Int) -> Bool {
    if case StrataError.corrupted(let f, let o, _) = error { return f == file && o == offset }
    return false
}

// MARK: - Tests

@Suite struct EngineUnitTests {
    // MARK: Compaction picking

    @Test func pickCompactionNeedsTriggerManyRuns() {
        #expect(Engine.pickCompaction(runSizes: [], trigger: 4, ratio: 1.2) == nil)
        #expect(Engine.pickCompaction(runSizes: [1, 1, 1], trigger: 4, ratio: 1.2) == nil)
        #expect(Engine.pickCompaction(runSizes: [1, 1, 1, 1], trigger: 5, ratio: 1.2) == nil)
        #expect(Engine.pickCompaction(runSizes: [1, 1, 1, 1], trigger: 4, ratio: 1.2) != nil)
    }

    @Test func pickCompactionTakesRunsWithinTheSizeRatio() {
        // Equal sizes: all of them.
        #expect(Engine.pickCompaction(runSizes: [10, 10, 10, 10], trigger: 4, ratio: 1.2) == 0..<4)
        // A big old run is left alone: 100 > 1.2 × (10 + 10 + 10).
        #expect(Engine.pickCompaction(runSizes: [10, 10, 10, 100], trigger: 4, ratio: 1.2) == 0..<3)
        // Exactly at the ratio joins: 12 <= 1.2 × 10; then 26.4 <= 1.2 × 22.
        #expect(Engine.pickCompaction(runSizes: [10, 12, 26, 1000], trigger: 4, ratio: 1.2) == 0..<3)
        // A bigger newest run takes smaller older ones.
        #expect(Engine.pickCompaction(runSizes: [100, 1, 1, 1, 1000], trigger: 4, ratio: 1.2) == 0..<4)
        // Stops at the first run over the ratio even if later ones would fit.
        #expect(Engine.pickCompaction(runSizes: [10, 10, 100, 1, 1], trigger: 4, ratio: 1.2) == 0..<2)
        // A larger ratio takes more.
        #expect(Engine.pickCompaction(runSizes: [10, 10, 100, 1000], trigger: 4, ratio: 5) == 0..<3)
    }

    @Test func pickCompactionFallsBackToMergingTheNewestBelowTheTrigger() {
        // Every run is much larger than the ones before it: merge the newest down to trigger - 1 runs.
        #expect(Engine.pickCompaction(runSizes: [1, 10, 100, 1000], trigger: 4, ratio: 1.2) == 0..<2)
        #expect(Engine.pickCompaction(runSizes: [1, 10, 100, 1000, 10_000, 100_000], trigger: 4, ratio: 1.2) == 0..<4)
        #expect(Engine.pickCompaction(runSizes: [5, 100], trigger: 2, ratio: 1.2) == 0..<2)
    }

    @Test func pickCompactionInvariantsOnRandomSizes() {
        var rng = SplitMix64(seed: 0xC0_4AC7)
        for _ in 0..<2_000 {
            let trigger = 2 + rng.below(6)
            let count = rng.below(12)
            let sizes = (0..<count).map { _ in UInt64(1 + rng.below(rng.chance(500) ? 100 : 100_000)) }
            let ratio = [1.0, 1.2, 2.0][rng.below(3)]
            let picked = Engine.pickCompaction(runSizes: sizes, trigger: trigger, ratio: ratio)
            guard count >= trigger else {
                #expect(picked == nil, "sizes \(sizes) trigger \(trigger)")
                continue
            }
            guard let picked else {
                Issue.record("no compaction picked for \(sizes) trigger \(trigger)")
                continue
            }
            // Consecutive newest runs, at least two, and the store ends with fewer runs than the trigger
            // or the ratio rule held for every taken run.
            #expect(picked.lowerBound == 0 && picked.count >= 2 && picked.upperBound <= count, "\(sizes) → \(picked)")
            var accumulated = Double(sizes[0])
            var byRatio = true
            for i in 1..<picked.upperBound {
                if Double(sizes[i]) > accumulated * ratio { byRatio = false }
                accumulated += Double(sizes[i])
            }
            #expect(byRatio || count - picked.count + 1 < trigger, "\(sizes) trigger \(trigger) → \(picked)")
            if byRatio && picked.upperBound < count {
                // Maximal: the next run does not fit the ratio.
                #expect(Double(sizes[picked.upperBound]) > accumulated * ratio, "\(sizes) → \(picked) is not maximal")
            }
        }
    }

    // MARK: Merging layers

    @Test func newestLayerWins() throws {
        let dir = try ScratchDirectory("newest")
        defer { dir.remove() }
        let runs = RunBuilder(dir)
        let older = try runs.run(records: [(key("a"), .value, bytes("r1")), (key("c"), .value, bytes("r1")),
                                           (key("d"), .value, bytes("r1"))])
        let newer = try runs.run(records: [(key("a"), .value, bytes("r0")), (key("c"), .value, bytes("r0"))])
        let m1 = try makeMemtable([.put(key("a"), bytes("m1")), .put(key("b"), bytes("m1"))], firstSequence: 1)
        let m0 = try makeMemtable([.put(key("a"), bytes("m0"))], firstSequence: 10)
        let s = Snapshot(sequence: .max, memtables: [m0, m1], version: Version(runs: [newer, older]))

        let expected = entries([("a", "m0"), ("b", "m1"), ("c", "r0"), ("d", "r1")])
        #expect(try scan(s) == expected)
        #expect(try scan(s, reverse: true) == expected.reversed())
        for e in expected { #expect(try s.get(e.key) == e.value, "get \(e)") }
        #expect(try s.get(key("e")) == nil)

        // At a sequence before the newest memtable's write, the older memtable wins.
        let early = Snapshot(sequence: 5, memtables: [m0, m1], version: Version(runs: [newer, older]))
        #expect(try early.get(key("a")) == bytes("m1"))
        #expect(try scan(early) == entries([("a", "m1"), ("b", "m1"), ("c", "r0"), ("d", "r1")]))
    }

    @Test func pointTombstonesHideOlderValues() throws {
        let dir = try ScratchDirectory("tombstones")
        defer { dir.remove() }
        let runs = RunBuilder(dir)
        let older = try runs.run(records: [(key("a"), .value, bytes("r1")), (key("c"), .value, bytes("r1")),
                                           (key("e"), .value, bytes("r1")), (key("f"), .value, bytes("r1"))])
        let newer = try runs.run(records: [(key("c"), .tombstone, []), (key("f"), .tombstone, [])])
        let m = try makeMemtable([.delete(key("a")), .put(key("f"), bytes("m")), .delete(key("x"))], firstSequence: 1)
        let s = Snapshot(sequence: .max, memtables: [m], version: Version(runs: [newer, older]))

        let expected = entries([("e", "r1"), ("f", "m")])
        #expect(try scan(s) == expected)
        #expect(try scan(s, reverse: true) == expected.reversed())
        #expect(try s.get(key("a")) == nil)
        #expect(try s.get(key("c")) == nil)
        #expect(try s.get(key("e")) == bytes("r1"))
        #expect(try s.get(key("f")) == bytes("m"))
        #expect(try s.get(key("x")) == nil)

        // With tombstones kept (as a flush or compaction reads), they show up as records.
        let c = MergedCursor(memtables: [m], runs: [newer, older], sequence: .max, lower: nil, upper: nil,
                             reverse: false, keepTombstones: true)
        var kinds: [String] = []
        while try c.next() { kinds.append("\(show(c.key)):\(c.kind == .tombstone ? "del" : "put")") }
        #expect(kinds == ["\"a\":del", "\"c\":del", "\"e\":put", "\"f\":put", "\"x\":del"])
    }

    @Test func memtableRangeTombstoneHidesOlderLayersAndEarlierPutsOnly() throws {
        let dir = try ScratchDirectory("memtable-range")
        defer { dir.remove() }
        let runs = RunBuilder(dir)
        let run = try runs.run(records: ["a", "b", "c", "d", "e"].map { (key($0), .value, bytes("run")) })
        let older = try makeMemtable([.put(key("a2"), bytes("older")), .put(key("b"), bytes("older"))], firstSequence: 1)
        // seq 10: put b; seq 11: delete [a, d); seq 12: put c.
        let m = try makeMemtable([.put(key("b"), bytes("before")), .deleteRange(key("a"), key("d")),
                                  .put(key("c"), bytes("after"))], firstSequence: 10)
        let version = Version(runs: [run])

        func check(_ sequence: UInt64, _ expected: [Entry], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let s = Snapshot(sequence: sequence, memtables: [m, older], version: version)
            #expect(try scan(s) == expected, "sequence \(sequence)", sourceLocation: sourceLocation)
            #expect(try scan(s, reverse: true) == expected.reversed(), "sequence \(sequence) reverse", sourceLocation: sourceLocation)
            for k in ["a", "a2", "b", "c", "d", "e", "z"] {
                let want = expected.first { $0.key == key(k) }?.value
                #expect(try s.get(key(k)) == want, "sequence \(sequence) get \(k)", sourceLocation: sourceLocation)
            }
        }
        try check(9, entries([("a", "run"), ("a2", "older"), ("b", "older"), ("c", "run"), ("d", "run"), ("e", "run")]))
        try check(10, entries([("a", "run"), ("a2", "older"), ("b", "before"), ("c", "run"), ("d", "run"), ("e", "run")]))
        // The deletion hides the run, the older memtable and the put before it; the end is exclusive.
        try check(11, entries([("d", "run"), ("e", "run")]))
        // The put after it in the same memtable is visible.
        try check(12, entries([("c", "after"), ("d", "run"), ("e", "run")]))
        try check(.max, entries([("c", "after"), ("d", "run"), ("e", "run")]))

        // Bounds inside and across the deleted range.
        let s = Snapshot(sequence: .max, memtables: [m, older], version: version)
        #expect(try scan(s, key("b"), key("d")) == entries([("c", "after")]))
        #expect(try scan(s, key("b"), key("d"), reverse: true) == entries([("c", "after")]))
        #expect(try scan(s, key("a"), key("c")).isEmpty)
        #expect(try scan(s, key("a"), key("c"), reverse: true).isEmpty)
        #expect(try scan(s, key("c"), key("e"), reverse: true) == entries([("d", "run"), ("c", "after")]))
    }

    @Test func runRangeTombstonesHideOlderRunsOnly() throws {
        let dir = try ScratchDirectory("run-range")
        defer { dir.remove() }
        let runs = RunBuilder(dir)
        let oldest = try runs.run(records: ["a", "b", "c", "d", "e"].map { (key($0), .value, bytes("r2")) })
        // The middle run deletes [a, d) of the oldest and holds its own b, which its tombstone must not hide.
        let middle = try runs.run(records: [(key("b"), .value, bytes("r1"))], tombstones: [(key("a"), key("d"))])
        // The newest run writes c again: a newer run is not hidden by an older run's tombstone.
        let newest = try runs.run(records: [(key("c"), .value, bytes("r0"))])
        // A newer memtable put inside the range is visible too.
        let m = try makeMemtable([.put(key("a"), bytes("m"))], firstSequence: 1)
        let s = Snapshot(sequence: .max, memtables: [m], version: Version(runs: [newest, middle, oldest]))

        let expected = entries([("a", "m"), ("b", "r1"), ("c", "r0"), ("d", "r2"), ("e", "r2")])
        #expect(try scan(s) == expected)
        #expect(try scan(s, reverse: true) == expected.reversed())
        for e in expected { #expect(try s.get(e.key) == e.value, "get \(e)") }

        // Without the newer layers the range is empty apart from the run's own record.
        let s2 = Snapshot(sequence: .max, memtables: [], version: Version(runs: [middle, oldest]))
        #expect(try scan(s2) == entries([("b", "r1"), ("d", "r2"), ("e", "r2")]))
        #expect(try s2.get(key("a")) == nil)
        #expect(try s2.get(key("c")) == nil)
        #expect(try scan(s2, key("a"), key("c"), reverse: true) == entries([("b", "r1")]))
    }

    /// Random layers against a reference that applies them oldest first: every scan, forward and
    /// reverse, within random bounds `[lower, upper)`, and every get.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func mergedCursorMatchesReferenceOnRandomLayers(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0x1A7E_0000 + seed)
        let dir = try ScratchDirectory("random-layers-\(seed)")
        defer { dir.remove() }
        let builder = RunBuilder(dir)
        let names = (0..<40).map { String(format: "k%02d", $0) } + ["", "k", "k05x", "k1", "k39\u{7F}"]
        func randomKey() -> [UInt8] { key(names[rng.below(names.count)]) }
        func randomValue() -> [UInt8] { bytes("v\(rng.below(1000))") + [UInt8](repeating: 0x41, count: rng.below(3) == 0 ? rng.below(300) : 0) }

        // The reference state after each layer, oldest layer first.
        var state: [[UInt8]: [UInt8]] = [:]
        func deleteRange(_ s: [UInt8], _ e: [UInt8]) {
            for k in state.keys where compareBytes(s, k) <= 0 && compareBytes(k, e) < 0 { state[k] = nil }
        }
        var runs: [SortedRun] = []
        for _ in 0..<(1 + rng.below(4)) {
            var records: [[UInt8]: (RecordKind, [UInt8])] = [:]
            for _ in 0..<rng.below(30) { records[randomKey()] = rng.chance(750) ? (.value, randomValue()) : (.tombstone, []) }
            var tombstones: [([UInt8], [UInt8])] = []
            for _ in 0..<rng.below(3) {
                let a = randomKey(), b = randomKey()
                tombstones.append(compareBytes(a, b) <= 0 ? (a, b) : (b, a))
            }
            // A run's tombstones hide older runs, then its own records apply.
            for (s, e) in tombstones { deleteRange(s, e) }
            for (k, r) in records { state[k] = r.0 == .value ? r.1 : nil }
            runs.insert(try builder.run(records: records.map { ($0.key, $0.value.0, $0.value.1) }, tombstones: tombstones,
                                        targetFileSize: 200 + rng.below(600)), at: 0)
        }
        // Memtables: operations with increasing sequence numbers; snapshots at several sequences.
        var memtables: [Memtable] = []
        var memtableOps: [(UInt64, LayerOp)] = []
        var sequence: UInt64 = 1
        for _ in 0..<(1 + rng.below(3)) {
            var ops: [LayerOp] = []
            for _ in 0..<rng.below(25) {
                let r = rng.below(100)
                if r < 60 {
                    ops.append(.put(randomKey(), randomValue()))
                } else if r < 80 {
                    ops.append(.delete(randomKey()))
                } else {
                    ops.append(.deleteRange(randomKey(), randomKey()))
                }
            }
            memtables.insert(try makeMemtable(ops, firstSequence: sequence), at: 0)
            for op in ops {
                memtableOps.append((sequence, op))
                sequence += 1
            }
        }
        let version = Version(runs: runs)
        let bounds: [[UInt8]?] = [nil] + names.map { key($0) } + [key("k05"), key("k2"), key("zz"), Keyspace.keyValue.prefix]

        for snapshotSequence in [0, sequence / 3, sequence / 2, sequence - 1, UInt64.max] {
            var expectedState = state
            for (seq, op) in memtableOps where seq <= snapshotSequence {
                switch op {
                case .put(let k, let v): expectedState[k] = v
                case .delete(let k): expectedState[k] = nil
                case .deleteRange(let s, let e):
                    for k in expectedState.keys where compareBytes(s, k) <= 0 && compareBytes(k, e) < 0 { expectedState[k] = nil }
                }
            }
            let all = expectedState.map { Entry(key: $0.key, value: $0.value) }.sorted { lexLess($0.key, $1.key) }
            let snapshot = Snapshot(sequence: snapshotSequence, memtables: memtables, version: version)
            for name in names {
                let k = key(name)
                #expect(try snapshot.get(k) == expectedState[k], "seed \(seed) sequence \(snapshotSequence) get \(name)")
            }
            for _ in 0..<40 {
                let lower = bounds[rng.below(bounds.count)], upper = bounds[rng.below(bounds.count)]
                let expected = all.filter { e in
                    (lower.map { !lexLess(e.key, $0) } ?? true) && (upper.map { lexLess(e.key, $0) } ?? true)
                }
                let forward = try scan(snapshot, lower, upper)
                let backward = try scan(snapshot, lower, upper, reverse: true)
                let what = "seed \(seed) sequence \(snapshotSequence) [\(lower.map(show) ?? "nil"), \(upper.map(show) ?? "nil"))"
                #expect(forward == expected, "\(what) forward")
                #expect(backward == expected.reversed(), "\(what) reverse")
            }
        }
    }

    // MARK: ArenaSkipList

    /// Brute-force reference entries in list order: key ascending, sequence descending.
    private struct ListEntry: Equatable {
        var key: [UInt8]
        var sequence: UInt64
        var kind: UInt8
        var value: [UInt8]

        static func inOrder(_ a: ListEntry, _ b: ListEntry) -> Bool {
            a.key != b.key ? lexLess(a.key, b.key) : a.sequence > b.sequence
        }
    }

    private static func entry(_ n: ArenaSkipList.Node) -> ListEntry {
        ListEntry(key: Array(ArenaSkipList.key(n)), sequence: ArenaSkipList.sequence(n), kind: ArenaSkipList.kind(n),
                  value: Array(ArenaSkipList.value(n)))
    }

    private static func walk(_ list: ArenaSkipList) -> [ListEntry] {
        var out: [ListEntry] = []
        var n = list.first
        while let x = n {
            out.append(entry(x))
            n = ArenaSkipList.next(x, 0)
        }
        return out
    }

    /// Inserts in batches sorted in list order with `afterPrevious` (the memtable's path), mixed
    /// with single random inserts, give the same list as the reference, and every level stays
    /// sorted (checked through seeks, which use the upper levels).
    @Test func skipListOrderedBatchInsertsWithAfterPrevious() {
        var rng = SplitMix64(seed: 0x5C1C)
        let list = ArenaSkipList()
        var reference: [ListEntry] = []
        var sequence: UInt64 = 0
        func randomKey() -> [UInt8] { (0..<1 + rng.below(6)).map { _ in UInt8(truncatingIfNeeded: rng.below(8) * 37) } }
        for round in 0..<400 {
            var batch: [ListEntry] = []
            for _ in 0..<(round % 3 == 0 ? 1 : 1 + rng.below(40)) {
                sequence += 1
                batch.append(ListEntry(key: randomKey(), sequence: sequence, kind: UInt8(sequence % 2), value: Array("\(sequence)".utf8)))
            }
            batch.sort(by: ListEntry.inOrder)
            for (i, e) in batch.enumerated() {
                e.key.withUnsafeBytes { kp in e.value.withUnsafeBytes { vp in
                    list.insert(key: kp, sequence: e.sequence, kind: e.kind, value: vp, afterPrevious: i > 0)
                } }
            }
            reference.append(contentsOf: batch)
        }
        reference.sort(by: ListEntry.inOrder)
        #expect(Self.walk(list) == reference)
        for e in reference.shuffled(using: &rng).prefix(500) {
            let found = e.key.withUnsafeBytes { list.seek($0, sequence: e.sequence) }.map(Self.entry)
            #expect(found == e)
        }
    }

    @Test func skipListOfNothing() {
        let list = ArenaSkipList()
        #expect(list.first == nil)
        #expect(list.last == nil)
        #expect(bytes("a").withUnsafeBytes { list.seek($0, sequence: .max) } == nil)
        #expect(bytes("a").withUnsafeBytes { list.lastBefore($0) } == nil)
        #expect(list.memoryUsage == 0)
    }

    @Test func skipListOrderSeekLastBeforeAndLast() {
        var rng = SplitMix64(seed: 0x5C1B)
        let list = ArenaSkipList()
        var reference: [ListEntry] = []
        var used = Set<[UInt8]>()
        let alphabet: [UInt8] = [0x00, 0x01, 0x61, 0x62, 0x7F, 0x80, 0xFF]
        func randomKey() -> [UInt8] { (0..<rng.below(4)).map { _ in alphabet[rng.below(alphabet.count)] } }
        for i in 0..<3_000 {
            let k = randomKey()
            // Unique (key, sequence) pairs, inserted in random sequence order.
            var seq = UInt64(rng.below(50))
            while used.contains(k + Array(String(seq).utf8) + [0xEE]) { seq += 50 }
            used.insert(k + Array(String(seq).utf8) + [0xEE])
            let e = ListEntry(key: k, sequence: seq, kind: UInt8(i % 2), value: rng.chance(100) ? [] : Array("\(i)".utf8))
            k.withUnsafeBytes { kp in e.value.withUnsafeBytes { vp in list.insert(key: kp, sequence: seq, kind: e.kind, value: vp) } }
            reference.append(e)
        }
        reference.sort(by: ListEntry.inOrder)
        #expect(list.count == reference.count)
        #expect(list.memoryUsage > 0)
        #expect(Self.walk(list) == reference)
        #expect(list.last.map(Self.entry) == reference.last)

        for _ in 0..<2_000 {
            let k = randomKey()
            let seq = rng.chance(100) ? UInt64.max : UInt64(rng.below(200))
            // seek: the first entry at or after (k, seq) in list order.
            let probe = ListEntry(key: k, sequence: seq, kind: 0, value: [])
            let at = partitionPoint(reference) { ListEntry.inOrder($0, probe) }
            let want = at < reference.count ? reference[at] : nil
            let got = k.withUnsafeBytes { list.seek($0, sequence: seq) }.map(Self.entry)
            #expect(got == want, "seek \(k) @\(seq)")
            // lastBefore: the last entry (any version) whose key is < k.
            let before = partitionPoint(reference) { lexLess($0.key, k) }
            let wantBefore = before > 0 ? reference[before - 1] : nil
            let gotBefore = k.withUnsafeBytes { list.lastBefore($0) }.map(Self.entry)
            #expect(gotBefore == wantBefore, "lastBefore \(k)")
        }
    }

    /// One writer inserts while readers walk the list: every walk is sorted, every node they see
    /// is complete (its value matches its key and sequence), and walks never shrink.
    @Test func skipListConcurrentWriterAndReaders() async {
        let list = ArenaSkipList()
        let total = 30_000
        let shared = ConcurrentSkipListState(list: list)
        let group = DispatchGroup()
        group.enter()
        Thread {
            var rng = SplitMix64(seed: 77)
            for i in 0..<total {
                let k = Array("key\(rng.below(5_000))".utf8) + [UInt8](repeating: 0x2E, count: rng.below(20))
                let seq = UInt64(i + 1)
                let v = valueFor(k, seq)
                k.withUnsafeBytes { kp in v.withUnsafeBytes { vp in shared.list.insert(key: kp, sequence: seq, kind: 0, value: vp) } }
            }
            shared.finished.store(true, ordering: .releasing)
            group.leave()
        }.start()
        for r in 0..<2 {
            group.enter()
            Thread {
                var last = 0
                var rng = SplitMix64(seed: UInt64(r))
                while true {
                    let done = shared.finished.load(ordering: .acquiring)
                    var n = shared.list.first
                    var previous: (key: [UInt8], sequence: UInt64)?
                    var count = 0
                    while let x = n {
                        let k = Array(ArenaSkipList.key(x)), s = ArenaSkipList.sequence(x)
                        if Array(ArenaSkipList.value(x)) != valueFor(k, s) {
                            shared.fail("reader \(r): node \(String(decoding: k, as: UTF8.self))@\(s) has a value of another node")
                        }
                        if let p = previous, !(lexLess(p.key, k) || (p.key == k && p.sequence > s)) {
                            shared.fail("reader \(r): \(String(decoding: p.key, as: UTF8.self))@\(p.sequence) before \(String(decoding: k, as: UTF8.self))@\(s)")
                        }
                        previous = (k, s)
                        count += 1
                        n = ArenaSkipList.next(x, 0)
                    }
                    if count < last { shared.fail("reader \(r): a walk saw \(count) entries after one saw \(last)") }
                    last = count
                    // A seek lands on an entry at or after its target.
                    let target = Array("key\(rng.below(5_000))".utf8)
                    if let x = target.withUnsafeBytes({ shared.list.seek($0, sequence: .max) }),
                       lexLess(Array(ArenaSkipList.key(x)), target) {
                        shared.fail("reader \(r): seek went before its target")
                    }
                    shared.walks.add(1, ordering: .relaxed)
                    if done {
                        if count != total { shared.fail("reader \(r): final walk saw \(count) of \(total)") }
                        break
                    }
                    if shared.failureCount > 5 { break }
                }
                group.leave()
            }.start()
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { c.resume() }
        }
        let messages = shared.failures
        #expect(messages.isEmpty, "\(messages.joined(separator: "\n"))")
        #expect(shared.walks.load(ordering: .relaxed) >= 4)
        #expect(Self.walk(list).count == total)
    }

    // MARK: Memtable

    @Test func memtableGetAtSnapshotSequences() throws {
        // seq 1 put a=1, 2 put a=2, 3 delete a, 4 put a=4, 5 delete [a, b), 6 put a=6, 7 put b=7,
        // 8 an empty range (ignored), 9 an inverted range (ignored).
        let m = try makeMemtable([
            .put(key("a"), bytes("1")), .put(key("a"), bytes("2")), .delete(key("a")), .put(key("a"), bytes("4")),
            .deleteRange(key("a"), key("b")), .put(key("a"), bytes("6")), .put(key("b"), bytes("7")),
            .deleteRange(key("b"), key("b")), .deleteRange(key("c"), key("a")),
        ], firstSequence: 1)
        func get(_ k: String, _ seq: UInt64) -> Lookup { key(k).withUnsafeBytes { m.get($0, sequence: seq) } }
        let expectedA: [(UInt64, Lookup)] = [
            (0, .notFound), (1, .value(bytes("1"))), (2, .value(bytes("2"))), (3, .deleted), (4, .value(bytes("4"))),
            (5, .deleted), (6, .value(bytes("6"))), (100, .value(bytes("6"))), (.max, .value(bytes("6"))),
        ]
        for (seq, want) in expectedA { #expect(get("a", seq) == want, "a at \(seq)") }
        // A key never written but inside the range: deleted from sequence 5 on.
        #expect(get("aa", 4) == .notFound)
        #expect(get("aa", 5) == .deleted)
        #expect(get("aa", .max) == .deleted)
        // The range end is exclusive; the empty and inverted ranges delete nothing.
        #expect(get("b", 6) == .notFound)
        #expect(get("b", 7) == .value(bytes("7")))
        #expect(get("b", .max) == .value(bytes("7")))
        #expect(get("bb", .max) == .notFound)
        #expect(get("", .max) == .notFound)
        #expect(key("aa").withUnsafeBytes { m.rangeTombstoneIndex.newest(covering: $0, at: 4).sequence } == nil)
        #expect(key("aa").withUnsafeBytes { m.rangeTombstoneIndex.newest(covering: $0, at: 5).sequence } == 5)
        #expect(m.allRangeTombstones.count == 1)
        #expect(!m.isEmpty)
        #expect(Memtable(logNumber: 1).isEmpty)
        // A memtable holding only a range deletion is not empty (it must be flushed).
        #expect(try !makeMemtable([.deleteRange(key("a"), key("b"))], firstSequence: 1).isEmpty)
    }

    // MARK: WriteBatch encoding

    @Test func writeBatchRoundTrip() throws {
        var rng = SplitMix64(seed: 0xBA7C)
        for _ in 0..<200 {
            var batch = WriteBatch()
            var expected: [Operation] = []
            let p = Keyspace.keyValue.prefix
            func randomBytes(_ max: Int) -> [UInt8] {
                let n = rng.chance(100) ? 0 : (rng.chance(50) ? 200 + rng.below(max) : rng.below(20))
                return (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            }
            for _ in 0..<rng.below(20) {
                let k = randomBytes(300), v = randomBytes(5_000)
                switch rng.below(6) {
                case 0: batch.put(k, v); expected.append(Operation(op: 1, key: p + k, second: v))
                case 1: batch.delete(k); expected.append(Operation(op: 2, key: p + k, second: []))
                case 2: batch.deleteRange(from: k, to: v); expected.append(Operation(op: 3, key: p + k, second: p + v))
                case 3: batch.putRaw(k, v); expected.append(Operation(op: 1, key: k, second: v))
                case 4: batch.deleteRaw(k); expected.append(Operation(op: 2, key: k, second: []))
                default: batch.deleteRangeRaw(k, v); expected.append(Operation(op: 3, key: k, second: v))
                }
            }
            #expect(batch.count == expected.count)
            #expect(batch.isEmpty == expected.isEmpty)
            #expect(batch.byteSize == batch.operations.count + 12)
            #expect(try decode(batch) == expected)

            // append concatenates.
            var other = WriteBatch()
            other.put(bytes("x"), bytes("y"))
            var joined = batch
            joined.append(other)
            #expect(joined.count == batch.count + 1)
            #expect(try decode(joined) == expected + [Operation(op: 1, key: p + bytes("x"), second: bytes("y"))])
        }
    }

    @Test func malformedBatchesThrowCorrupted() throws {
        var batch = WriteBatch()
        batch.put(bytes("apple"), bytes("red"))
        batch.delete(bytes("banana"))
        batch.deleteRange(from: bytes("c"), to: bytes("d"))
        batch.put([], [])
        let ops = batch.operations
        #expect(try decode(ops, count: batch.count).count == 4)

        func expectCorrupted(_ encoded: [UInt8], count: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                let decoded = try decode(encoded, count: count, file: "000007.log", offset: 4096)
                Issue.record("\(what): decoded \(decoded.count) operations instead of throwing", sourceLocation: sourceLocation)
            } catch {
                #expect(isCorrupted(error, file: "000007.log", offset: 4096), "\(what): \(error)", sourceLocation: sourceLocation)
            }
        }
        // Every truncation.
        for n in 0..<ops.count { expectCorrupted(Array(ops.prefix(n)), count: batch.count, "truncated to \(n) bytes") }
        // Trailing bytes, or a count that disagrees with the bytes.
        expectCorrupted(ops + [0], count: batch.count, "a trailing byte")
        expectCorrupted(ops, count: batch.count + 1, "count one too high")
        expectCorrupted(ops, count: batch.count - 1, "count one too low")
        // Unknown operation codes.
        for code: UInt8 in [0, 4, 0x7F, 0xFF] {
            var bad = ops
            bad[0] = code
            expectCorrupted(bad, count: batch.count, "operation code \(code)")
        }
        // A key length beyond the end, and an overlong varint.
        expectCorrupted([1, 0x7F, 0x61], count: 1, "key length past the end")
        expectCorrupted([1, 0x01, 0x61, 0x05, 0x61], count: 1, "value length past the end")
        expectCorrupted([1] + [UInt8](repeating: 0xFF, count: 11) + [0x01], count: 1, "overlong varint")
        expectCorrupted([2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], count: 1, "huge key length")
        // A malformed batch in a memtable apply throws too, naming the file.
        let m = Memtable(logNumber: 0)
        #expect(throws: StrataError.self) {
            try [UInt8]([9, 0, 0]).withUnsafeBytes { try m.apply(operations: $0, count: 1, firstSequence: 1, file: "x.log") }
        }
    }
}

/// The value the concurrent skiplist test stores with a key: derived from key and sequence.
private func valueFor(_ k: [UInt8], _ seq: UInt64) -> [UInt8] {
    k.reversed() + (0..<8).map { UInt8(truncatingIfNeeded: seq >> (8 * UInt64($0))) }
}

/// Shared state of the concurrent skiplist test.
private final class ConcurrentSkipListState: Sendable {
    let list: ArenaSkipList
    let finished = Atomic<Bool>(false)
    let walks = Atomic<Int>(0)
    private let messages = Mutex<[String]>([])

    init(list: ArenaSkipList) { self.list = list }

    func fail(_ message: String) { messages.withLock { if $0.count < 20 { $0.append(message) } } }

    var failures: [String] { messages.withLock { $0 } }

    var failureCount: Int { messages.withLock { $0.count } }
}
