import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The replayed table (FORMAT.md 4.5): a memtable's replayed writes, sorted over the logs' bytes,
// must read exactly like the same writes inserted one batch at a time into a skip list — at every
// snapshot sequence, forward and reverse, with point and range deletions, and with new writes in
// the memtable's skip list on top.

/// A batch payload as a log record holds it.
private func payload(first: UInt64, _ batch: WriteBatch) -> [UInt8] {
    var p: [UInt8] = []
    LittleEndian.append(first, to: &p)
    LittleEndian.append(UInt32(batch.count), to: &p)
    return p + batch.operations
}

/// Random batches over keys chosen to make the 8-byte heads tie, zero padding matter, and keys
/// share long prefixes; applied batch by batch to `incremental`, and returned as log payloads.
private struct Workload {
    var random: SplitMix64
    var sequence: UInt64 = 1
    var keys: [[UInt8]] = []

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func key() -> [UInt8] {
        let stems: [[UInt8]] = [[], [0x61], [0x61, 0x62], [0x61, 0x62, 0], [0x61, 0x62, 0, 0, 0, 0, 0, 0, 0],
                                Array("batch/0000".utf8), Array("batch/0001".utf8),
                                Array("a long shared prefix of many bytes/".utf8), [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]]
        var k = stems[random.below(stems.count)]
        for _ in 0..<random.below(4) { k.append(UInt8(random.below(3))) }
        keys.append(k)
        return k
    }

    mutating func batches(_ n: Int, into incremental: Memtable) throws -> [ReplayedTable.Batch] {
        var out: [ReplayedTable.Batch] = []
        for b in 0..<n {
            var batch = WriteBatch()
            for _ in 0..<(1 + random.below(8)) {
                switch random.below(12) {
                case 0..<8: batch.putRaw(key(), (0..<random.below(200)).map { _ in UInt8(random.below(256)) })
                case 8..<11: batch.deleteRaw(key())
                default: batch.deleteRangeRaw(key(), key())
                }
            }
            out.append(ReplayedTable.Batch(payload: payload(first: sequence, batch)[...], file: "test.log", offset: b))
            try batch.operations.withUnsafeBytes {
                try incremental.apply(operations: $0, count: batch.count, firstSequence: sequence, file: "test.log")
            }
            sequence += UInt64(batch.count)
        }
        return out
    }
}

/// What a merged cursor over `memtable` shows at `sequence` within the bounds, in its direction.
private func scan(_ memtable: Memtable, sequence: UInt64, lower: [UInt8]?, upper: [UInt8]?, reverse: Bool,
                  keepTombstones: Bool = false) throws -> [String] {
    let c = MergedCursor(memtables: [memtable], runs: [], sequence: sequence, lower: lower, upper: upper,
                         reverse: reverse, keepTombstones: keepTombstones)
    var out: [String] = []
    while try c.next() { out.append("\(c.key) \(c.kind) \(Array(c.value))") }
    return out
}

@Suite struct ReplayedTableTests {
    @Test("the table sorts like a skip list: key ascending, newest first, every version", arguments: [1, 2, 3])
    func orderMatchesSkipList(seed: UInt64) throws {
        var w = Workload(seed: seed)
        let incremental = Memtable(logNumber: 0)
        let table = try ReplayedTable(copying: try w.batches(400, into: incremental))
        var listed: [String] = []
        var n = incremental.list.first
        while let node = n {
            let kind = ArenaSkipList.kind(node) == RecordKind.tombstone.rawValue
            listed.append("\(Array(ArenaSkipList.key(node))) \(ArenaSkipList.sequence(node)) \(kind) \(Array(ArenaSkipList.value(node)))")
            n = ArenaSkipList.next(node, 0)
        }
        let tabled = table.entries.map { "\(Array($0.keyBytes)) \($0.sequence) \($0.isTombstone) \(Array($0.value))" }
        #expect(tabled == listed)
        #expect(tabled.count > 1000)
        #expect(table.tombstones.count == incremental.allRangeTombstones.count)
        #expect(table.highestSequence == w.sequence - 1)
        #expect(table.byteCount > 0)
    }

