import Synchronization
import Testing
@_spi(Layers) import StrataFormat

// Tests of ArenaSkipList's insert paths against a sorted model: the link right after the entry
// linked last (no search), the search from the previous insert's path (`afterPrevious`) and the
// search from the head, mixed in every order.

/// A model entry, in list order: key ascending, then sequence descending.
private struct Entry: Equatable, CustomStringConvertible {
    var key: [UInt8]
    var sequence: UInt64
    var kind: UInt8
    var value: [UInt8]

    static func inOrder(_ a: Entry, _ b: Entry) -> Bool {
        a.key != b.key ? a.key.lexicographicallyPrecedes(b.key) : a.sequence > b.sequence
    }

    var description: String { "\(key)@\(sequence)" }
}

private func entry(_ n: ArenaSkipList.Node) -> Entry {
    Entry(key: Array(ArenaSkipList.key(n)), sequence: ArenaSkipList.sequence(n), kind: ArenaSkipList.kind(n),
          value: Array(ArenaSkipList.value(n)))
}

private func walk(_ list: ArenaSkipList) -> [Entry] {
    var out: [Entry] = []
    var n = list.first
    while let x = n {
        out.append(entry(x))
        n = ArenaSkipList.next(x, 0)
    }
    return out
}

private func insert(_ e: Entry, into list: ArenaSkipList, afterPrevious: Bool = false) {
    e.key.withUnsafeBytes { k in
        e.value.withUnsafeBytes { v in
            list.insert(key: k, sequence: e.sequence, kind: e.kind, value: v, afterPrevious: afterPrevious)
        }
    }
}

/// The list holds exactly `model` (sorted here) in order, and a seek finds every entry (seeks
/// walk the upper levels, so a node linked at a wrong place of any level shows).
private func expectMatches(_ list: ArenaSkipList, _ model: [Entry], _ what: String) {
    let sorted = model.sorted(by: Entry.inOrder)
    #expect(list.count == sorted.count, "\(what): count")
    #expect(walk(list) == sorted, "\(what): walk")
    #expect(list.last.map(entry) == sorted.last, "\(what): last")
    for e in sorted {
        let found = e.key.withUnsafeBytes { list.seek($0, sequence: e.sequence) }.map(entry)
        if found != e {
            Issue.record("\(what): seek \(e) found \(found.map(\.description) ?? "nothing")")
            return
        }
    }
}

/// A series key: a 2-byte series number, then the event's sequence, both big-endian.
private func seriesKey(_ series: Int, _ event: UInt64) -> [UInt8] {
    [UInt8(series >> 8), UInt8(series & 0xFF)] + withUnsafeBytes(of: event.bigEndian) { Array($0) }
}

@Suite struct ArenaSkipListTests {
    @Test("appends past the list's last node (one series) link without a search and keep order")
    func appendsPastTheLastNode() {
        let list = ArenaSkipList()
        var model: [Entry] = []
        for i in 0..<5_000 {
            let e = Entry(key: seriesKey(0, UInt64(i)), sequence: UInt64(i + 1), kind: 1, value: Array("\(i)".utf8))
            insert(e, into: list, afterPrevious: i > 0)
            model.append(e)
        }
        expectMatches(list, model, "one series")
    }

    @Test("interleaved series appends (each batch right after its series' last event, in the middle of the list) keep order")
    func interleavedSeriesAppends() {
        var rng = SplitMix64(seed: 0xA77E)
        let list = ArenaSkipList()
        var model: [Entry] = []
        var next = [UInt64](repeating: 0, count: 20)
        var sequence: UInt64 = 0
        for round in 0..<600 {
            let s = round % next.count
            for j in 0..<(1 + rng.below(30)) {
                sequence += 1
                let e = Entry(key: seriesKey(s, next[s]), sequence: sequence, kind: 1, value: [UInt8(truncatingIfNeeded: sequence)])
                insert(e, into: list, afterPrevious: j > 0)
                model.append(e)
                next[s] += 1
            }
        }
        expectMatches(list, model, "interleaved series")
    }

    @Test("equal keys: a newer version (higher sequence) sorts before the one linked last and goes through the search")
    func equalKeysOrderBySequence() {
        let list = ArenaSkipList()
        var model: [Entry] = []
        let key: [UInt8] = [7, 7]
        // Descending sequences of one key come in list order (each after the last linked);
        // ascending ones each sort before the one linked last.
        for s in stride(from: UInt64(100), to: 50, by: -1) {
            let e = Entry(key: key, sequence: s, kind: 1, value: [UInt8(s)])
            insert(e, into: list)
            model.append(e)
        }
        for s in UInt64(101)..<150 {
            let e = Entry(key: key, sequence: s, kind: 0, value: [])
            insert(e, into: list)
            model.append(e)
        }
        // Lower sequences of the same key come last, then a larger key, then the key again.
        for s in UInt64(1)..<20 {
            let e = Entry(key: key, sequence: s, kind: 1, value: [UInt8(s)])
            insert(e, into: list)
            model.append(e)
        }
        for (i, e) in [Entry(key: [7, 8], sequence: 200, kind: 1, value: [1]),
                       Entry(key: [7, 7], sequence: 201, kind: 1, value: [2]),
                       Entry(key: [7, 7, 0], sequence: 202, kind: 1, value: [3]),
                       Entry(key: [7, 7], sequence: 20, kind: 1, value: [4])].enumerated() {
            insert(e, into: list)
            model.append(e)
            expectMatches(list, model, "equal keys, step \(i)")
        }
        expectMatches(list, model, "equal keys")
    }

