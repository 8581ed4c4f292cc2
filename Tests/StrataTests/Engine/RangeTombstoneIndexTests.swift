import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The memtable's range-tombstone index against brute force: the index alone (newest covering
// tombstone at a sequence, and the stretch of keys its answer holds for), and memtables read
// through `Snapshot` (point gets, forward and reverse cursors) at random snapshot sequences.

/// A key of a small space with prefixes of each other (`[7, a]` and `[7, a, b]`).
private func randomKey(_ rng: inout SplitMix64) -> [UInt8] {
    rng.chance(300) ? [7, UInt8(rng.below(24)), UInt8(rng.below(4))] : [7, UInt8(rng.below(24))]
}

private func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

private func covers(_ t: SequencedRangeTombstone, _ k: [UInt8]) -> Bool { !less(k, t.start) && less(k, t.end) }

private func randomRange(_ rng: inout SplitMix64) -> ([UInt8], [UInt8]) {
    var a = randomKey(&rng), b = randomKey(&rng)
    if less(b, a) { swap(&a, &b) }
    if a == b { b.append(0) }
    return (a, b)
}

/// Every key the tests look at: all of `randomKey`'s, and a few outside.
private let universe: [[UInt8]] = {
    var keys: [[UInt8]] = [[], [6], [7], [8], [7, 0, 0, 0]]
    for a in 0..<25 {
        keys.append([7, UInt8(a)])
        for b in 0..<5 { keys.append([7, UInt8(a), UInt8(b)]) }
    }
    return keys.sorted(by: less)
}()

@Suite struct RangeTombstoneIndexTests {
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func indexMatchesBruteForce(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var all: [SequencedRangeTombstone] = []
        var index = RangeTombstoneIndex()
        var sequence: UInt64 = 0
        let total = 1 + rng.below(300)
        for _ in 0..<total {
            // Mostly in order, with repeats; seed 7 and 8 also out of order (the rebuild path).
            if seed >= 7 && rng.chance(50) {
                sequence = UInt64(rng.below(Int(sequence) + 1))
            } else if !rng.chance(100) {
                sequence += UInt64(1 + rng.below(3))
            }
            let (s, e) = randomRange(&rng)
            let t = SequencedRangeTombstone(start: s, end: e, sequence: sequence)
            all.append(t)
            index.add(t, all: all)
        }
        let highest = all.map(\.sequence).max() ?? 0
        for _ in 0..<300 {
            let at: UInt64 = rng.chance(100) ? .max : UInt64(rng.below(Int(highest) + 2))
            let k = universe[rng.below(universe.count)]
            let expected = all.filter { $0.sequence <= at && covers($0, k) }.map(\.sequence).max()
            let (got, stretch) = k.withUnsafeBytes { index.newest(covering: $0, at: at) }
            #expect(got == expected, "seed \(seed): key \(k) at \(at)")
            // The answer holds for every key of the stretch.
            #expect(k.withUnsafeBytes { stretch.contains($0) })
            for other in universe where other.withUnsafeBytes({ stretch.contains($0) }) {
                let e = all.filter { $0.sequence <= at && covers($0, other) }.map(\.sequence).max()
                #expect(e == got, "seed \(seed): stretch of \(k) at \(at) wrong for \(other)")
            }
        }
    }

    private enum Op {
        case put([UInt8], [UInt8])
        case delete([UInt8])
        case deleteRange([UInt8], [UInt8])
    }

    /// The state a snapshot at `sequence` sees: every operation of sequence `<= sequence`, in order.
    private static func model(_ ops: [(UInt64, Op)], at sequence: UInt64) -> [[UInt8]: [UInt8]] {
        var state: [[UInt8]: [UInt8]] = [:]
        for (s, op) in ops where s <= sequence {
            switch op {
            case .put(let k, let v): state[k] = v
            case .delete(let k): state[k] = nil
            case .deleteRange(let a, let b): for k in state.keys where !less(k, a) && less(k, b) { state[k] = nil }
            }
        }
        return state
    }