    @Test("reads through the table equal reads through the skip list at every snapshot, with new writes on top",
          arguments: [4, 5, 6])
    func readsMatchTheModel(seed: UInt64) throws {
        var w = Workload(seed: seed)
        let model = Memtable(logNumber: 0)
        let table = try ReplayedTable(copying: try w.batches(250, into: model))
        let replayedUpTo = w.sequence - 1
        let memtable = Memtable(logNumber: 1, replayedLogs: [0], replayed: table)
        // Writes of this run go to the memtable's skip list; the model takes them too.
        for batch in try w.batches(seed == 4 ? 0 : 60, into: Memtable(logNumber: 9)) {
            let first = LittleEndian.uint64(batch.payload.withUnsafeBytes { $0 }, at: 0)
            let count = Int(LittleEndian.uint32(batch.payload.withUnsafeBytes { $0 }, at: 8))
            let ops = Array(batch.payload.dropFirst(12))
            try ops.withUnsafeBytes {
                try memtable.apply(operations: $0, count: count, firstSequence: first, file: "new.log")
                try model.apply(operations: $0, count: count, firstSequence: first, file: "new.log")
            }
        }
        #expect(memtable.allRangeTombstones.count == model.allRangeTombstones.count)
        let sequences: [UInt64] = [0, 1, replayedUpTo / 3, replayedUpTo / 2, replayedUpTo, replayedUpTo + 1,
                                   (replayedUpTo + w.sequence) / 2, w.sequence - 1, .max]
        var random = SplitMix64(seed: seed &* 7)
        for sequence in sequences {
            for k in Set(w.keys).sorted(by: { ByteComparison.compare($0, $1) < 0 }) {
                let (got, want) = k.withUnsafeBytes { (memtable.get($0, sequence: sequence), model.get($0, sequence: sequence)) }
                #expect(got == want, "get \(k) at \(sequence)")
            }
            for _ in 0..<6 {
                let lower: [UInt8]? = random.below(3) == 0 ? nil : w.keys[random.below(w.keys.count)]
                let upper: [UInt8]? = random.below(3) == 0 ? nil : w.keys[random.below(w.keys.count)]
                for reverse in [false, true] {
                    for keep in [false, true] {
                        let got = try scan(memtable, sequence: sequence, lower: lower, upper: upper, reverse: reverse, keepTombstones: keep)
                        let want = try scan(model, sequence: sequence, lower: lower, upper: upper, reverse: reverse, keepTombstones: keep)
                        #expect(got == want, "scan \(String(describing: lower))..<\(String(describing: upper)) at \(sequence) reverse \(reverse)")
                    }
                }
                let snapshot = Snapshot(sequence: sequence, memtables: [memtable], version: Version(runs: []))
                let modelSnapshot = Snapshot(sequence: sequence, memtables: [model], version: Version(runs: []))
                let from = lower ?? []
                #expect(try snapshot.count(lower: from, upper: upper) == modelSnapshot.count(lower: from, upper: upper))
            }
        }
    }

    @Test("stepping back and forth from any position matches the skip list's cursor")
    func steppingMatches() throws {
        var w = Workload(seed: 11)
        let model = Memtable(logNumber: 0)
        let table = try ReplayedTable(copying: try w.batches(200, into: model))
        let sequence = (w.sequence - 1) / 2
        let c = ReplayedTableCursor(table, sequence: sequence)
        let m = MemtableCursor(model, sequence: sequence)
        func same() -> Bool {
            guard c.isValid == m.isValid else { return false }
            guard c.isValid else { return true }
            return c.withKey { Array($0) } == m.withKey { Array($0) } && c.recordSequence == m.recordSequence
                && Array(c.value) == Array(m.value) && c.kind == m.kind
        }
        var random = SplitMix64(seed: 12)
        for _ in 0..<2000 {
            switch random.below(6) {
            case 0: c.next(); m.next()
            case 1: c.previous(); m.previous()
            case 2:
                let k = w.keys[random.below(w.keys.count)]
                k.withUnsafeBytes { c.seek($0); m.seek($0) }
            case 3:
                let k = w.keys[random.below(w.keys.count)]
                k.withUnsafeBytes { c.seekForPrevious($0); m.seekForPrevious($0) }
            case 4: c.seekToFirst(); m.seekToFirst()
            default: c.seekToLast(); m.seekToLast()
            }
            #expect(same())
        }
    }

    @Test("a table large enough to be sorted on two threads is complete and in order, duplicates newest first")
    func largeTableOrder() throws {
        var random = SplitMix64(seed: 21)
        var batches: [ReplayedTable.Batch] = []
        var sequence: UInt64 = 1
        var written: [([UInt8], UInt64)] = []
        for b in 0..<200 {
            var batch = WriteBatch()
            for _ in 0..<500 {
                // A shared first byte (as a keyspace prefix is), then random bytes; some keys repeat.
                var k: [UInt8] = [7]
                for _ in 0..<(1 + random.below(12)) { k.append(UInt8(random.below(random.below(4) == 0 ? 4 : 256))) }
                batch.putRaw(k, [UInt8(b & 0xFF)])
                written.append((k, sequence + UInt64(batch.count - 1)))
            }
            batches.append(ReplayedTable.Batch(payload: payload(first: sequence, batch)[...], file: "big.log", offset: b))
            sequence += UInt64(batch.count)
        }
        #expect(written.count >= ReplayedTable.parallelSortMinimum)
        let table = try ReplayedTable(copying: batches)
        let got = table.entries.map { (Array($0.keyBytes), $0.sequence) }
        let want = written.sorted { x, y in
            let c = ByteComparison.compare(x.0, y.0)
            return c != 0 ? c < 0 : x.1 > y.1
        }
        #expect(got.count == want.count)
        #expect(got.elementsEqual(want) { $0.0 == $1.0 && $0.1 == $1.1 })
        // Every head is the key's first window again (the sort overwrites them on ties).
        #expect(table.entries.allSatisfy { $0.head == KeyWindow.head($0.keyBytes) })
    }

    @Test("a malformed batch is refused with the file and offset of its record")
    func malformedBatch() throws {
        var batch = WriteBatch()
        batch.putRaw(Array("k".utf8), Array("v".utf8))
        var p = payload(first: 1, batch)
        p[12] = 9  // not an operation
        #expect(throws: StrataError.corrupted(file: "x.log", offset: 40, reason: "batch operation 0: unknown operation")) {
            _ = try ReplayedTable(copying: [ReplayedTable.Batch(payload: p[...], file: "x.log", offset: 40)])
        }
        #expect(throws: StrataError.corrupted(file: "x.log", offset: 7, reason: "batch record of 3 bytes")) {
            _ = try ReplayedTable(copying: [ReplayedTable.Batch(payload: [1, 2, 3][...], file: "x.log", offset: 7)])
        }
        let empty = try ReplayedTable(copying: [])
        #expect(empty.isEmpty && empty.highestSequence == nil)
        #expect(Memtable(logNumber: 0, replayed: empty).isEmpty)
    }
}
