import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

// MARK: - Reference model

private struct Entry: Equatable {
    var key: [UInt8]
    var kind: RecordKind
    var value: [UInt8]
}

/// The reference order, independent of `ByteComparison`: unsigned byte-wise, a prefix first.
private func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

/// Index of the first entry with key >= target (entries.count if none).
private func lowerBound(_ entries: [Entry], _ target: [UInt8]) -> Int {
    var lo = 0, hi = entries.count
    while lo < hi {
        let mid = (lo + hi) / 2
        if less(entries[mid].key, target) { lo = mid + 1 } else { hi = mid }
    }
    return lo
}

/// Index of the last entry with key <= target (-1 if none).
private func lastAtOrBefore(_ entries: [Entry], _ target: [UInt8]) -> Int {
    var i = lowerBound(entries, target)
    if i == entries.count || entries[i].key != target { i -= 1 }
    return i
}

/// Random sorted, distinct entries biased towards what breaks prefix compression: shared
/// prefixes of many lengths, the empty key, long keys, empty values and tombstones.
private func randomEntries(count: Int, _ rng: inout SplitMix64) -> [Entry] {
    let prefixes: [[UInt8]] = [
        [], [0x00], [0x61], [0x61, 0x62], [0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69],
        [0xFF], [0xFF, 0xFF, 0x00], [UInt8](repeating: 0x41, count: 300),
    ]
    var keys = Set<[UInt8]>()
    if rng.next() % 2 == 0 { keys.insert([]) }
    while keys.count < count {
        var key = prefixes[Int(rng.next() % UInt64(prefixes.count))]
        let suffixLength: Int
        switch rng.next() % 10 {
        case 0: suffixLength = 0
        case 1: suffixLength = 200 + Int(rng.next() % 1000)  // long keys
        default: suffixLength = 1 + Int(rng.next() % 6)
        }
        for _ in 0..<suffixLength { key.append([0x00, 0x01, 0x61, 0x62, 0x7F, 0x80, 0xFF][Int(rng.next() % 7)]) }
        keys.insert(key)
    }
    return keys.sorted(by: less).map { key in
        let tombstone = rng.next() % 5 == 0
        let valueLength: Int
        switch rng.next() % 8 {
        case 0, 1: valueLength = 0
        case 2: valueLength = 100 + Int(rng.next() % 900)
        default: valueLength = 1 + Int(rng.next() % 20)
        }
        let value = tombstone && rng.next() % 2 == 0
            ? [] : (0..<valueLength).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        return Entry(key: key, kind: tombstone ? .tombstone : .value, value: value)
    }
}

private func buildBlock(_ entries: [Entry], restartInterval: Int) -> [UInt8] {
    var builder = BlockBuilder(restartInterval: restartInterval)
    for e in entries { builder.add(key: e.key, kind: e.kind, value: e.value) }
    return builder.finish()
}

private func current(_ c: BlockCursor) -> Entry { Entry(key: c.key, kind: c.kind, value: c.valueBytes) }

