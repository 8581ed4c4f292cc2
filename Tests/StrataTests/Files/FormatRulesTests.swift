import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The rules of FORMAT.md that a reader written from the specification alone found unstated or
// contradicted (issue 10). Each is checked on a crafted file whose checksums are all valid, so
// that only the rule can reject it, and the engine (`Store`) and `strata-dump verify`
// (`StoreVerifier`) must agree: both accept, or both refuse naming the same file and offset.

// MARK: - Crafting segments

/// The stored key of the key-value API for `user`.
private func kv(_ user: String) -> [UInt8] { Keyspace.keyValue.key(Array(user.utf8)) }

/// The bytes of one block entry (FORMAT.md 5.3), written as given: no checks.
private func entryBytes(shared: Int = 0, suffix: [UInt8], kind: UInt8 = 0, value: [UInt8]) -> [UInt8] {
    var b: [UInt8] = []
    Varint.append(UInt64(shared), to: &b)
    Varint.append(UInt64(suffix.count), to: &b)
    Varint.append(UInt64(value.count), to: &b)
    return b + [kind] + suffix + value
}

/// A block of records from entry bytes and restart offsets, written as given.
private func blockBytes(_ entries: [[UInt8]], restarts: [Int] = [0]) -> [UInt8] {
    var b = entries.flatMap { $0 }
    for r in restarts { LittleEndian.append(UInt32(r), to: &b) }
    LittleEndian.append(UInt32(restarts.count), to: &b)
    return b
}

private struct Record {
    var key: [UInt8]
    var value: [UInt8]
}

/// A segment file assembled part by part, every stored block and the footer with a valid CRC.
private struct SegmentCrafter {
    var bytes: [UInt8] = []
    var properties = SegmentProperties()
    var lastKey: [UInt8] = []

    /// Appends a stored block (FORMAT.md 5.2) and returns its handle.
    mutating func store(_ payload: [UInt8], compression: UInt8 = 0, uncompressedLength: Int? = nil) -> BlockHandle {
        let handle = BlockHandle(offset: UInt64(bytes.count), length: UInt64(payload.count))
        var trailer: [UInt8] = [compression]
        LittleEndian.append(UInt32(uncompressedLength ?? payload.count), to: &trailer)
        let crc = CRC32C.checksum(trailer, extending: CRC32C.checksum(payload))
        bytes += payload + trailer
        LittleEndian.append(CRC32C.mask(crc), to: &bytes)
        return handle
    }

    /// Appends a data block of `raw` bytes holding `records`, counted in the properties.
    mutating func data(_ raw: [UInt8], records: [Record], compression: UInt8 = 0,
                       uncompressedLength: Int? = nil) -> BlockHandle {
        let h = store(raw, compression: compression, uncompressedLength: uncompressedLength)
        for r in records {
            r.key.withUnsafeBytes { properties.add(key: $0, kind: .value, valueLength: r.value.count) }
            lastKey = r.key
        }
        properties.dataBlocks += 1
        properties.uncompressedDataBytes += UInt64(raw.count)
        properties.storedDataBytes += h.length + UInt64(SegmentFormat.blockTrailerSize)
        return h
    }

    /// A data block as the writer makes it.
    mutating func data(_ records: [Record]) -> BlockHandle {
        var b = BlockBuilder(restartInterval: 16)
        for r in records { b.add(key: r.key, kind: .value, value: r.value) }
        return data(b.finish(), records: records)
    }

    /// The index: one leaf block of `entries` (every entry of kind `kind`), then single-entry
    /// blocks above it until there are `height` levels. Returns the root's handle.
    mutating func index(_ entries: [([UInt8], BlockHandle)], kind: UInt8 = 0, height: Int = 1) -> BlockHandle {
        func handleBytes(_ h: BlockHandle) -> [UInt8] {
            var v: [UInt8] = []
            h.encode(into: &v)
            return v
        }
        let raw = blockBytes(entries.map { entryBytes(suffix: $0.0, kind: kind, value: handleBytes($0.1)) },
                             restarts: entries.isEmpty ? [0] : entries.indices.map { i in
                                 entries[0..<i].map { entryBytes(suffix: $0.0, kind: kind, value: handleBytes($0.1)).count }.reduce(0, +)
                             })
        var root = store(raw)
        properties.indexBlocks += 1
        let last = entries.last?.0 ?? []
        for _ in 1..<max(height, 1) {
            root = store(blockBytes([entryBytes(suffix: last, value: handleBytes(root))]))
            properties.indexBlocks += 1
        }
        return root
    }