    @Test(arguments: [11, 12, 13, 14, 15, 16] as [UInt64])
    func memtablesMatchModel(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var ops: [(UInt64, Op)] = []
        var memtables: [Memtable] = []
        var sequence: UInt64 = 1
        // Two memtables, the second newer; many range deletions so the index has several levels.
        for layer in 0..<2 {
            let m = Memtable(logNumber: UInt64(layer))
            for _ in 0..<(150 + rng.below(150)) {
                var batch = WriteBatch()
                let first = sequence
                for _ in 0..<(1 + rng.below(3)) {
                    let r = rng.below(100)
                    let op: Op
                    if r < 50 {
                        op = .put(randomKey(&rng), [UInt8(truncatingIfNeeded: sequence)])
                    } else if r < 60 {
                        op = .delete(randomKey(&rng))
                    } else {
                        let (a, b) = randomRange(&rng)
                        op = .deleteRange(a, b)
                    }
                    switch op {
                    case .put(let k, let v): batch.putRaw(k, v)
                    case .delete(let k): batch.deleteRaw(k)
                    case .deleteRange(let a, let b): batch.deleteRangeRaw(a, b)
                    }
                    ops.append((sequence, op))
                    sequence += 1
                }
                try batch.operations.withUnsafeBytes {
                    try m.apply(operations: $0, count: batch.count, firstSequence: first, file: "test")
                }
            }
            memtables.insert(m, at: 0)
        }
        for _ in 0..<40 {
            let at: UInt64 = rng.chance(100) ? .max : UInt64(rng.below(Int(sequence) + 1))
            let expected = Self.model(ops, at: at)
            let snapshot = Snapshot(sequence: at, memtables: memtables, version: Version(runs: []))
            for k in universe {
                #expect(try snapshot.get(k) == expected[k], "seed \(seed): get \(k) at \(at)")
            }
            var lower: [UInt8]? = rng.chance(300) ? nil : randomKey(&rng)
            var upper: [UInt8]? = rng.chance(300) ? nil : randomKey(&rng)
            if let l = lower, let u = upper, less(u, l) { (lower, upper) = (u, l) }
            let inRange = expected.keys.filter { k in
                (lower.map { !less(k, $0) } ?? true) && (upper.map { less(k, $0) } ?? true)
            }.sorted(by: less)
            for reverse in [false, true] {
                let cursor = snapshot.cursor(lower: lower, upper: upper, reverse: reverse)
                var seen: [([UInt8], [UInt8])] = []
                while try cursor.next() { seen.append((cursor.key, Array(cursor.value))) }
                let want = reverse ? inRange.reversed() : inRange
                #expect(seen.map(\.0) == want, "seed \(seed): \(reverse ? "reverse" : "forward") cursor at \(at) in \(String(describing: lower))..<\(String(describing: upper))")
                #expect(seen.allSatisfy { expected[$0.0] == $0.1 })
            }
        }
    }

    @Test func outOfOrderTombstoneStillHidesOnlyOlderRecords() throws {
        // A replayed log could hand the memtable a range deletion older than one it holds.
        let m = Memtable(logNumber: 0)
        func apply(_ first: UInt64, _ body: (inout WriteBatch) -> Void) throws {
            var b = WriteBatch()
            body(&b)
            try b.operations.withUnsafeBytes { try m.apply(operations: $0, count: b.count, firstSequence: first, file: "test") }
        }
        try apply(1) { $0.putRaw([7, 1], [1]) }
        try apply(10) { $0.deleteRangeRaw([7, 5], [7, 9]) }
        try apply(5) { $0.deleteRangeRaw([7, 0], [7, 3]) }
        try apply(3) { $0.putRaw([7, 2], [2]) }
        let get = { (k: [UInt8], at: UInt64) in k.withUnsafeBytes { m.get($0, sequence: at) } }
        #expect(get([7, 1], 4) == .value([1]))
        #expect(get([7, 1], 5) == .deleted)
        #expect(get([7, 2], 4) == .value([2]))
        #expect(get([7, 2], .max) == .deleted)
        #expect(get([7, 6], .max) == .deleted)
    }

