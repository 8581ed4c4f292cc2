import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Counting a segment's values in a key range from the record counts of its index (FORMAT.md 5.5,
// format version 2) — `SegmentReader.countValues(lower:upper:)` and `Block.countValues(lower:upper:)` —
// against a brute-force count, and what a reader does with counts that cannot be right.

private func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

private struct Rec {
    var key: [UInt8]
    var kind: RecordKind
    var value: [UInt8]
}

/// `count` distinct random keys over a small alphabet (so that bounds fall between and on keys),
/// one in six a tombstone (none without `tombstones`), sorted.
private func randomRecords(_ count: Int, _ rng: inout SplitMix64, tombstones: Bool = true) -> [Rec] {
    var seen = Set<[UInt8]>()
    var out: [Rec] = []
    while out.count < count {
        let alphabet: [UInt8] = [0x00, 0x30, 0x31, 0x61, 0x62, 0xFF]
        let key: [UInt8] = [0x11, 0x01] + (0..<(1 + rng.below(6))).map { _ in alphabet[rng.below(6)] }
        guard seen.insert(key).inserted else { continue }
        let tombstone = tombstones && rng.below(6) == 0
        out.append(Rec(key: key, kind: tombstone ? .tombstone : .value,
                       value: tombstone ? [] : [UInt8](repeating: 0x41, count: rng.below(30))))
    }
    return out.sorted { less($0.key, $1.key) }
}

private func write(_ records: [Rec], in dir: TemporaryDirectory, number: UInt64, options: SegmentWriterOptions) throws -> SegmentReader {
    let w = try SegmentWriter(directory: dir.path, number: number, options: options, fileSystem: .real)
    for r in records { try w.add(key: r.key, kind: r.kind, value: r.value) }
    _ = try w.finish()
    return try SegmentReader(path: dir.path + "/" + FileNames.segment(number), number: number, cache: nil, fileSystem: .real)
}

private func count(_ reader: SegmentReader, _ lower: [UInt8], _ upper: [UInt8]?) throws -> Int? {
    try lower.withUnsafeBytes { l in
        if let upper { return try upper.withUnsafeBytes { try reader.countValues(lower: l, upper: $0) } }
        return try reader.countValues(lower: l, upper: nil)
    }
}

private func bruteForce(_ records: [Rec], _ lower: [UInt8], _ upper: [UInt8]?) -> Int {
    records.filter { r in r.kind == .value && !less(r.key, lower) && (upper.map { less(r.key, $0) } ?? true) }.count
}

/// Bounds: keys of the segment, neighbours of them, and keys outside its range.
private func randomBound(_ records: [Rec], _ rng: inout SplitMix64) -> [UInt8] {
    switch rng.below(5) {
    case 0:
        let alphabet: [UInt8] = [0x00, 0x30, 0x62, 0xFF]
        return [0x11, 0x01] + (0..<rng.below(4)).map { _ in alphabet[rng.below(4)] }
    case 1: return records[rng.below(records.count)].key + [0x00]
    case 2: return [[0x10], [0x11], [0x11, 0x01], [0x12], []][rng.below(5)]
    default: return records[rng.below(records.count)].key
    }
}

/// A stored block (raw payload, trailer, CRC) appended to `bytes`; returns its handle.
private func store(_ raw: [UInt8], into bytes: inout [UInt8]) -> BlockHandle {
    let handle = BlockHandle(offset: UInt64(bytes.count), length: UInt64(raw.count))
    var trailer: [UInt8] = [BlockCompression.none.rawValue]
    LittleEndian.append(UInt32(raw.count), to: &trailer)
    let crc = CRC32C.checksum(trailer, extending: CRC32C.checksum(raw))
    bytes += raw + trailer
    LittleEndian.append(CRC32C.mask(crc), to: &bytes)
    return handle
}

