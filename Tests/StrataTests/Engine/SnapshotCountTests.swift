import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// `Snapshot.count(lower:upper:)` against a brute-force count: on hand-built layers (memtables at
// several snapshot sequences, runs of version-1 and version-2 segments with overlapping keys, point
// and range tombstones), and on a live engine under random puts, deletes, range deletions,
// flushes, compactions and reopens. The count must equal the number of records a scan shows.

private func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

private func inRange(_ k: [UInt8], _ lower: [UInt8], _ upper: [UInt8]?) -> Bool {
    !less(k, lower) && (upper.map { less(k, $0) } ?? true)
}

/// A key of the key-value keyspace: a "region" byte, then a number, big-endian: regions keep
/// runs written in order apart, as a channel's timetokens do.
private func key(_ region: UInt8, _ n: Int) -> [UInt8] {
    Keyspace.keyValue.prefix + [region, UInt8(n >> 8), UInt8(n & 0xFF)]
}

private func randomBound(_ rng: inout SplitMix64) -> [UInt8] {
    switch rng.below(6) {
    case 0: return Keyspace.keyValue.prefix
    case 1: return Keyspace.keyValue.prefix + [UInt8(rng.below(4))]
    case 2: return key(UInt8(rng.below(4)), rng.below(400)) + [0]
    default: return key(UInt8(rng.below(4)), rng.below(400))
    }
}

private func scanCount(_ s: Snapshot, _ lower: [UInt8], _ upper: [UInt8]?) throws -> Int {
    let c = s.cursor(lower: lower, upper: upper)
    var n = 0
    while try c.next() { n += 1 }
    return n
}

private func removeDirectory(_ path: String) {
    for _ in 0..<20 {
        if (try? FileManager.default.removeItem(atPath: path)) != nil || !FileManager.default.fileExists(atPath: path) { return }
        usleep(20_000)
    }
}

/// Sorted runs written through `RunWriter`, in small segments of small blocks, numbered apart.
private final class Runs {
    let directory: String
    private var next: UInt64 = 1

    init(_ directory: String) { self.directory = directory }

    func run(_ records: [[UInt8]: (RecordKind, [UInt8])], tombstones: [([UInt8], [UInt8])], version: UInt32) throws -> SortedRun {
        var options = SegmentWriterOptions()
        options.blockSize = 80
        options.indexBlockSize = 64
        options.formatVersion = version
        let writer = RunWriter(directory: directory, fileSystem: .real, options: options, targetFileSize: 600) { [self] in
            defer { next += 1 }
            return next
        }
        writer.addRangeTombstones(tombstones.map { RangeTombstone(start: $0.0, end: $0.1) })
        for (k, r) in records.sorted(by: { less($0.key, $1.key) }) {
            try k.withUnsafeBytes { kp in try r.1.withUnsafeBytes { try writer.add(key: kp, kind: r.0, value: $0) } }
        }
        return SortedRun(segments: try writer.finish().map {
            try SegmentReader(path: directory + "/" + FileNames.segment($0.number), number: $0.number, cache: nil, fileSystem: .real)
        })
    }
}

private func memtable(_ ops: [(op: UInt8, a: [UInt8], b: [UInt8])], firstSequence: UInt64) throws -> Memtable {
    let m = Memtable(logNumber: 0)
    var seq = firstSequence
    for o in ops {
        var b = WriteBatch()
        switch o.op {
        case 0: b.putRaw(o.a, o.b)
        case 1: b.deleteRaw(o.a)
        default: b.deleteRangeRaw(o.a, o.b)
        }
        try b.operations.withUnsafeBytes { try m.apply(operations: $0, count: b.count, firstSequence: seq, file: "test") }
        seq += 1
    }
    return m
}