/// Targets around every interesting place: present keys, keys just before and after them,
/// before the first, after the last, random ones.
private func seekTargets(_ entries: [Entry], _ rng: inout SplitMix64) -> [[UInt8]] {
    var targets: [[UInt8]] = [[], [0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]]
    if let last = entries.last { targets.append(last.key + [0x00]) }
    for e in entries {
        targets.append(e.key)
        targets.append(e.key + [0x00])
        if !e.key.isEmpty {
            targets.append(Array(e.key.dropLast()))
            var bumped = e.key
            bumped[bumped.count - 1] &+= 1
            targets.append(bumped)
        }
    }
    for _ in 0..<50 {
        targets.append((0..<Int(rng.next() % 5)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
    }
    return targets
}

/// Checks one block against its entries: forward, backward, seek and seekForPrevious.
private func verify(_ entries: [Entry], restartInterval: Int, _ rng: inout SplitMix64) throws {
    let block = try Block(copying: buildBlock(entries, restartInterval: restartInterval))
    #expect(block.restartCount == max(1, (entries.count + restartInterval - 1) / restartInterval))

    // Forward.
    var c = BlockCursor(block)
    try c.seekToFirst()
    var forward: [Entry] = []
    while c.isValid {
        forward.append(current(c))
        try c.next()
    }
    #expect(forward == entries, "forward iteration, interval \(restartInterval)")

    // Backward.
    try c.seekToLast()
    var backward: [Entry] = []
    while c.isValid {
        backward.append(current(c))
        try c.previous()
    }
    #expect(backward == entries.reversed(), "reverse iteration, interval \(restartInterval)")

    // Seeks, each followed by a few steps in both directions.
    for target in seekTargets(entries, &rng) {
        let i = lowerBound(entries, target)
        try c.seek(target)
        if i == entries.count {
            #expect(!c.isValid, "seek past the end, interval \(restartInterval)")
        } else {
            #expect(c.isValid && current(c) == entries[i], "seek(\(target)), interval \(restartInterval)")
            var probe = c
            for step in 1...3 {
                try probe.next()
                if i + step < entries.count {
                    #expect(probe.isValid && probe.key == entries[i + step].key)
                } else {
                    #expect(!probe.isValid)
                    break
                }
            }
            try c.previous()
            if i == 0 { #expect(!c.isValid) } else { #expect(c.isValid && c.key == entries[i - 1].key) }
        }

        // The in-place search of index lookups: exact for restart interval 1, else nil or exact.
        switch try target.withUnsafeBytes({ try block.lookupWholeKeys($0) }) {
        case .found(_, let value)?:
            #expect(i < entries.count && Array(value) == entries[i].value, "lookupWholeKeys(\(target)), interval \(restartInterval)")
        case .notFound?:
            #expect(i == entries.count, "lookupWholeKeys(\(target)) found nothing, interval \(restartInterval)")
        case nil:
            #expect(restartInterval > 1, "lookupWholeKeys declined a block of restart interval 1")
        }

        let j = lastAtOrBefore(entries, target)
        try target.withUnsafeBytes { try c.seekForPrevious($0) }
        if j < 0 {
            #expect(!c.isValid, "seekForPrevious before the first, interval \(restartInterval)")
        } else {
            #expect(c.isValid && current(c) == entries[j], "seekForPrevious(\(target)), interval \(restartInterval)")
            try c.previous()
            if j == 0 { #expect(!c.isValid) } else { #expect(c.isValid && c.key == entries[j - 1].key) }
        }

        // seekForPrevious remembers the entries it decodes: every step back from it, and a step
        // forward and back again in the middle, still reads the block.
        try target.withUnsafeBytes { try c.seekForPrevious($0) }
        var k = j
        while k >= 0 {
            #expect(c.isValid && current(c) == entries[k], "backward from seekForPrevious(\(target)), interval \(restartInterval)")
            if k == j - 1 {
                try c.next()
                #expect(c.isValid && current(c) == entries[k + 1], "forward during a backward walk, interval \(restartInterval)")
                try c.previous()
                #expect(c.isValid && current(c) == entries[k], "back again, interval \(restartInterval)")
            }
            try c.previous()
            k -= 1
        }
        #expect(!c.isValid, "backward from seekForPrevious(\(target)) past the first, interval \(restartInterval)")
    }
}

/// Runs `body` and checks that it throws ``StrataError/corrupted(file:offset:reason:)``.
private func expectCorrupted(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("\(what): no error thrown", sourceLocation: sourceLocation)
    } catch StrataError.corrupted {
        // expected
    } catch {
        Issue.record("\(what): \(error) instead of .corrupted", sourceLocation: sourceLocation)
    }
}

/// Walks the whole block both ways and seeks; any error surfaces to the caller.
private func exercise(_ block: Block, targets: [[UInt8]]) throws {
    var c = BlockCursor(block)
    var steps = 0
    try c.seekToFirst()
    while c.isValid {
        try c.next()
        steps += 1
        if steps > block.bytes.count + 1 { throw LoopError.runaway }
    }
    steps = 0
    try c.seekToLast()
    while c.isValid {
        try c.previous()
        steps += 1
        if steps > block.bytes.count + 1 { throw LoopError.runaway }
    }
    for t in targets {
        try c.seek(t)
        try t.withUnsafeBytes { try c.seekForPrevious($0) }
        _ = try t.withUnsafeBytes { try block.lookupWholeKeys($0) }
    }
}

private enum LoopError: Error { case runaway }

@Suite struct BlockTests {
    @Test(arguments: [1, 2, 16])
    func randomBlocksMatchTheReference(restartInterval: Int) throws {
        var rng = SplitMix64(seed: 0xB10C_0000 + UInt64(restartInterval))
        for count in [1, 2, 3, 5, 17, 40, 150] {
            try verify(randomEntries(count: count, &rng), restartInterval: restartInterval, &rng)
        }
    }

    /// `Block.find` (the point-lookup path, which never materializes keys) agrees with the
    /// reference for present keys, near misses, prefixes and extensions of keys, at every
    /// restart interval.
    @Test(arguments: [1, 2, 3, 16])
    func findMatchesTheReference(restartInterval: Int) throws {
        var rng = SplitMix64(seed: 0xB10C_F1D0 + UInt64(restartInterval))
        for round in 0..<20 {
            let entries = randomEntries(count: 1 + Int(rng.next() % 300), &rng)
            let block = try Block(copying: buildBlock(entries, restartInterval: restartInterval))
            for target in seekTargets(entries, &rng) {
                let expected = entries.first { $0.key == target }
                let found = try target.withUnsafeBytes { try block.find($0) }
                #expect(found.map { Entry(key: target, kind: $0.0, value: Array($0.1)) } == expected,
                        "round \(round), interval \(restartInterval), target \(target)")
            }
        }
        var emptyBuilder = BlockBuilder(restartInterval: restartInterval)
        let empty = try Block(copying: emptyBuilder.finish())
        #expect(try [UInt8]([1]).withUnsafeBytes { try empty.find($0) } == nil)
    }

    @Test func emptyKeyAndEmptyValues() throws {
        var rng = SplitMix64(seed: 0xB10C_0010)
        let entries = [
            Entry(key: [], kind: .value, value: []),
            Entry(key: [0x00], kind: .tombstone, value: []),
            Entry(key: [0x00, 0x00], kind: .value, value: [0x01]),
            Entry(key: [0x01], kind: .value, value: []),
        ]
        for interval in [1, 2, 16] { try verify(entries, restartInterval: interval, &rng) }
    }

    @Test func sameLengthKeysOverwriteInPlace() throws {
        // Fixed-width keys take the in-place suffix overwrite path of the decoder.
        var rng = SplitMix64(seed: 0xB10C_0011)
        var keys = Set<[UInt8]>()
        while keys.count < 300 { keys.insert((0..<8).map { _ in UInt8(truncatingIfNeeded: rng.next() % 4) }) }
        let entries = keys.sorted(by: less).map { Entry(key: $0, kind: .value, value: Array($0.reversed())) }
        for interval in [1, 2, 16] { try verify(entries, restartInterval: interval, &rng) }
    }

    /// A cursor reset onto another block reads that block only: the entries it remembered for
    /// backward steps in the first (at the same offsets, the blocks being laid out alike) are
    /// forgotten.
    @Test(arguments: [1, 2, 16])
    func resetForgetsThePreviousBlock(restartInterval: Int) throws {
        var first: [Entry] = []
        var second: [Entry] = []
        for i in 0..<100 {
            let b = UInt8(i)
            first.append(Entry(key: [0x61, b], kind: .value, value: [b]))
            let kind: RecordKind = i % 3 == 0 ? .tombstone : .value
            second.append(Entry(key: [0x62, b], kind: kind, value: [99 - b]))
        }
        let a = try Block(copying: buildBlock(first, restartInterval: restartInterval))
        let b = try Block(copying: buildBlock(second, restartInterval: restartInterval))
        var c = BlockCursor(a)
        try c.seekToLast()
        for _ in 0..<37 { try c.previous() }
        #expect(c.isValid && current(c) == first[62])
        for (block, entries) in [(b, second), (a, first), (b, second)] {
            c.reset(block)
            #expect(!c.isValid)
            try c.seekToLast()
            var backward: [Entry] = []
            while c.isValid {
                backward.append(current(c))
                try c.previous()
            }
            #expect(backward == entries.reversed(), "interval \(restartInterval)")
            c.reset(block)
            try entries[50].key.withUnsafeBytes { try c.seekForPrevious($0) }
            var k = 50
            while c.isValid {
                #expect(current(c) == entries[k], "interval \(restartInterval)")
                try c.previous()
                k -= 1
            }
            #expect(k == -1)
            c.reset(block)
            try c.seekToFirst()
            var forward: [Entry] = []
            while c.isValid {
                forward.append(current(c))
                try c.next()
            }
            #expect(forward == entries, "interval \(restartInterval)")
        }
    }

    @Test func emptyBlock() throws {
        var builder = BlockBuilder(restartInterval: 16)
        #expect(builder.isEmpty)
        let bytes = builder.finish()
        #expect(bytes == [0, 0, 0, 0, 1, 0, 0, 0])  // one restart at 0, count 1
        let block = try Block(copying: bytes)
        var c = BlockCursor(block)
        try c.seekToFirst()
        #expect(!c.isValid)
        try c.seekToLast()
        #expect(!c.isValid)
        try c.seek([0x61])
        #expect(!c.isValid)
        try c.seek([])
        #expect(!c.isValid)
        try [UInt8]([0x61]).withUnsafeBytes { try c.seekForPrevious($0) }
        #expect(!c.isValid)
        try c.next()
        try c.previous()
        #expect(!c.isValid)
        // An empty index block (the root of a segment without records) holds nothing.
        do {
            switch try [UInt8]([0x61]).withUnsafeBytes({ try block.lookupWholeKeys($0) }) {
            case .found?: Issue.record("lookupWholeKeys found an entry in an empty block")
            case .notFound?, nil: break
            }
        } catch {
            Issue.record("lookupWholeKeys on a valid empty block threw \(error)")
        }
    }

    @Test func builderSizeAndReset() throws {
        var builder = BlockBuilder(restartInterval: 2)
        builder.add(key: [0x61, 0x62], kind: .value, value: [0x01, 0x02, 0x03])
        builder.add(key: [0x61, 0x63], kind: .tombstone, value: [])
        builder.add(key: [0x62], kind: .value, value: [0x04])
        #expect(builder.count == 3)
        #expect(builder.lastAddedKey == [0x62])
        let estimated = builder.estimatedSize
        let bytes = builder.finish()
        #expect(bytes.count == estimated)
        // The layout of FORMAT.md "Blocks": shared, unshared, value length, kind, suffix, value.
        #expect(bytes == [
            0, 2, 3, 0, 0x61, 0x62, 0x01, 0x02, 0x03,  // offset 0: restart
            1, 1, 0, 1, 0x63,  // offset 9: shares "a" with "ab"
            0, 1, 1, 0, 0x62, 0x04,  // offset 14: restart, stored whole
            0, 0, 0, 0, 14, 0, 0, 0, 2, 0, 0, 0,
        ])
        #expect(builder.isEmpty)
        #expect(builder.finish() == [0, 0, 0, 0, 1, 0, 0, 0])
    }

    // MARK: Malformed blocks

    @Test func tooShortBlocksThrow() {
        for bytes: [UInt8] in [[], [1], [1, 0, 0]] {
            expectCorrupted("\(bytes.count)-byte block") { _ = try Block(copying: bytes) }
        }
    }

    @Test func impossibleRestartCountsThrow() {
        expectCorrupted("restart count 0") { _ = try Block(copying: [0, 0, 0, 0]) }
        expectCorrupted("restart count 2 in 8 bytes") { _ = try Block(copying: [0, 0, 0, 0, 2, 0, 0, 0]) }
        var bytes = buildBlock([Entry(key: [1], kind: .value, value: [2]), Entry(key: [3], kind: .value, value: [4])],
                               restartInterval: 1)
        for count: UInt32 in [3, 100, 0xFFFF_FFFF] {
            withUnsafeBytes(of: count.littleEndian) { c in
                for i in 0..<4 { bytes[bytes.count - 4 + i] = c[i] }
            }
            expectCorrupted("restart count \(count)") { _ = try Block(copying: bytes) }
        }
    }

    @Test func restartsOutOfOrderOrPastTheEntriesThrow() {
        let entries = (0..<4).map { Entry(key: [UInt8($0)], kind: .value, value: [0xEE]) }
        let good = buildBlock(entries, restartInterval: 1)  // 6-byte entries, restarts at 0, 6, 12, 18
        let restartsAt = good.count - 4 - 16
        #expect(restartsAt == 24)
        #expect(throws: Never.self) { _ = try Block(copying: good) }

        func with(_ restarts: [UInt32]) -> [UInt8] {
            var b = good
            for (i, r) in restarts.enumerated() {
                withUnsafeBytes(of: r.littleEndian) { for k in 0..<4 { b[restartsAt + 4 * i + k] = $0[k] } }
            }
            return b
        }
        expectCorrupted("swapped restarts") { _ = try Block(copying: with([0, 12, 6, 18])) }
        expectCorrupted("repeated restart") { _ = try Block(copying: with([0, 6, 6, 18])) }
        expectCorrupted("restart at the restart array") { _ = try Block(copying: with([0, 6, 12, UInt32(restartsAt)])) }
        expectCorrupted("restart past the block") { _ = try Block(copying: with([0, 6, 12, 0xFFFF_FFF0])) }
    }

    /// A block whose first restart is not at offset 0 is one no writer produces. It must be rejected:
    /// otherwise `seekToFirst` (which starts at offset 0) and `seek` (which starts at restart 0)
    /// disagree, and a seek silently skips the entries before the first restart.
    @Test func firstRestartMustBeAtTheFirstEntry() throws {
        let entries = (1...3).map { Entry(key: [UInt8($0)], kind: .value, value: [0xEE]) }
        let good = buildBlock(entries, restartInterval: 1)  // 6-byte entries, restarts at 0, 6, 12
        var bad = Array(good[0..<(good.count - 16)])
        for r: UInt32 in [6, 12] { LittleEndian.append(r, to: &bad) }  // restarts [6, 12]: entry 0 is before both
        LittleEndian.append(UInt32(2), to: &bad)
        do {
            let block = try Block(copying: bad)
            // Accepted: then at least the cursor must be consistent with iteration.
            var c = BlockCursor(block)
            try c.seek([0x01])
            #expect(c.isValid && c.key == [0x01],
                    "a block with restarts [6, 12] (first entry at 0) was accepted, and seek([1]) returned \(c.isValid ? "\(c.key)" : "nothing")")
        } catch StrataError.corrupted {
            // rejected: fine
        }
    }

    /// FORMAT.md 5.3: a block's entries are checked before the block is used, so each of these is
    /// refused when the block is made, before any cursor can walk it.
    @Test func entriesRunningPastTheEndThrow() throws {
        func block(_ entries: [UInt8], restarts: [UInt32]) -> [UInt8] {
            var bytes = entries
            for r in restarts { LittleEndian.append(r, to: &bytes) }
            LittleEndian.append(UInt32(restarts.count), to: &bytes)
            return bytes
        }
        // One entry claiming a 100-byte suffix with 2 bytes present.
        expectCorrupted("unshared past the end") { _ = try Block(copying: block([0, 100, 0, 0, 0x61, 0x62], restarts: [0])) }
        // A value length past the end.
        expectCorrupted("value past the end") { _ = try Block(copying: block([0, 1, 50, 0, 0x61, 0x01], restarts: [0])) }
        // A header varint cut by the restart array.
        expectCorrupted("truncated header") { _ = try Block(copying: block([0, 0x80], restarts: [0])) }
        // A restart entry that claims to share a prefix with nothing.
        expectCorrupted("restart with shared > 0") {
            _ = try Block(copying: block([0, 1, 0, 0, 0x61, /* offset 5 */ 1, 1, 0, 0, 0x62], restarts: [0, 5]))
        }
        // A shared length longer than the previous key.
        expectCorrupted("shared longer than the previous key") {
            _ = try Block(copying: block([0, 1, 0, 0, 0x61, /* offset 5 */ 3, 1, 0, 0, 0x62], restarts: [0]))
        }
        // The same entries, well formed, are accepted.
        let good = try Block(copying: block([0, 1, 0, 0, 0x61, /* offset 5 */ 0, 1, 0, 0, 0x62], restarts: [0, 5]))
        var c = BlockCursor(good)
        try c.seekToLast()
        #expect(c.key == [0x62])
    }

    /// FORMAT.md 5.3: every restart offset is an entry boundary. A restart inside an entry (here
    /// inside entry 0's value, whose bytes read as an entry of their own, key `a m`) would make a
    /// backward step decode those bytes as a record that does not exist.
    @Test func restartsInsideAnEntryThrow() throws {
        // Entry 0: key "a", an 8-byte value that looks like an entry (shared 0, key "am", no value);
        // entry 1 (offset 12): key "b" sharing nothing, value "x". Entries end at 18.
        let entries: [UInt8] = [0, 1, 7, 0, 0x61, /* offset 5 */ 0, 2, 0, 0, 0x61, 0x6d, 0xEE, /* offset 12 */ 0, 1, 1, 0, 0x62, 0x78]
        func block(_ restarts: [UInt32]) -> [UInt8] {
            var bytes = entries
            for r in restarts { LittleEndian.append(r, to: &bytes) }
            LittleEndian.append(UInt32(restarts.count), to: &bytes)
            return bytes
        }
        for restarts: [UInt32] in [[0, 5], [0, 5, 12], [0, 13], [0, 12, 17]] {
            do {
                _ = try Block(copying: block(restarts), file: "x.seg", fileOffset: 4096)
                Issue.record("restarts \(restarts) accepted")
            } catch let StrataError.corrupted(file, offset, reason) {
                #expect(file == "x.seg" && offset == 4096)
                #expect(reason.contains("not an entry boundary"), "\(reason)")
            }
        }
        for restarts: [UInt32] in [[0], [0, 12]] {
            var c = BlockCursor(try Block(copying: block(restarts)))
            try c.seekToLast()
            try c.previous()
            #expect(c.isValid && c.key == [0x61], "restarts \(restarts)")
        }
    }

    @Test func unknownKindByteThrows() throws {
        for kind: UInt8 in [2, 0x7F, 0xFF] {
            var bytes: [UInt8] = [0, 1, 1, kind, 0x61, 0x01]
            LittleEndian.append(UInt32(0), to: &bytes)
            LittleEndian.append(UInt32(1), to: &bytes)
            do {
                _ = try Block(copying: bytes, file: "x.seg", fileOffset: 4096)
                Issue.record("kind \(kind) accepted")
            } catch let StrataError.corrupted(file, offset, reason) {
                #expect(file == "x.seg")
                #expect(offset == 4096)
                #expect(reason.contains("kind"))
            }
        }
    }

    /// 10,000 random mutations of a valid block: decoding and walking it must either succeed or
    /// throw `.corrupted`, never trap, loop forever or throw anything else.
    @Test func fuzzedBlocksNeverTrap() throws {
        var rng = SplitMix64(seed: 0xB10C_F022)
        let entries = randomEntries(count: 40, &rng).map { e -> Entry in
            var e = e
            if e.key.count > 40 { e.key = Array(e.key.prefix(40)) }
            if e.value.count > 16 { e.value = Array(e.value.prefix(16)) }
            return e
        }
        // Truncating long keys may have created duplicates or disorder: restore a strict order.
        var unique: [Entry] = []
        for e in entries.sorted(by: { less($0.key, $1.key) }) where unique.last?.key != e.key { unique.append(e) }
        let good = buildBlock(unique, restartInterval: 4)
        let targets: [[UInt8]] = [[], [0x61], [0xFF, 0xFF], unique[unique.count / 2].key]
        try exercise(try Block(copying: good), targets: targets)

        var accepted = 0, rejected = 0
        for round in 0..<10_000 {
            var bytes = good
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                switch rng.next() % 6 {
                case 0:  // flip a bit
                    let i = Int(rng.next() % UInt64(bytes.count))
                    bytes[i] ^= 1 << (rng.next() % 8)
                case 1:  // a random byte
                    let i = Int(rng.next() % UInt64(bytes.count))
                    bytes[i] = UInt8(truncatingIfNeeded: rng.next())
                case 2:  // truncate
                    bytes.removeLast(Int(rng.next() % UInt64(min(bytes.count, 12) + 1)))
                case 3:  // a byte in the restart array or the count
                    if bytes.count >= 8 {
                        let i = bytes.count - 1 - Int(rng.next() % 8)
                        bytes[i] = UInt8(truncatingIfNeeded: rng.next())
                    }
                case 4:  // insert a byte
                    bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: Int(rng.next() % UInt64(bytes.count + 1)))
                default:  // a large varint in an entry header
                    let i = Int(rng.next() % UInt64(max(bytes.count - 12, 1)))
                    if i + 2 < bytes.count { bytes[i] = 0xFF; bytes[i + 1] = 0xFF; bytes[i + 2] = 0x7F }
                }
                if bytes.isEmpty { break }
            }
            do {
                try exercise(try Block(copying: bytes), targets: targets)
                accepted += 1
            } catch StrataError.corrupted {
                rejected += 1
            } catch {
                Issue.record("round \(round): \(error)")
            }
        }
        print("BlockTests fuzz: \(accepted) mutated blocks walked without error, \(rejected) rejected as corrupted")
        #expect(rejected > 0)
    }
}