/// A version-2 segment built by hand from data blocks of `blocks`, with the leaf entries'
/// counts given by `leafCounts` (default: the truth) and, with `twoLevels`, two leaf index blocks
/// under a root whose entries count `rootCounts` (default: the sum of their leaf entries).
/// `adjust` changes the properties before they are written.
private func craft(_ blocks: [[Rec]], twoLevels: Bool, leafCounts: [RecordCounts]? = nil,
                   rootCounts: [RecordCounts]? = nil, adjust: (inout SegmentProperties) -> Void = { _ in }) -> [UInt8] {
    var bytes: [UInt8] = []
    var props = SegmentProperties()
    var leaf: [([UInt8], BlockHandle, RecordCounts)] = []
    for (i, block) in blocks.enumerated() {
        var b = BlockBuilder(restartInterval: 2)
        var truth = RecordCounts(records: 0, tombstones: 0)
        for r in block {
            b.add(key: r.key, kind: r.kind, value: r.value)
            r.key.withUnsafeBytes { props.add(key: $0, kind: r.kind, valueLength: r.value.count) }
            truth.records += 1
            if r.kind == .tombstone { truth.tombstones += 1 }
        }
        let raw = b.finish()
        let h = store(raw, into: &bytes)
        props.dataBlocks += 1
        props.uncompressedDataBytes += UInt64(raw.count)
        props.storedDataBytes += h.length + UInt64(SegmentFormat.blockTrailerSize)
        leaf.append((block.last!.key, h, leafCounts?[i] ?? truth))
    }
    props.finish(lastKey: blocks.last!.last!.key)
    func indexBlock(_ entries: [([UInt8], BlockHandle, RecordCounts)]) -> (BlockHandle, RecordCounts) {
        var b = BlockBuilder(restartInterval: 1)
        var sum = RecordCounts(records: 0, tombstones: 0)
        for (k, h, c) in entries {
            var v: [UInt8] = []
            IndexEntryValue(handle: h, counts: c).encode(into: &v)
            b.add(key: k, kind: .value, value: v)
            sum.records &+= c.records
            sum.tombstones &+= c.tombstones
        }
        props.indexBlocks += 1
        return (store(b.finish(), into: &bytes), sum)
    }
    let root: BlockHandle
    if twoLevels {
        let half = leaf.count / 2
        let (h0, c0) = indexBlock(Array(leaf[..<half]))
        let (h1, c1) = indexBlock(Array(leaf[half...]))
        let counts = rootCounts ?? [c0, c1]
        root = indexBlock([(leaf[half - 1].0, h0, counts[0]), (leaf.last!.0, h1, counts[1])]).0
    } else {
        root = indexBlock(leaf).0
    }
    adjust(&props)
    let p = store(props.encode(), into: &bytes)
    bytes += SegmentFooter(rootIndex: root, indexHeight: twoLevels ? 2 : 1, filter: .empty, rangeTombstones: .empty,
                           properties: p, formatVersion: 2).encode()
    return bytes
}

/// Four blocks of five records each (every third a tombstone), keys `11 01 00`…`11 01 13`.
private let craftedBlocks: [[Rec]] = (0..<4).map { b in
    (0..<5).map { i in
        let n = b * 5 + i
        return Rec(key: [0x11, 0x01, UInt8(n)], kind: n % 3 == 2 ? .tombstone : .value, value: n % 3 == 2 ? [] : [0x78])
    }
}

private func open(_ bytes: [UInt8], in dir: TemporaryDirectory, _ name: String = "000009.seg") throws -> SegmentReader {
    try dir.write(name, bytes)
    return try SegmentReader(path: dir.file(name), number: 9, cache: nil, fileSystem: .real)
}