    /// Appends the properties and the footer; returns the file. The index entries are of format
    /// version 1 (a handle, no counts), which readers still read, so the footer says 1.
    mutating func finish(root: BlockHandle, height: Int, filter: BlockHandle = .empty,
                         rangeTombstones: BlockHandle = .empty) -> [UInt8] {
        properties.finish(lastKey: lastKey)
        let props = store(properties.encode())
        bytes += SegmentFooter(rootIndex: root, indexHeight: UInt32(height), filter: filter,
                               rangeTombstones: rangeTombstones, properties: props, formatVersion: 1).encode()
        return bytes
    }

    /// The offset of the footer in the finished file.
    var footerOffset: Int { bytes.count - SegmentFormat.footerSize }
}

/// A segment of the records `a` → `x` and `b` → `y` in one data block, as the writer makes it.
private let twoRecords = [Record(key: kv("a"), value: Array("x".utf8)), Record(key: kv("b"), value: Array("y".utf8))]

// MARK: - A store around a crafted segment

/// A closed store whose only segment, `000002.seg`, is `segment` (the engine made the store; the
/// segment and the manifest's record of it were then replaced).
private func store(holding segment: [UInt8], smallest: [UInt8], largest: [UInt8], records: UInt64) throws -> TemporaryDirectory {
    let dir = try TemporaryDirectory()
    let s = try Store.open(at: dir.url)
    try s.put(Array("a".utf8), Array("x".utf8))
    try s.compact()  // flushes log 1 into 000003.seg; writes go to the empty 000002.log
    try s.close()
    var manifest = try Manifest.decode(try dir.read(FileNames.manifest), file: FileNames.manifest)
    #expect(manifest.runs.flatMap { $0 }.map(\.number) == [3])
    #expect(manifest.logNumber == 2 && manifest.nextFileNumber == 4)
    // Number 2 goes to the crafted segment: the empty log becomes 000003.log.
    try FileManager.default.removeItem(atPath: dir.file("000003.seg"))
    try FileManager.default.removeItem(atPath: dir.file("000002.log"))
    try dir.write("000003.log", LogFormat.header(logNumber: 3))
    manifest.logNumber = 3
    manifest.runs = [[SegmentMetadata(number: 2, fileSize: UInt64(segment.count), smallestKey: smallest,
                                      largestKey: largest, records: records)]]
    try dir.write("000002.seg", segment)
    try dir.write(FileNames.manifest, manifest.encode())
    return dir
}

/// Where a refusal points: a file's name and an offset.
private struct Place: Equatable, CustomStringConvertible {
    var file: String
    var offset: Int
    var description: String { "\(file) at \(offset)" }
}

private func place(_ file: String, _ offset: Int) -> Place {
    Place(file: URL(fileURLWithPath: file).lastPathComponent, offset: offset)
}

/// What the engine makes of the store: opens it, scans it both ways and gets every key of
/// `keys`. Nil when all of it succeeds, else where the first corruption error points.
private func engineRefusal(_ dir: TemporaryDirectory, keys: [[UInt8]],
                           sourceLocation: SourceLocation = #_sourceLocation) -> Place? {
    do {
        let s = try Store.open(at: dir.url)
        defer { try? s.close() }
        _ = try s.scan()
        _ = try s.scan(reverse: true)
        for k in keys { _ = try s.get(Array(k.dropFirst(Keyspace.keyValue.prefix.count))) }
        return nil
    } catch StrataError.corrupted(let file, let offset, _) {
        return place(file, offset)
    } catch {
        Issue.record("the engine threw \(error), not .corrupted", sourceLocation: sourceLocation)
        return Place(file: "?", offset: -1)
    }
}

/// What `strata-dump verify` makes of the store: nil when clean, else where its faults point
/// (every fault must point to the same place).
private func verifierRefusal(_ dir: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws -> Place? {
    let report = try StoreVerifier.verify(storeAt: dir.path)
    guard let first = report.faults.first else { return nil }
    for f in report.faults {
        #expect(place(f.file, f.offset) == place(first.file, first.offset), "verify: \(report.faults)",
                sourceLocation: sourceLocation)
    }
    return place(first.file, first.offset)
}