    @Test("randomized: appends, in-order batches and out-of-order inserts mixed give the sorted model", arguments: [UInt64(1), 2, 3, 4])
    func randomizedAgainstSortedModel(seed: UInt64) {
        var rng = SplitMix64(seed: 0x5EED_0000 + seed)
        let list = ArenaSkipList()
        var model: [Entry] = []
        var used = Set<Entry.Identity>()
        var sequence: UInt64 = 1_000_000
        func randomKey() -> [UInt8] { (0..<rng.below(5)).map { _ in UInt8(truncatingIfNeeded: rng.below(6) * 51) } }
        @discardableResult
        func add(_ e: Entry, afterPrevious: Bool = false) -> Bool {
            guard used.insert(e.identity).inserted else { return false }
            insert(e, into: list, afterPrevious: afterPrevious)
            model.append(e)
            return true
        }
        for round in 0..<300 {
            switch rng.below(4) {
            case 0:
                // Past the last entry, in order.
                var key = model.max(by: Entry.inOrder)?.key ?? []
                for _ in 0..<(1 + rng.below(20)) {
                    key.append(UInt8(rng.below(256)))
                    sequence += 1
                    add(Entry(key: key, sequence: sequence, kind: 1, value: Array("\(sequence)".utf8)))
                }
            case 1:
                // A sorted batch of random keys (the memtable's path), some with older sequences.
                var batch: [Entry] = []
                for _ in 0..<(1 + rng.below(40)) {
                    sequence += 1
                    let s = rng.chance(250) ? UInt64(rng.below(1_000)) : sequence
                    batch.append(Entry(key: randomKey(), sequence: s, kind: UInt8(s % 2), value: [UInt8(truncatingIfNeeded: s)]))
                }
                batch.sort(by: Entry.inOrder)
                // `afterPrevious` once this batch has inserted something (duplicates are skipped).
                var inserted = false
                for e in batch where add(e, afterPrevious: inserted) {
                    inserted = true
                }
            case 2:
                // Right after an existing entry: its key with an older sequence, or the key extended.
                guard let at = model.randomElement(using: &rng) else { continue }
                let e = rng.chance(500)
                    ? Entry(key: at.key, sequence: at.sequence > 0 ? at.sequence - 1 : 0, kind: 0, value: [])
                    : Entry(key: at.key + [0], sequence: at.sequence, kind: 1, value: [9])
                add(e)
            default:
                // Out of order: random keys and sequences.
                for _ in 0..<(1 + rng.below(10)) {
                    sequence += 1
                    add(Entry(key: randomKey(), sequence: rng.chance(500) ? sequence : UInt64(rng.below(2_000)), kind: 1,
                              value: Array("r\(round)".utf8)))
                }
            }
            if round % 50 == 0 { expectMatches(list, model, "seed \(seed) round \(round)") }
        }
        expectMatches(list, model, "seed \(seed)")
    }
}

private extension Entry {
    /// What must be unique in a list: the key and the sequence.
    struct Identity: Hashable {
        var key: [UInt8]
        var sequence: UInt64
    }

    var identity: Identity { Identity(key: key, sequence: sequence) }
}

/// An ``ArenaMemory`` on the heap that counts what is out (chunks and bytes), with small chunks.
private final class CountingMemory: Sendable {
    let out = Mutex<(chunks: Int, bytes: Int, taken: Int)>((0, 0, 0))

    func memory(chunkSize: Int) -> ArenaMemory {
        ArenaMemory(
            chunkSize: chunkSize,
            allocate: { [self] size in
                out.withLock { $0.chunks += 1; $0.bytes += size; $0.taken += 1 }
                return UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
            },
            deallocate: { [self] chunk, size in
                out.withLock { $0.chunks -= 1; $0.bytes -= size }
                chunk.deallocate()
            })
    }
}

extension ArenaSkipListTests {
    @Test("a list takes its chunks from its ArenaMemory (a node larger than a chunk gets one of its own) and gives them all back")
    func chunksComeFromAndGoBackToTheMemory() {
        let counter = CountingMemory()
        do {
            let list = ArenaSkipList(memory: counter.memory(chunkSize: 256))
            var model: [Entry] = []
            for i in 0..<200 {
                let big = i % 50 == 7
                let e = Entry(key: seriesKey(1, UInt64(i)), sequence: UInt64(i + 1), kind: 1,
                              value: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: big ? 1_000 : 5))
                insert(e, into: list)
                model.append(e)
            }
            expectMatches(list, model, "small chunks")
            let out = counter.out.withLock { $0 }
            #expect(out.chunks > 20 && out.chunks == out.taken)
            #expect(out.bytes >= list.memoryUsage)
        }
        #expect(counter.out.withLock { $0.chunks } == 0)
        #expect(counter.out.withLock { $0.bytes } == 0)
    }
}