@Suite struct SnapshotCountTests {
    /// Random layers, oldest first: each run writes mostly to one region (so that some pieces
    /// belong to one segment alone) and sometimes to others; memtables on top. Every count at
    /// every snapshot sequence equals the brute-force one, and the counts did use stored counts.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func countMatchesReferenceOnRandomLayers(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0xC0_17_0000 + seed)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-count-layers-\(getpid())-\(seed)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { removeDirectory(dir) }
        let runs = Runs(dir)
        var state: [[UInt8]: [UInt8]] = [:]
        func deleteRange(_ s: [UInt8], _ e: [UInt8], in st: inout [[UInt8]: [UInt8]]) {
            for k in st.keys where inRange(k, s, e) { st[k] = nil }
        }
        var built: [SortedRun] = []
        for r in 0..<(1 + rng.below(5)) {
            let region = UInt8(r % 4)
            var records: [[UInt8]: (RecordKind, [UInt8])] = [:]
            for _ in 0..<rng.below(120) {
                let k = rng.chance(850) ? key(region, rng.below(400)) : key(UInt8(rng.below(4)), rng.below(400))
                records[k] = rng.chance(850) ? (.value, [UInt8](repeating: 0x61, count: rng.below(12))) : (.tombstone, [])
            }
            // Range deletions, mostly short ones inside one region (where an older run's segment
            // may be alone), some across regions.
            var tombstones: [([UInt8], [UInt8])] = []
            for _ in 0..<rng.below(4) {
                let region = UInt8(rng.below(4)), start = rng.below(400)
                let a = key(region, start)
                let b = rng.chance(700) ? key(region, start + 1 + rng.below(60)) : key(UInt8(rng.below(4)), rng.below(400))
                tombstones.append(less(a, b) ? (a, b) : (b, a))
            }
            for (s, e) in tombstones { deleteRange(s, e, in: &state) }
            for (k, v) in records { state[k] = v.0 == .value ? v.1 : nil }
            built.insert(try runs.run(records, tombstones: tombstones, version: rng.chance(250) ? 1 : 2), at: 0)
        }
        var memtables: [Memtable] = []
        var ops: [(sequence: UInt64, op: UInt8, a: [UInt8], b: [UInt8])] = []
        var sequence: UInt64 = 1
        for _ in 0..<rng.below(3) {
            var these: [(op: UInt8, a: [UInt8], b: [UInt8])] = []
            for _ in 0..<rng.below(30) {
                let r = rng.below(100), k = key(UInt8(rng.below(4)), rng.below(400))
                if r < 65 {
                    these.append((0, k, [0x62]))
                } else if r < 85 {
                    these.append((1, k, []))
                } else {
                    let e = key(UInt8(rng.below(4)), rng.below(400))
                    these.append((2, less(k, e) ? k : e, less(k, e) ? e : k))
                }
            }
            memtables.insert(try memtable(these, firstSequence: sequence), at: 0)
            for o in these {
                ops.append((sequence, o.op, o.a, o.b))
                sequence += 1
            }
        }
        let version = Version(runs: built)
        var fromSegments = 0
        for at in [0, sequence / 2, UInt64.max] {
            var expected = state
            for o in ops where o.sequence <= at {
                switch o.op {
                case 0: expected[o.a] = o.b
                case 1: expected[o.a] = nil
                default: deleteRange(o.a, o.b, in: &expected)
                }
            }
            let keys = expected.keys.sorted(by: less)
            let snapshot = Snapshot(sequence: at, memtables: memtables, version: version)
            for _ in 0..<150 {
                let lower = randomBound(&rng)
                let upper: [UInt8]? = rng.chance(100) ? nil : randomBound(&rng)
                let want = keys.filter { inRange($0, lower, upper) }.count
                let got = try snapshot.count(lower: lower, upper: upper)
                #expect(got == want, "seed \(seed) sequence \(at) [\(lower), \(upper.map { "\($0)" } ?? "nil"))")
                #expect(try scanCount(snapshot, lower, upper) == want, "the scan agrees with the reference")
                fromSegments += snapshot.countPieces(lower: lower, upper: upper).filter { $0.segment != nil }.count
            }
        }
        #expect(fromSegments > 0, "some pieces were counted from one segment's counts")
    }

    /// One run of many segments and nothing else: a count is one piece per segment it touches,
    /// none scanned. A memtable over part of the range makes that part (only) a scan.
    @Test func aSettledRunIsCountedFromItsSegments() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-count-settled-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { removeDirectory(dir) }
        var records: [[UInt8]: (RecordKind, [UInt8])] = [:]
        for n in 0..<300 { records[key(1, n)] = n % 10 == 3 ? (.tombstone, []) : (.value, [0x61, 0x62]) }
        let run = try Runs(dir).run(records, tombstones: [], version: 2)
        #expect(run.segments.count > 3)
        let lower = key(1, 17), upper = key(1, 250)
        let settled = Snapshot(sequence: .max, memtables: [], version: Version(runs: [run]))
        let pieces = settled.countPieces(lower: lower, upper: upper)
        #expect(!pieces.isEmpty && pieces.allSatisfy { $0.segment != nil })
        let want = (17..<250).filter { $0 % 10 != 3 }.count
        #expect(try settled.count(lower: lower, upper: upper) == want)

        let m = try memtable([(0, key(1, 200), [0x63]), (0, key(1, 203), [0x63]), (1, key(1, 210), [])], firstSequence: 1)
        let withMemtable = Snapshot(sequence: .max, memtables: [m], version: Version(runs: [run]))
        let mixed = withMemtable.countPieces(lower: lower, upper: upper)
        let scanned = mixed.filter { $0.segment == nil }
        #expect(scanned.count == 1)
        #expect(scanned.first?.lower == key(1, 200) && scanned.first?.upper == key(1, 210) + [0])
        // 203 was a tombstone and is a value now; 210 was a value and is deleted.
        #expect(try withMemtable.count(lower: lower, upper: upper) == want)
        #expect(try withMemtable.count(lower: key(1, 200), upper: key(1, 211)) == 10)
    }

    /// A live engine: random writes (mostly to one region at a time, like a channel's messages,
    /// some anywhere), point and range deletions, flushes of a small memtable, compactions and
    /// reopens; the counts of random ranges always equal the reference's.
    @Test(arguments: [UInt64(1), 2, 3])
    func countMatchesReferenceThroughTheEngine(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0xE7_C0_0000 + seed)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-count-engine-\(getpid())-\(seed)").path
        defer { removeDirectory(dir) }
        var options = EngineOptions()
        options.durability = .buffered
        options.memtableSize = 3 << 10
        options.targetSegmentSize = 2 << 10
        options.segment.blockSize = 256
        options.segment.indexBlockSize = 128
        options.compactionTrigger = 3
        var engine = try Engine(directory: dir, options: options)
        var reference: [[UInt8]: [UInt8]] = [:]
        var next = [Int](repeating: 0, count: 4)
        for step in 0..<600 {
            var batch = WriteBatch()
            let region = UInt8((step / 50) % 4)
            for _ in 0..<(1 + rng.below(8)) {
                let r = rng.below(100)
                if r < 70 {
                    let k: [UInt8]
                    if rng.chance(800) {
                        k = key(region, next[Int(region)] % 400)
                        next[Int(region)] += 1
                    } else {
                        k = key(UInt8(rng.below(4)), rng.below(400))
                    }
                    let v = [UInt8](repeating: 0x61, count: 4 + rng.below(40))
                    batch.putRaw(k, v)
                    reference[k] = v
                } else if r < 88 {
                    let k = key(UInt8(rng.below(4)), rng.below(400))
                    batch.deleteRaw(k)
                    reference[k] = nil
                } else if r < 93 {
                    let a = key(UInt8(rng.below(4)), rng.below(400)), b = key(UInt8(rng.below(4)), rng.below(400))
                    let (s, e) = less(a, b) ? (a, b) : (b, a)
                    batch.deleteRangeRaw(s, e)
                    for k in reference.keys where inRange(k, s, e) { reference[k] = nil }
                }
            }
            if !batch.isEmpty { _ = try engine.write(batch) }
            switch rng.below(100) {
            case 0: try engine.compactAll()
            case 1:
                try engine.close()
                engine = try Engine(directory: dir, options: options)
            case 2: engine.waitForBackgroundWork()
            default: break
            }
            if step % 20 == 19 {
                let snapshot = try engine.snapshot()
                let keys = reference.keys.sorted(by: less)
                for _ in 0..<25 {
                    let lower = randomBound(&rng)
                    let upper: [UInt8]? = rng.chance(100) ? nil : randomBound(&rng)
                    let want = keys.filter { inRange($0, lower, upper) }.count
                    #expect(try snapshot.count(lower: lower, upper: upper) == want,
                            "seed \(seed) step \(step) [\(lower), \(upper.map { "\($0)" } ?? "nil"))")
                }
            }
        }
        try engine.close()
    }
}