/// Both the engine and verify refuse the store, naming `000002.seg` at `offset`.
private func expectBothRefuse(_ dir: TemporaryDirectory, at offset: Int, keys: [[UInt8]] = twoRecords.map(\.key),
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
    let expected = Place(file: "000002.seg", offset: offset)
    #expect(engineRefusal(dir, keys: keys, sourceLocation: sourceLocation) == expected, "engine", sourceLocation: sourceLocation)
    #expect(try verifierRefusal(dir, sourceLocation: sourceLocation) == expected, "verify", sourceLocation: sourceLocation)
}

/// Both the engine and verify accept the store, and it holds `records`.
private func expectBothAccept(_ dir: TemporaryDirectory, records: [Record] = twoRecords,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(engineRefusal(dir, keys: records.map(\.key), sourceLocation: sourceLocation) == nil, "engine", sourceLocation: sourceLocation)
    #expect(try verifierRefusal(dir, sourceLocation: sourceLocation) == nil, "verify", sourceLocation: sourceLocation)
    let s = try Store.open(at: dir.url)
    defer { try? s.close() }
    let prefix = Keyspace.keyValue.prefix.count
    #expect(try s.scan().map(\.key) == records.map { Array($0.key.dropFirst(prefix)) }, sourceLocation: sourceLocation)
    #expect(try s.scan(reverse: true).map(\.key) == records.reversed().map { Array($0.key.dropFirst(prefix)) },
            sourceLocation: sourceLocation)
}

@Suite struct FormatRulesTests {
    // MARK: 5.3 Restart offsets fall on entry boundaries

    /// A restart inside entry 0's value, whose bytes read as an entry of their own (key `am`):
    /// a reverse scan stepped back onto it and returned a record the segment does not hold, while
    /// verify (which walks forward) found nothing wrong.
    @Test func restartInsideAnEntryIsRefusedByBoth() throws {
        let fake = entryBytes(suffix: kv("am"), value: [])  // 8 bytes
        let a = entryBytes(suffix: kv("a"), value: fake)     // fake starts at offset 7
        let b = entryBytes(shared: 2, suffix: Array("b".utf8), value: Array("y".utf8))
        let records = [Record(key: kv("a"), value: fake), Record(key: kv("b"), value: Array("y".utf8))]
        for (restarts, bad) in [([0, 7], true), ([0], false)] {
            var c = SegmentCrafter()
            let data = c.data(blockBytes([a, b], restarts: restarts), records: records)
            let segment = c.finish(root: c.index([(kv("b"), data)]), height: 1)
            let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
            defer { dir.remove() }
            if bad {
                try expectBothRefuse(dir, at: 0)
                // The reverse scan that returned the phantom record refuses now.
                let s = try Store.open(at: dir.url)
                defer { try? s.close() }
                #expect(throws: StrataError.self) { _ = try s.scan(reverse: true, limit: 2) }
            } else {
                try expectBothAccept(dir, records: records)
            }
        }
    }

    // MARK: 5.3 Index and range tombstone entries have kind 0

    @Test func indexEntryOfKindOneIsRefusedByBoth() throws {
        for kind: UInt8 in [1, 0] {
            var c = SegmentCrafter()
            let data = c.data(twoRecords)
            let root = c.index([(kv("b"), data)], kind: kind)
            let segment = c.finish(root: root, height: 1)
            let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
            defer { dir.remove() }
            if kind == 0 { try expectBothAccept(dir) } else { try expectBothRefuse(dir, at: Int(root.offset)) }
        }
    }

    @Test func rangeTombstoneEntryOfKindOneIsRefusedByBoth() throws {
        for kind: UInt8 in [1, 0] {
            var c = SegmentCrafter()
            let data = c.data(twoRecords)
            let tombstones = c.store(blockBytes([entryBytes(suffix: kv("c"), kind: kind, value: kv("d"))]))
            c.properties.rangeTombstones = 1
            let segment = c.finish(root: c.index([(kv("b"), data)]), height: 1, rangeTombstones: tombstones)
            let dir = try store(holding: segment, smallest: kv("a"), largest: kv("d"), records: 2)
            defer { dir.remove() }
            if kind == 0 { try expectBothAccept(dir) } else { try expectBothRefuse(dir, at: Int(tombstones.offset)) }
        }
    }