    /// A key of a large space: `x` big-endian in 4 bytes.
    private static func wide(_ x: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: x >> 24), UInt8(truncatingIfNeeded: x >> 16), UInt8(truncatingIfNeeded: x >> 8), UInt8(truncatingIfNeeded: x)]
    }

    @Test(arguments: [21, 22] as [UInt64])
    func manyTombstonesMatchBruteForce(seed: UInt64) {
        // More than 1,024 tombstones: the versions span two levels of their trie.
        var rng = SplitMix64(seed: seed)
        var all: [SequencedRangeTombstone] = []
        var index = RangeTombstoneIndex()
        var sequence: UInt64 = 0
        for _ in 0..<(1_100 + rng.below(200)) {
            if !rng.chance(100) { sequence += UInt64(1 + rng.below(3)) }
            let a = rng.below(3_000), length = rng.chance(900) ? 1 + rng.below(30) : 1 + rng.below(1_000)
            let t = SequencedRangeTombstone(start: Self.wide(a), end: Self.wide(a + length), sequence: sequence)
            all.append(t)
            index.add(t, all: all)
        }
        for _ in 0..<400 {
            let at = UInt64(rng.below(Int(sequence) + 2))
            let x = rng.below(4_100)
            let expected = { (x: Int) in all.filter { $0.sequence <= at && covers($0, Self.wide(x)) }.map(\.sequence).max() }
            let (got, stretch) = Self.wide(x).withUnsafeBytes { index.newest(covering: $0, at: at) }
            #expect(got == expected(x), "seed \(seed): key \(x) at \(at)")
            for y in max(0, x - 3)...(x + 3) where Self.wide(y).withUnsafeBytes({ stretch.contains($0) }) {
                #expect(expected(y) == got, "seed \(seed): stretch of \(x) at \(at) wrong for \(y)")
            }
        }
    }

    @Test(arguments: ["random", "adjacent", "nested", "growing", "descending"])
    func lookupsVisitLogarithmicallyManyNodes(pattern: String) {
        // The comparisons of a fresh lookup (versions searched, tree nodes visited) stay within
        // c · log2(n) at every size, whatever the order of the keys; memory within O(n log n).
        var rng = SplitMix64(seed: 31)
        var index = RangeTombstoneIndex()
        var all: [SequencedRangeTombstone] = []
        let total = 4_096
        for i in 1...total {
            let (a, b): (Int, Int)
            switch pattern {
            case "adjacent": (a, b) = (i, i + 1)  // deleteMessages: each range just after the last
            case "nested": (a, b) = (i, 2 * total - i)
            case "growing": (a, b) = (0, i)
            case "descending": (a, b) = (total - i, total - i + 2)
            default:
                let x = rng.below(total)
                (a, b) = (x, x + 1 + rng.below(64))
            }
            let t = SequencedRangeTombstone(start: Self.wide(a), end: Self.wide(b), sequence: UInt64(i))
            all.append(t)
            index.add(t, all: all)
            guard i.nonzeroBitCount == 1 && i >= 16 else { continue }
            let log2n = Double(Int.bitWidth - 1 - i.leadingZeroBitCount)
            var most = 0
            for _ in 0..<500 {
                var visits = 0
                let key = Self.wide(rng.below(2 * total + 2))
                _ = key.withUnsafeBytes { index.newest(covering: $0, at: UInt64(rng.below(i + 2)), visits: &visits) }
                most = max(most, visits)
            }
            #expect(Double(most) <= 4 * log2n, "\(pattern): \(most) comparisons for a lookup among \(i) tombstones")
            #expect(Double(index.approximateBytes) <= Double(i) * (3 * log2n * 80 + 24), "\(pattern): \(index.approximateBytes) bytes for \(i) tombstones")
        }
    }

    @Test func versionsFindTheLastOfASequence() {
        // Past 32 · 32 · 32 versions (three levels of the trie), with runs of equal sequences.
        var versions = RangeTombstoneIndex.Versions()
        var sequences: [UInt64] = []
        var rng = SplitMix64(seed: 41)
        var sequence: UInt64 = 5
        for i in 0..<33_000 {
            if rng.chance(600) { sequence += UInt64(1 + rng.below(2)) }
            // The root's `sequence` field tags which version it is.
            let tag = RangeTombstoneIndex.Node(start: [], end: [0], sequence: UInt64(i), priority: 0, generation: i, left: nil, right: nil)
            versions.append(tag, sequence: sequence)
            sequences.append(sequence)
            if i < 1_100 || i % 997 == 0 || i == 32_767 || i == 32_768 {
                for at in [0, 4, 5, sequence / 2, sequence - 1, sequence, .max] as [UInt64] {
                    var visits = 0
                    let (found, tree) = versions.tree(at: at, visits: &visits)
                    let expected = sequences.lastIndex { $0 <= at }
                    #expect(found == (expected != nil) && tree?.sequence == expected.map(UInt64.init), "\(i) versions, at \(at)")
                }
            }
        }
    }
}