private func expectCorrupted(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("\(what): no error", sourceLocation: sourceLocation)
    } catch StrataError.corrupted {
    } catch {
        Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct SegmentCountTests {
    /// Random segments of several index heights: every count equals the brute-force one; a
    /// version-1 segment counts only a range covering all of it and otherwise says it cannot.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func countsMatchBruteForce(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0xC0_0E7 + seed)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let records = randomRecords(200 + rng.below(1500), &rng)
        var options = SegmentWriterOptions(blockSize: 64 + rng.below(400), indexBlockSize: 64 + rng.below(200),
                                           restartInterval: 1 + rng.below(16), bloomBitsPerKey: 0)
        let v2 = try write(records, in: dir, number: 1, options: options)
        options.formatVersion = 1
        let v1 = try write(records, in: dir, number: 2, options: options)
        #expect(v2.footer.formatVersion == SegmentFormat.version && v1.footer.formatVersion == 1)
        let all = bruteForce(records, [], nil)
        #expect(try count(v2, [], nil) == all)
        #expect(try count(v1, [], nil) == all)
        #expect(try count(v1, records[0].key, [0x12]) == all)
        for _ in 0..<400 {
            let lower = randomBound(records, &rng)
            let upper: [UInt8]? = rng.below(8) == 0 ? nil : randomBound(records, &rng)
            let expected = bruteForce(records, lower, upper)
            #expect(try count(v2, lower, upper) == expected, "seed \(seed) [\(lower), \(upper.map { "\($0)" } ?? "nil"))")
            let old = try count(v1, lower, upper)
            #expect(old == nil || old == expected)
        }
        #expect(v2.footer.indexHeight >= 2 || seed > 2, "the seeds with small index blocks reach several levels")
    }

    /// What a block counts when it is loaded, and `Block.countValues`, against brute force, for every restart interval,
    /// blocks with and without tombstones, and bounds on, between and outside the keys.
    @Test func blockCountsMatchBruteForce() throws {
        var rng = SplitMix64(seed: 0x7A11)
        var stridedValuesOnly = 0
        for interval in [1, 2, 3, 16] {
            for i in 0..<40 {
                let records = randomRecords(1 + rng.below(80), &rng, tombstones: i % 2 == 0)
                var b = BlockBuilder(restartInterval: interval)
                for r in records { b.add(key: r.key, kind: r.kind, value: r.value) }
                let block = try Block(copying: b.finish())
                // What the block counted when it was loaded.
                #expect(block.recordCount == records.count)
                #expect(block.tombstoneCount == records.filter { $0.kind == .tombstone }.count)
                #expect(block.restartStride == (records.count > interval ? interval : 0))
                if block.tombstoneCount == 0 && block.restartStride > 0 { stridedValuesOnly += 1 }
                for _ in 0..<40 {
                    let lower: [UInt8]? = rng.below(5) == 0 ? nil : randomBound(records, &rng)
                    let upper: [UInt8]? = rng.below(5) == 0 ? nil : randomBound(records, &rng)
                    let want = bruteForce(records, lower ?? [], upper)
                    let n = try lower.withOptional { l in try upper.withOptional { u in try block.countValues(lower: l, upper: u) } }
                    #expect(n == want, "interval \(interval)")
                }
            }
        }
        #expect(stridedValuesOnly > 20, "blocks of values only, with regular restarts, are counted by their stride")
    }

    /// A block whose restarts are not evenly spaced has no stride, and is counted by reading it.
    @Test func irregularRestartsAreReadNotMultiplied() throws {
        // Five values; restarts at entries 0, 2 and 3 (not multiples of 2).
        var bytes: [UInt8] = []
        var offsets: [Int] = []
        for i in 0..<5 {
            offsets.append(bytes.count)
            bytes += [0, 3, 1, 0, 0x11, 0x01, UInt8(0x30 + i), 0x78]
        }
        for r in [offsets[0], offsets[2], offsets[3]] { LittleEndian.append(UInt32(r), to: &bytes) }
        LittleEndian.append(UInt32(3), to: &bytes)
        let block = try Block(copying: bytes)
        #expect(block.restartStride == 0)
        #expect(block.recordCount == 5 && block.tombstoneCount == 0)
        let lower: [UInt8] = [0x11, 0x01, 0x31], upper: [UInt8] = [0x11, 0x01, 0x34]
        let n = try lower.withUnsafeBytes { l in try upper.withUnsafeBytes { try block.countValues(lower: l, upper: $0) } }
        #expect(n == 3)
    }

    /// A hand-built segment with true counts (one and two index levels) counts like the brute force.
    @Test(arguments: [false, true])
    func craftedSegmentWithTrueCounts(twoLevels: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let reader = try open(craft(craftedBlocks, twoLevels: twoLevels), in: dir)
        let records = craftedBlocks.flatMap { $0 }
        for lo in 0...21 {
            for hi in lo...21 {
                let lower: [UInt8] = [0x11, 0x01, UInt8(lo)], upper: [UInt8] = [0x11, 0x01, UInt8(hi)]
                #expect(try count(reader, lower, upper) == bruteForce(records, lower, upper), "[\(lo), \(hi))")
            }
        }
    }

    /// Counts that cannot be right are corruption: when the segment opens (the root's entries
    /// against the properties, impossible entries), or when a count reads the block an entry lies
    /// about; never a crash or an overflow.
    @Test func impossibleCountsAreCorruption() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let truth = craftedBlocks.map { b in
            RecordCounts(records: UInt64(b.count), tombstones: UInt64(b.filter { $0.kind == .tombstone }.count))
        }
        func lying(_ i: Int, _ c: RecordCounts) -> [RecordCounts] {
            var t = truth
            t[i] = c
            return t
        }
        // The root (a leaf) with extreme counts: beyond the properties, tombstones beyond records,
        // sums that overflow or differ from the properties.
        let max = UInt64.max, intMax = UInt64(Int.max)
        for bad in [RecordCounts(records: max, tombstones: 0), RecordCounts(records: intMax, tombstones: 0),
                    RecordCounts(records: 5, tombstones: 6), RecordCounts(records: 6, tombstones: 1),
                    RecordCounts(records: 4, tombstones: 1), RecordCounts(records: 20, tombstones: 7)] {
            expectCorrupted("root entry \(bad)") { _ = try open(craft(craftedBlocks, twoLevels: false, leafCounts: lying(1, bad)), in: dir) }
        }
        // Two levels: the root agrees with the properties, a leaf entry does not agree with its
        // block (its sibling makes up for it). Opening cannot tell; a count that reads the block
        // and finds more values below its bound than the entry gives the whole block can.
        var shifted = lying(0, RecordCounts(records: 2, tombstones: 1))
        shifted[1].records += truth[0].records - 2
        let reader = try open(craft(craftedBlocks, twoLevels: true, leafCounts: shifted), in: dir, "000010.seg")
        expectCorrupted("a count reading the lying block") { _ = try count(reader, [0x11, 0x01, 0x03], [0x11, 0x01, 0x13]) }
        // Extreme counts below a root that claims them too: bounded by the properties at open.
        for bad in [max, intMax, 1 << 40] {
            let leaves = lying(2, RecordCounts(records: bad, tombstones: 0))
            expectCorrupted("leaf entry of \(bad) records") {
                let r = try open(craft(craftedBlocks, twoLevels: true, leafCounts: leaves), in: dir, "000011.seg")
                _ = try count(r, [0x11, 0x01, 0x01], [0x11, 0x01, 0x13])
            }
        }
        // A leaf entry of extreme counts under a root and properties that agree with each other
        // but not with it: the entry is refused when a count walks past it.
        let extreme = lying(1, RecordCounts(records: intMax, tombstones: 0))
        let half = RecordCounts(records: 10, tombstones: 3)  // blocks 0 and 1, and blocks 2 and 3
        #expect(truth[0].records + truth[1].records == 10 && truth[0].tombstones + truth[1].tombstones == 3)
        let r2 = try open(craft(craftedBlocks, twoLevels: true, leafCounts: extreme, rootCounts: [half, half]), in: dir, "000012.seg")
        expectCorrupted("a walk past an entry of Int.max records") { _ = try count(r2, [0x11, 0x01, 0x01], [0x11, 0x01, 0x13]) }
        // Properties (and a root agreeing with them) that claim more records than the file can
        // hold: a whole-segment count refuses them instead of returning them.
        let r3 = try open(craft(craftedBlocks, twoLevels: true, leafCounts: truth,
                                rootCounts: [half, RecordCounts(records: intMax - 10, tombstones: 3)],
                                adjust: { $0.records = intMax }),
                          in: dir, "000013.seg")
        expectCorrupted("properties of Int.max records") { _ = try count(r3, [], nil) }
        expectCorrupted("a range under properties of Int.max records") { _ = try count(r3, [0x11, 0x01, 0x01], [0x11, 0x01, 0x13]) }
    }
}

extension Optional where Wrapped == [UInt8] {
    fileprivate func withOptional<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        switch self {
        case .some(let b): return try b.withUnsafeBytes { try body($0) }
        case .none: return try body(nil)
        }
    }
}