    // MARK: 5.5 / 5.10 Index heights 1…64

    @Test(arguments: [1, 2, 17, 64, 65])
    func indexHeightsUpTo64AreAcceptedByBoth(height: Int) throws {
        var c = SegmentCrafter()
        let data = c.data(twoRecords)
        let segment = c.finish(root: c.index([(kv("b"), data)], height: height), height: height)
        let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
        defer { dir.remove() }
        if height <= 64 { try expectBothAccept(dir) } else { try expectBothRefuse(dir, at: c.footerOffset) }
    }

    @Test func indexHeightZeroIsRefusedByBoth() throws {
        var c = SegmentCrafter()
        let data = c.data(twoRecords)
        let segment = c.finish(root: c.index([(kv("b"), data)]), height: 0)
        let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
        defer { dir.remove() }
        try expectBothRefuse(dir, at: c.footerOffset)
    }

    // MARK: 5.10 An absent block: size 0, offset 0

    @Test(arguments: ["filter", "range tombstones"])
    func absentBlockWithAnOffsetIsRefusedByBoth(block: String) throws {
        for offset: UInt64 in [5, 0] {
            var c = SegmentCrafter()
            let data = c.data(twoRecords)
            let absent = BlockHandle(offset: offset, length: 0)
            let root = c.index([(kv("b"), data)])
            let segment = block == "filter" ? c.finish(root: root, height: 1, filter: absent)
                                            : c.finish(root: root, height: 1, rangeTombstones: absent)
            let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
            defer { dir.remove() }
            if offset == 0 { try expectBothAccept(dir) } else { try expectBothRefuse(dir, at: c.footerOffset) }
        }
    }

    // MARK: 5.11 Which offset an error names

    /// A stored block's faults name its first payload byte, also when its trailer is what is wrong.
    @Test(arguments: ["compression", "raw length", "entries"])
    func storedBlockFaultsNameTheBlockStart(fault: String) throws {
        var c = SegmentCrafter()
        _ = c.store(Array("padding".utf8))  // so that the data block does not start at 0
        var builder = BlockBuilder(restartInterval: 16)
        for r in twoRecords { builder.add(key: r.key, kind: .value, value: r.value) }
        var raw = builder.finish()
        let data: BlockHandle
        switch fault {
        case "compression": data = c.data(raw, records: twoRecords, compression: 7)
        case "raw length": data = c.data(raw, records: twoRecords, uncompressedLength: raw.count + 1)
        default:
            raw[3] = 9  // entry 0's kind
            data = c.data(raw, records: twoRecords)
        }
        #expect(data.offset > 0)
        let segment = c.finish(root: c.index([(kv("b"), data)]), height: 1)
        let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
        defer { dir.remove() }
        try expectBothRefuse(dir, at: Int(data.offset))
    }

    /// An index entry naming a block outside the file (or in the footer) is a fault of the index
    /// block, not of the place it names.
    @Test(arguments: [0, 1, 2])
    func badChildHandleNamesTheIndexBlock(which: Int) throws {
        func build(_ child: BlockHandle) -> (segment: [UInt8], root: BlockHandle, footer: Int) {
            var c = SegmentCrafter()
            _ = c.store([UInt8](repeating: 0xAB, count: 200))
            _ = c.data(twoRecords)
            let root = c.index([(kv("b"), child)])
            let segment = c.finish(root: root, height: 1)
            return (segment, root, c.footerOffset)
        }
        let probe = build(BlockHandle(offset: 0, length: 300))
        let bad = [BlockHandle(offset: 1 << 40, length: 10), BlockHandle(offset: 0, length: 1 << 30),
                   // Inside the file, but its trailer runs one byte into the footer.
                   BlockHandle(offset: 0, length: UInt64(probe.footer - SegmentFormat.blockTrailerSize + 1))][which]
        let (segment, root, footer) = build(bad)
        if which == 2 { #expect(footer == probe.footer) }
        let dir = try store(holding: segment, smallest: kv("a"), largest: kv("b"), records: 2)
        defer { dir.remove() }
        try expectBothRefuse(dir, at: Int(root.offset))
    }

    // MARK: 14.1 Trailing bytes in a time series' catalog payload

    /// One byte after the author table: the store and `strata-dump series` refuse the entry alike.
    @Test func seriesPayloadWithTrailingBytesIsRefusedByStoreAndInspector() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Store.open(at: dir.url)
        _ = try s.timeSeries("p", of: Double.self).append(1.5)
        let key = Catalog.key(kind: .timeSeries, name: "p")
        let stored = try #require(try s.engine.get(key))
        var batch = WriteBatch()
        batch.putRaw(key, stored + [0x00])
        try s.engine.write(batch)
        try s.close()

        let file = "catalog entry time series \"p\""
        let entry = try Catalog.decode(stored, key: key)
        let expected = StrataError.corrupted(file: file, offset: entry.payload.count, reason: "1 bytes after the payload")
        let again = try Store.open(at: dir.url)
        defer { try? again.close() }
        #expect(throws: expected) { _ = try again.timeSeries("p", of: Double.self) }
        #expect(throws: expected) { _ = try SeriesInspector.series(ofStoreAt: dir.path) }
        #expect(throws: expected) { _ = try SeriesInspector.dump(series: "p", ofStoreAt: dir.path) }
    }

    // MARK: 15.5 "now" for a tool

    /// A tool's `now` is its own clock or the largest timetoken of any channel head, whichever is
    /// later — what the store has right after opening. Channel "d" has a head 2 minutes ahead of the
    /// clock: channel "c"'s message, retained 60 s, is hidden by the store and by the tool alike,
    /// even from a tool whose clock is at 1970.
    @Test func toolNowIsItsClockOrTheLargestHeadTimetoken() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Store.open(at: dir.url)
        let c = try s.channel("c", of: String.self, options: ChannelOptions(retention: .seconds(60)))
        let t = try c.publish("m")
        _ = try s.channel("d", of: String.self)
        try s.sync()

        // Before channel d moves ahead: a tool at 1970 sees what the store sees.
        for now in [Date(timeIntervalSince1970: 0), Date()] {
            #expect(try ChannelInspector.channels(ofStoreAt: dir.path, now: now).first { $0.name == "c" }?.messages == 1)
        }
        #expect(try ChannelInspector.channels(ofStoreAt: dir.path, now: t.date.addingTimeInterval(61)).first { $0.name == "c" }?.messages == 0)

        let d = try #require(try s.catalog.entry(kind: .channel, name: "d"))
        let ahead = Timetoken(date: t.date.addingTimeInterval(120)).rawValue
        var batch = WriteBatch()
        batch.putRaw(ChannelHead.key(d.id), ChannelHead(last: ahead, floor: 0).encoded)
        try s.engine.write(batch)
        try s.close()

        for now in [Date(timeIntervalSince1970: 0), t.date] {
            let channels = try ChannelInspector.channels(ofStoreAt: dir.path, now: now)
            #expect(channels.first { $0.name == "c" }?.messages == 0, "tool now \(now)")
            #expect(try ChannelInspector.dump(channel: "c", ofStoreAt: dir.path, now: now).messages.isEmpty)
        }
        let reopened = try Store.open(at: dir.url)
        defer { try? reopened.close() }
        let channel = try reopened.channel("c", of: String.self, options: ChannelOptions(retention: .seconds(60)))
        #expect(try channel.history().messages.isEmpty, "the store hides it too")
    }

    // MARK: 3.2 Index rows are not tuples

    /// `(5, indexId) ‖ collationKey ‖ ("doc", 0)`: the tools never decode the collation key as
    /// tuple elements (a null key, `0x10`, would read as unsigned 0).
    @Test(arguments: [JSON.null, true, 1, "a", ["x", 2]])
    func indexRowKeysRenderTheirCollationKey(value: JSON) throws {
        var head = TupleKeyEncoder()
        head.append(Keyspace.indexRows.id)
        head.append(UInt64(3))
        var tail = TupleKeyEncoder()
        tail.append("doc")
        tail.append(UInt64(0))
        let key = head.bytes + value.collationKey + tail.bytes
        let text = String(decoding: value.jsonData(sortedKeys: true), as: UTF8.self)
        #expect(InspectedKey(key).text == "(5, 3) + collated \(text) + (\"doc\", 0)")
        // A tail that is not a collation key and tuple elements prints as hex after the prefix.
        let broken = head.bytes + [0x7E, 0x01]
        #expect(InspectedKey(broken).text == "(5, 3) + " + TupleKey.hex([0x7E, 0x01]))
    }

    // MARK: Whatever the engine refuses, verify reports at the same offset

    /// Random damage inside the stored blocks of a real segment, each block's CRC recomputed so
    /// that only the rules of FORMAT.md 5 can catch it: whenever the engine's reader refuses the
    /// file (opening it, walking it both ways, seeking and getting every key), `strata-dump verify`
    /// reports a fault at the offset the engine named. (Verify may find more: it also checks key
    /// order, counts and the filter.)
    @Test func verifyReportsEveryRefusalOfTheEngineAtItsOffset() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0xF0_12_A7)
        var options = SegmentWriterOptions()
        options.blockSize = 96
        options.indexBlockSize = 64
        options.restartInterval = 3
        let writer = try SegmentWriter(directory: dir.path, number: 2, options: options, fileSystem: .real)
        var keys: [[UInt8]] = []
        for i in 0..<60 {
            let key = kv(String(format: "k%03d", i * 7))
            keys.append(key)
            try writer.add(key: key, kind: i % 5 == 0 ? .tombstone : .value,
                           value: i % 5 == 0 ? [] : Array("value \(i)".utf8))
        }
        writer.addRangeTombstone(start: kv("k500"), end: kv("k600"))
        writer.addRangeTombstone(start: kv("k700"), end: kv("k800"))
        _ = try writer.finish()
        let original = try dir.read("000002.seg")
        let path = dir.file("000002.seg")

        // Every stored block: its payload offset and length, from the footer and the index.
        let reader = try SegmentReader(path: path, number: 2, cache: nil, fileSystem: .real)
        var blocks: [BlockHandle] = [reader.footer.properties, reader.footer.filter, reader.footer.rangeTombstones]
        let tree = SegmentTree(reader)
        #expect(tree.faults.isEmpty)
        blocks += tree.indexHandlesPerLevel.flatMap { $0 } + tree.dataBlocks.map(\.handle)
        blocks = blocks.filter { $0.length > 0 }
        #expect(tree.indexHandlesPerLevel.count >= 2, "an index of two levels at least")

        func engineRefusal() -> Int? {
            do {
                let r = try SegmentReader(path: path, number: 2, cache: nil, fileSystem: .real)
                let c = SegmentCursor(r)
                var steps = 0
                try c.seekToFirst()
                while c.isValid && steps < 1000 { try c.next(); steps += 1 }
                try c.seekToLast()
                while c.isValid && steps < 2000 { try c.previous(); steps += 1 }
                for k in keys + [kv("k"), kv("z")] {
                    _ = try k.withUnsafeBytes { try r.get($0, hash: KeyHash.hash64(k)) }
                    try k.withUnsafeBytes { try c.seek($0) }
                    try k.withUnsafeBytes { try c.seekForPrevious($0) }
                }
                return nil
            } catch StrataError.corrupted(_, let offset, _) {
                return offset
            } catch {
                Issue.record("the engine threw \(error)")
                return -1
            }
        }

        var refused = 0
        for round in 0..<400 {
            var bytes = original
            let h = blocks[rng.below(blocks.count)]
            let start = Int(h.offset), end = Int(h.offset + h.length)
            for _ in 0..<(1 + rng.below(3)) {
                switch rng.below(4) {
                case 0: bytes[start + rng.below(end - start)] ^= UInt8(1 << rng.below(8))
                case 1: bytes[start + rng.below(end - start)] = UInt8(truncatingIfNeeded: rng.next())
                case 2: bytes[end - 1 - rng.below(min(8, end - start))] = UInt8(truncatingIfNeeded: rng.next())  // restarts
                default: bytes[end + rng.below(5)] = UInt8(truncatingIfNeeded: rng.next())  // compression, length
                }
            }
            let crc = CRC32C.checksum(Array(bytes[(end)..<(end + 5)]), extending: CRC32C.checksum(Array(bytes[start..<end])))
            withUnsafeBytes(of: CRC32C.mask(crc).littleEndian) { for i in 0..<4 { bytes[end + 5 + i] = $0[i] } }
            try dir.write("000002.seg", bytes)
            guard let offset = engineRefusal() else { continue }
            refused += 1
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(report.faults.contains { $0.offset == offset },
                    "round \(round), block at \(h.offset): the engine refused at \(offset), verify found \(report.faults)")
        }
        #expect(refused > 100, "most damage is refused: \(refused) of 400")
    }
}
