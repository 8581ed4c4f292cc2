import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

// MARK: - Fixtures

/// A fresh directory under the system's temporary directory, removed after `body`.
private func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("strata-inspector-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

private func userKey(_ i: Int) -> [UInt8] {
    let digits = String(i)
    return Array(("key-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits).utf8)
}

/// How a user key of the key-value keyspace renders: `(1) + "key-000042"`.
private func rendered(_ user: [UInt8]) -> String {
    "(1) + \"" + String(decoding: user, as: UTF8.self) + "\""
}

/// Half random bytes, then a repeated pattern: LZ4 shrinks the blocks, but not to nothing.
private func value(_ rng: inout SplitMix64, size: Int) -> [UInt8] {
    (0..<size).map { i in i < size / 2 ? UInt8(truncatingIfNeeded: rng.next()) : UInt8(ascii: "a") + UInt8(i % 7) }
}

/// What a test store holds, from the writer's side.
private struct WrittenStore {
    var directory: URL
    /// The key-value pairs live after every write (user keys).
    var live: [[UInt8]: [UInt8]] = [:]
    /// Batches written after the last compaction, and their operations, in order.
    var lateBatches: [[(kind: LogDump.OperationKind, key: [UInt8], end: [UInt8]?, valueSize: Int?)]] = []

    var path: String { directory.path }
}

/// Builds a store through the public API: puts in batches, point deletes, a range delete, with a
/// 64 KiB memtable so that there are several flushes. With `compact`, everything is then merged
/// into one run and a few batches are written after it, which stay in the live log.
private func buildStore(in parent: URL, seed: UInt64, keys: Int = 3_000, compact: Bool) throws -> WrittenStore {
    let dir = parent.appendingPathComponent("store", isDirectory: true)
    var options = StoreOptions()
    options.memtableSize = 64 << 10
    options.blockSize = 1 << 10
    var rng = SplitMix64(seed: seed)
    var written = WrittenStore(directory: dir)
    let store = try Store.open(at: dir, options: options)
    do {
        var batch = WriteBatch()
        for i in 0..<keys {
            let v = value(&rng, size: 100 + Int(rng.next() % 150))
            batch.put(userKey(i), v)
            written.live[userKey(i)] = v
            if batch.count == 50 {
                try store.write(batch)
                batch = WriteBatch()
            }
        }
        try store.write(batch)
        // Point deletes of every 13th key, and one range.
        var deletes = WriteBatch()
        for i in stride(from: 0, to: keys, by: 13) {
            deletes.delete(userKey(i))
            written.live[userKey(i)] = nil
        }
        try store.write(deletes)
        try store.write({ var b = WriteBatch(); b.deleteRange(from: userKey(1_000), to: userKey(1_100)); return b }())
        for i in 1_000..<1_100 { written.live[userKey(i)] = nil }

        if compact {
            try store.compact()
            // Written after the compaction's flush: these stay in the live log.
            let late: [[(kind: LogDump.OperationKind, key: [UInt8], end: [UInt8]?, valueSize: Int?)]] = [
                [(.put, userKey(keys), nil, 10), (.put, userKey(keys + 1), nil, 20), (.put, userKey(keys + 2), nil, 30)],
                [(.delete, userKey(5), nil, nil)],
                [(.deleteRange, userKey(20), userKey(30), nil)],
                [(.put, userKey(keys + 3), nil, 40), (.delete, userKey(7), nil, nil)],
            ]
            for ops in late {
                var b = WriteBatch()
                for op in ops {
                    switch op.kind {
                    case .put: b.put(op.key, [UInt8](repeating: 0x61, count: op.valueSize!))
                    case .delete: b.delete(op.key)
                    case .deleteRange: b.deleteRange(from: op.key, to: op.end!)
                    }
                }
                try store.write(b)
            }
            written.lateBatches = late
        }
    } catch {
        try? store.close()
        throw error
    }
    try store.close()
    return written
}

private func manifest(of store: WrittenStore) throws -> Manifest {
    try #require(try Manifest.read(directory: store.path, fileSystem: .real))
}

private func segmentPaths(_ store: WrittenStore) throws -> [String] {
    try manifest(of: store).runs.flatMap { $0 }.map { store.path + "/" + FileNames.segment($0.number) }
}

private func flipByte(at offset: Int, in path: String) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seek(toOffset: UInt64(offset))
    let old = try #require(try handle.read(upToCount: 1)?.first)
    try handle.seek(toOffset: UInt64(offset))
    try handle.write(contentsOf: [old ^ 0x5A])
}

private func truncateFile(_ path: String, to size: Int) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.truncate(atOffset: UInt64(size))
}

/// A segment written directly with the segment writer: two keyspaces (key-value and a tuple
/// keyspace 7), tombstones, two range tombstones, small blocks so there are many of them.
private func writeSegment(in dir: URL, number: UInt64 = 9, records: Int = 1_500) throws -> (path: String, meta: SegmentMetadata) {
    var options = SegmentWriterOptions()
    options.blockSize = 1 << 10
    let writer = try SegmentWriter(directory: dir.path, number: number, options: options, fileSystem: .real)
    var rng = SplitMix64(seed: 0xD0D0 + number)
    for i in 0..<records {
        let kind: RecordKind = i % 17 == 3 ? .tombstone : .value
        try writer.add(key: Keyspace.keyValue.key(userKey(i)), kind: kind,
                       value: kind == .value ? value(&rng, size: 40 + Int(rng.next() % 60)) : [])
    }
    for i in 0..<200 {
        try writer.add(key: TupleKey.encode([.uint(7), .string("series"), .uint(UInt64(i))]), kind: .value,
                       value: value(&rng, size: 16))
    }
    writer.addRangeTombstone(start: Keyspace.keyValue.key(userKey(10)), end: Keyspace.keyValue.key(userKey(20)))
    writer.addRangeTombstone(start: Keyspace.keyValue.key(userKey(50)), end: Keyspace.keyValue.key(userKey(60)))
    let meta = try writer.finish()
    return (dir.path + "/" + FileNames.segment(number), meta)
}

/// A segment built by hand, block by block, with valid checksums everywhere: for damage a
/// checksum cannot see (keys out of order, an index entry that lies, counts that disagree).
private struct ForgedSegment {
    /// The keys of each data block (in the key-value keyspace), each block's keys increasing.
    var blocks: [[[UInt8]]]
    /// The leaf index entries' keys; by default each block's last key.
    var indexKeys: [[UInt8]]?
    /// The keys the filter is built from; by default every key.
    var filterKeys: [[UInt8]]?
    /// A change to the properties before they are written.
    var adjust: (inout SegmentProperties) -> Void = { _ in }
    /// The segment format version: 1 writes index entries without counts, 2 with them.
    var formatVersion: UInt32 = 1
    /// Version 2: the leaf entries' counts; by default what each block holds.
    var leafCounts: [RecordCounts]?

    func write(to path: String) throws {
        var out: [UInt8] = []
        func store(_ raw: [UInt8]) -> BlockHandle {
            let handle = BlockHandle(offset: UInt64(out.count), length: UInt64(raw.count))
            out += raw
            var trailer: [UInt8] = [BlockCompression.none.rawValue]
            LittleEndian.append(UInt32(raw.count), to: &trailer)
            let crc = CRC32C.checksum(trailer, extending: CRC32C.checksum(raw))
            out += trailer
            LittleEndian.append(CRC32C.mask(crc), to: &out)
            return handle
        }
        var props = SegmentProperties()
        var leaf: [([UInt8], BlockHandle)] = []
        var lastKey: [UInt8]?
        let value: [UInt8] = Array("forged".utf8)
        for (i, users) in blocks.enumerated() {
            var builder = BlockBuilder(restartInterval: 4)
            for user in users {
                let key = Keyspace.keyValue.key(user)
                builder.add(key: key, kind: .value, value: value)
                key.withUnsafeBytes { props.add(key: $0, kind: .value, valueLength: value.count) }
                lastKey = key
            }
            let raw = builder.finish()
            let handle = store(raw)
            props.uncompressedDataBytes += UInt64(raw.count)
            props.storedDataBytes += handle.length + UInt64(SegmentFormat.blockTrailerSize)
            props.dataBlocks += 1
            leaf.append((indexKeys.map { Keyspace.keyValue.key($0[i]) } ?? Keyspace.keyValue.key(users.last!), handle))
        }
        props.finish(lastKey: lastKey ?? [])
        let hashes = (filterKeys ?? blocks.flatMap { $0 }).map { KeyHash.hash64(Keyspace.keyValue.key($0)) }
        let filter = store(BloomFilter.build(hashes: hashes, bitsPerKey: 10))
        // The index block by hand (every entry a restart point): the block builder would refuse
        // entries that do not increase, which is the damage some tests want.
        var index: [UInt8] = []
        var restarts: [UInt32] = []
        for (i, (key, handle)) in leaf.enumerated() {
            var encoded: [UInt8] = []
            let counts = leafCounts?[i] ?? RecordCounts(records: UInt64(blocks[i].count), tombstones: 0)
            IndexEntryValue(handle: handle, counts: formatVersion >= 2 ? counts : nil).encode(into: &encoded)
            restarts.append(UInt32(index.count))
            Varint.append(UInt64(0), to: &index)
            Varint.append(UInt64(key.count), to: &index)
            Varint.append(UInt64(encoded.count), to: &index)
            index.append(RecordKind.value.rawValue)
            index += key + encoded
        }
        for r in restarts { LittleEndian.append(r, to: &index) }
        LittleEndian.append(UInt32(restarts.count), to: &index)
        let root = store(index)
        props.indexBlocks = 1
        adjust(&props)
        let properties = store(props.encode())
        out += SegmentFooter(rootIndex: root, indexHeight: 1, filter: filter, rangeTombstones: .empty,
                             properties: properties, formatVersion: formatVersion).encode()
        try Data(out).write(to: URL(fileURLWithPath: path))
    }
}

/// A flag one thread sets and another polls.
private final class StopFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}

// MARK: - Running the executable

struct ToolRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// The `strata-dump` executable the test target depends on: next to the test binary (its
/// directory from `/proc/self/exe`, `CommandLine.arguments[0]` or `Bundle.main`), else under a
/// `.build*` directory of the package (the newest one).
func dumpExecutable() throws -> String {
    let name = "strata-dump"
    let fm = FileManager.default
    var dirs: [URL] = []
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        dirs.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    let cwd = URL(fileURLWithPath: fm.currentDirectoryPath, isDirectory: true)
    dirs.append(URL(fileURLWithPath: CommandLine.arguments[0], relativeTo: cwd).standardizedFileURL.deletingLastPathComponent())
    dirs.append(Bundle.main.bundleURL)
    dirs.append(Bundle.main.bundleURL.deletingLastPathComponent())
    // macOS: <dir>/X.xctest/Contents/MacOS/X
    dirs.append(Bundle.main.bundleURL.deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent())
    for dir in dirs {
        let candidate = dir.appendingPathComponent(name).path
        if fm.isExecutableFile(atPath: candidate) { return candidate }
    }
    // The package root: this file is Tests/StrataTests/Tools/StoreInspectorTests.swift.
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    var found: [(path: String, date: Date)] = []
    for entry in (try? fm.contentsOfDirectory(atPath: root.path)) ?? [] where entry.hasPrefix(".build") {
        let build = root.appendingPathComponent(entry)
        var candidates = [build.appendingPathComponent("debug/" + name).path]
        for sub in (try? fm.contentsOfDirectory(atPath: build.path)) ?? [] {
            candidates.append(build.appendingPathComponent(sub + "/debug/" + name).path)
        }
        for c in candidates where fm.isExecutableFile(atPath: c) {
            let date = (try? fm.attributesOfItem(atPath: c)[.modificationDate] as? Date) ?? .distantPast
            found.append((c, date))
        }
    }
    guard let newest = found.max(by: { $0.date < $1.date }) else {
        throw ToolLookupError(message: "no \(name) executable next to the tests (\(dirs.map(\.path))) or under \(root.path)/.build*")
    }
    return newest.path
}

private struct ToolLookupError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Runs `strata-dump` with `arguments`; its output goes through files, so no pipe can fill up.
func runTool(_ arguments: [String], in dir: URL) throws -> ToolRun {
    let out = dir.appendingPathComponent("tool-\(UUID().uuidString).out")
    let err = dir.appendingPathComponent("tool-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
    }
    let outHandle = try FileHandle(forWritingTo: out)
    let errHandle = try FileHandle(forWritingTo: err)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try dumpExecutable())
    process.arguments = arguments
    process.standardOutput = outHandle
    process.standardError = errHandle
    try process.run()
    process.waitUntilExit()
    try outHandle.close()
    try errHandle.close()
    return ToolRun(status: process.terminationStatus,
                   stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
                   stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
}

// MARK: - Tests

@Suite("StoreInspectorTests")
struct StoreInspectorTests {
    // MARK: Summary

    @Test("summary of a compacted store counts exactly the live records, one run, the late batches in the log")
    func summaryOfCompactedStore() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 1, compact: true)
            let summary = try StoreInspector.summary(ofStoreAt: written.path)
            let m = try manifest(of: written)

            // Compaction to the bottom drops tombstones and deleted keys: the segments hold the live keys.
            #expect(summary.records == UInt64(written.live.count))
            #expect(summary.tombstones == 0)
            #expect(summary.rangeTombstones == 0)
            #expect(summary.runs.count == 1)
            #expect(summary.runs.map { $0.segments.map(\.number) } == m.runs.map { $0.map(\.number) })
            #expect(summary.runs[0].records == UInt64(written.live.count))
            #expect(summary.nextFileNumber == m.nextFileNumber)
            #expect(summary.lastSequence == m.lastSequence)
            #expect(summary.logNumber == m.logNumber)

            // The key-value keyspace, with the smallest and largest live keys.
            let kv = try #require(summary.keyspaces.first { $0.id == 1 })
            #expect(kv.name == "key-value")
            #expect(kv.records == UInt64(written.live.count))
            let sortedKeys = written.live.keys.sorted { ByteComparison.compare($0, $1) < 0 }
            #expect(kv.smallestKey?.text == rendered(sortedKeys.first!))
            #expect(kv.largestKey?.text == rendered(sortedKeys.last!))
            #expect(kv.smallestKey?.hex == KeyRendering.plainHex(Keyspace.keyValue.key(sortedKeys.first!)))
            #expect(kv.valueBytes == UInt64(written.live.values.reduce(0) { $0 + $1.count }))

            // Files: every segment and log on disk, with its size.
            let names = try FileManager.default.contentsOfDirectory(atPath: written.path).sorted()
            #expect(summary.files.map(\.name) == names)
            for file in summary.files {
                let size = try FileManager.default.attributesOfItem(atPath: written.path + "/" + file.name)[.size] as? Int
                #expect(file.size == UInt64(size ?? -1), "size of \(file.name)")
            }
            #expect(summary.files.contains { $0.kind == .manifest })
            #expect(summary.files.filter { $0.kind == .segment }.count == m.runs.flatMap { $0 }.count)

            // The batches written after the compaction are in the live log, not in the segments.
            #expect(summary.logBatches == UInt64(written.lateBatches.count))
            #expect(summary.logOperations == UInt64(written.lateBatches.reduce(0) { $0 + $1.count }))
            #expect(summary.logs.filter(\.live).count == 1)

            // Compression ratio is uncompressed over stored data bytes, as the segment dumps give them.
            var stored: UInt64 = 0, raw: UInt64 = 0
            for path in try segmentPaths(written) {
                let d = try SegmentInspector.dump(segmentAt: path)
                stored += d.properties.storedDataBytes
                raw += d.properties.uncompressedDataBytes
            }
            #expect(summary.storedDataBytes == stored)
            #expect(summary.uncompressedDataBytes == raw)
            let ratio = try #require(summary.compressionRatio)
            #expect(abs(ratio - Double(raw) / Double(stored)) < 1e-9)
            #expect(ratio > 1.0, "half of every value is a repeated pattern: LZ4 must shrink the blocks")
            #expect(summary.problems.isEmpty)
        }
    }

    @Test("summary of a store with several flushes lists the manifest's runs and their segments' counts")
    func summaryOfMultiRunStore() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 2, compact: false)
            let summary = try StoreInspector.summary(ofStoreAt: written.path)
            let m = try manifest(of: written)

            #expect(summary.runs.map { $0.segments.map(\.number) } == m.runs.map { $0.map(\.number) })
            #expect(!m.runs.isEmpty, "3,000 records of ~200 bytes through a 64 KiB memtable must flush")
            var records: UInt64 = 0, tombstones: UInt64 = 0, ranges: UInt64 = 0, blockRecords = 0
            for path in try segmentPaths(written) {
                let d = try SegmentInspector.dump(segmentAt: path)
                records += d.properties.records
                tombstones += d.properties.tombstones
                ranges += UInt64(d.rangeTombstones.count)
                blockRecords += d.dataBlocks.reduce(0) { $0 + $1.records }
            }
            #expect(summary.records == records)
            #expect(UInt64(blockRecords) == records)
            #expect(summary.tombstones == tombstones)
            #expect(summary.rangeTombstones == ranges)
            #expect(summary.segments == m.runs.flatMap { $0 }.count)
            #expect(summary.runs.reduce(0) { $0 + $1.records } == m.runs.flatMap { $0 }.reduce(0) { $0 + $1.records })

            // Every put is somewhere: in a segment, or in a live log not yet flushed.
            #expect(summary.records + summary.logOperations >= UInt64(written.live.count))
            #expect(summary.keyspaces.map(\.id) == [1])
        }
    }

    // MARK: Segment dump

    @Test("segment dump: block record counts sum to the properties' count, keys in order, index shape")
    func segmentDumpOfStore() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 3, keys: 4_000, compact: true)
            let paths = try segmentPaths(written)
            #expect(!paths.isEmpty)
            var total: UInt64 = 0
            for path in paths {
                let d = try SegmentInspector.dump(segmentAt: path, includeRecords: true)
                total += d.properties.records
                #expect(d.problems.isEmpty)
                #expect(d.dataBlocks.reduce(0) { $0 + $1.records } == Int(d.properties.records))
                #expect(UInt64(d.dataBlocks.count) == d.properties.dataBlocks)
                #expect(UInt64(d.index.blocks) == d.properties.indexBlocks)
                #expect(d.index.blocksPerLevel.count == d.index.height)
                #expect(d.index.blocksPerLevel.first == 1)
                #expect(d.dataBlocks.reduce(0) { $0 + $1.storedSize } == d.properties.storedDataBytes)
                #expect(d.dataBlocks.reduce(0) { $0 + $1.uncompressedSize } == d.properties.uncompressedDataBytes)
                #expect(d.dataBlocks.allSatisfy { $0.compression == "lz4" || $0.compression == "none" })
                // Blocks are in file order and do not overlap.
                for (a, b) in zip(d.dataBlocks, d.dataBlocks.dropFirst()) {
                    #expect(a.offset + a.storedSize <= b.offset)
                    #expect(a.lastKey!.hex < b.firstKey!.hex)
                }
                let records = try #require(d.records)
                #expect(records.count == Int(d.properties.records))
                for (a, b) in zip(records, records.dropFirst()) { #expect(a.key.hex < b.key.hex) }
                #expect(records.first?.key == d.properties.smallestKey)
                #expect(records.last?.key == d.properties.largestKey)
                #expect(d.footer.formatVersion == SegmentFormat.version)
                #expect(d.number != nil)
                // Every record is a live key with its value's size.
                for r in records.prefix(200) {
                    let user = Array(try #require(r.key.hex.hexBytes())[Keyspace.keyValue.prefix.count...])
                    #expect(r.kind == .value)
                    #expect(r.valueSize == written.live[user]?.count)
                }
            }
            #expect(total == UInt64(written.live.count))
            // 4,000 records of ~250 bytes in 1 KiB blocks are ~1,000 data blocks: more leaf
            // entries than one 8 KiB index block holds, so the index has two levels to check.
            let biggest = try paths.map { try SegmentInspector.dump(segmentAt: $0) }.max { $0.dataBlocks.count < $1.dataBlocks.count }!
            #expect(biggest.index.height >= 2)
        }
    }

    @Test("segment dump of a hand-written segment: keyspaces, tuple keys, tombstones, range tombstones, filter")
    func segmentDumpOfWrittenSegment() throws {
        try withTemporaryDirectory { tmp in
            let (path, meta) = try writeSegment(in: tmp)
            let d = try SegmentInspector.dump(segmentAt: path, includeRecords: true)
            #expect(d.properties.records == meta.records)
            #expect(d.properties.records == 1_700)
            #expect(d.properties.tombstones == UInt64((0..<1_500).filter { $0 % 17 == 3 }.count))
            #expect(d.properties.keyspaces.map(\.id) == [1, 7])
            #expect(d.properties.keyspaces.map(\.records) == [1_500, 200])
            #expect(d.properties.keyspaces[0].name == "key-value")
            #expect(d.properties.keyspaces[1].smallestKey.text == "(7, \"series\", 0)")
            #expect(d.properties.keyspaces[1].largestKey.text == "(7, \"series\", 199)")
            #expect(d.properties.keyspaces[0].smallestKey.text == rendered(userKey(0)))
            #expect(d.rangeTombstones.map(\.start.text) == [rendered(userKey(10)), rendered(userKey(50))])
            #expect(d.rangeTombstones.map(\.end.text) == [rendered(userKey(20)), rendered(userKey(60))])
            let filter = try #require(d.filter)
            #expect(filter.size == d.footer.filterSize)
            #expect(filter.bits == (filter.size - 1) * 8)
            #expect(filter.bits >= 1_700 * 10)
            #expect(filter.probes == 7)
            let records = try #require(d.records)
            #expect(records.filter { $0.kind == .tombstone }.count == Int(d.properties.tombstones))
            #expect(records.filter { $0.kind == .tombstone }.allSatisfy { $0.valueSize == 0 })
            #expect(records.map(\.block).max() == d.dataBlocks.count - 1)
            #expect(d.dataBlocks.count > 20)
        }
    }

    // MARK: Log dump

    @Test("log dump shows the batches written after the last flush, with their operations")
    func logDump() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 4, keys: 1_500, compact: true)
            let m = try manifest(of: written)
            let logs = try FileManager.default.contentsOfDirectory(atPath: written.path)
                .filter { if case .log(let n) = FileNames.parse($0) { return n >= m.logNumber } else { return false } }
            #expect(logs.count == 1)
            let path = written.path + "/" + logs[0]
            let dump = try LogInspector.dump(logAt: path, includeOperations: true)
            #expect(dump.logNumber == m.logNumber)
            #expect(dump.formatVersion == LogFormat.version)
            #expect(dump.tornTail == nil)
            #expect(dump.records.count == written.lateBatches.count)
            #expect(dump.operationCount == UInt64(written.lateBatches.reduce(0) { $0 + $1.count }))
            #expect(dump.validLength == Int(dump.size))

            var expectedSequence = dump.records.first?.firstSequence ?? 0
            var expectedOffset = LogFormat.headerSize
            for (record, batch) in zip(dump.records, written.lateBatches) {
                #expect(record.offset == expectedOffset)
                #expect(record.type == "batch")
                #expect(record.error == nil)
                #expect(record.firstSequence == expectedSequence)
                #expect(record.operationCount == batch.count)
                let ops = try #require(record.operations)
                #expect(ops.map(\.kind) == batch.map(\.kind))
                #expect(ops.map(\.key.text) == batch.map { rendered($0.key) })
                #expect(ops.map { $0.endKey?.text } == batch.map { $0.end.map(rendered) })
                #expect(ops.map(\.valueSize) == batch.map(\.valueSize))
                #expect(ops.map(\.sequence) == Array(expectedSequence..<(expectedSequence + UInt64(batch.count))))
                expectedSequence += UInt64(batch.count)
                expectedOffset += LogFormat.recordHeaderSize + record.length
            }
            #expect(expectedOffset == Int(dump.size))
            // The last sequence the log holds is the store's last write.
            #expect(dump.lastSequence == expectedSequence - 1)

            // Without --records, the same records and no operations.
            let brief = try LogInspector.dump(logAt: path)
            #expect(brief.records.map(\.offset) == dump.records.map(\.offset))
            #expect(brief.records.allSatisfy { $0.operations == nil })
        }
    }

    @Test("log dump reports a torn tail as such, at the offset where the valid records end")
    func logDumpTornTail() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 5, keys: 600, compact: true)
            let m = try manifest(of: written)
            let path = written.path + "/" + FileNames.log(m.logNumber)
            let before = try LogInspector.dump(logAt: path)
            // Half a record header: what a crash in the middle of an append leaves.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seekToEnd()
            try handle.write(contentsOf: [0x12, 0x34, 0x56, 0x78, 0x05])
            try handle.close()

            let after = try LogInspector.dump(logAt: path)
            #expect(after.records.count == before.records.count)
            let tail = try #require(after.tornTail)
            #expect(tail.offset == Int(before.size))
            #expect(after.validLength == Int(before.size))
            #expect(tail.reason.contains("cut short"))

            // A torn tail is a note for verify, not a fault.
            let report = try StoreVerifier.verify(storeAt: written.path)
            #expect(report.isClean, "\(report.faults)")
            #expect(report.notes.contains { $0.file == path && $0.offset == Int(before.size) && $0.message.contains("torn tail") })
        }
    }

    // MARK: Verify

    @Test("verify passes on clean stores, one run or several", arguments: [true, false])
    func verifyClean(compact: Bool) throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 6, compact: compact)
            let report = try StoreVerifier.verify(storeAt: written.path)
            #expect(report.isClean, "\(report.faults)")
            #expect(report.faults.isEmpty)
            let m = try manifest(of: written)
            #expect(report.segmentsChecked == m.runs.flatMap { $0 }.count)
            let summary = try StoreInspector.summary(ofStoreAt: written.path)
            #expect(report.recordsChecked == Int(summary.records))
            #expect(report.blocksChecked >= Int(summary.dataBlocks + summary.indexBlocks))
            #expect(report.logsChecked >= 1)
            if compact { #expect(report.batchesChecked == written.lateBatches.count) }
        }
    }

    @Test("verify reports a flipped byte in a data block, naming the file and the block's offset")
    func verifyFlippedDataByte() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 7, compact: true)
            let path = try #require(try segmentPaths(written).first)
            let dump = try SegmentInspector.dump(segmentAt: path)
            let records = try StoreInspector.summary(ofStoreAt: written.path).records
            let block = dump.dataBlocks[dump.dataBlocks.count / 2]
            try flipByte(at: Int(block.offset + block.size / 2), in: path)

            let report = try StoreVerifier.verify(storeAt: written.path)
            #expect(!report.isClean)
            #expect(report.faults.contains { $0.file == path && $0.offset == Int(block.offset) && $0.reason.contains("checksum") },
                    "\(report.faults)")
            // Only that block is damaged: the others were read and checked.
            #expect(report.faults.count == 1, "\(report.faults)")
            #expect(report.recordsChecked == Int(records) - block.records)

            // The segment dump goes on past the damaged block and marks it.
            let damaged = try SegmentInspector.dump(segmentAt: path)
            #expect(damaged.dataBlocks[block.index].error != nil)
            #expect(damaged.dataBlocks.filter { $0.error != nil }.count == 1)
            #expect(damaged.problems.map(\.offset) == [Int(block.offset)])
        }
    }

    @Test("verify reports a truncated segment at its new end")
    func verifyTruncatedSegment() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 8, compact: true)
            let path = try #require(try segmentPaths(written).first)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            try truncateFile(path, to: size / 2)

            let report = try StoreVerifier.verify(storeAt: written.path)
            #expect(!report.isClean)
            #expect(report.faults.contains { $0.file == path && $0.offset == size / 2 && $0.reason.contains("manifest says \(size)") },
                    "\(report.faults)")
            // The footer is gone with the second half: the file cannot be opened as a segment either.
            #expect(report.faults.contains { $0.file == path && $0.reason.contains("magic") }, "\(report.faults)")
        }
    }

    @Test("verify reports a segment the manifest lists but the directory lacks")
    func verifyMissingSegment() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 9, compact: true)
            let path = try #require(try segmentPaths(written).last)
            try FileManager.default.removeItem(atPath: path)

            let report = try StoreVerifier.verify(storeAt: written.path)
            #expect(!report.isClean)
            #expect(report.faults.contains { $0.file == path && $0.offset == 0 && $0.reason.contains("missing") }, "\(report.faults)")
        }
    }

    @Test("verify reports a damaged log record followed by valid ones as a fault")
    func verifyCorruptLogRecord() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 10, keys: 600, compact: true)
            let m = try manifest(of: written)
            let path = written.path + "/" + FileNames.log(m.logNumber)
            let dump = try LogInspector.dump(logAt: path)
            #expect(dump.records.count >= 2)
            let first = dump.records[0]
            try flipByte(at: first.offset + LogFormat.recordHeaderSize + 3, in: path)

            let report = try StoreVerifier.verify(storeAt: written.path)
            #expect(report.faults.contains { $0.file == path && $0.offset == first.offset }, "\(report.faults)")
            // Dumping it is an error naming the file and offset, not a silent cut.
            #expect(throws: StrataError.self) { try LogInspector.dump(logAt: path) }
        }
    }

    /// The regions of a segment file a byte can be flipped in, and where verify must report it.
    enum Region: String, CaseIterable, Sendable {
        case dataBlock, rootIndex, leafIndex, filter, rangeTombstones, properties, footer
    }

    @Test("verify finds a flipped byte in every region of a segment", arguments: Region.allCases)
    func verifyEveryRegion(region: Region) throws {
        try withTemporaryDirectory { tmp in
            // Enough records that the index has two levels: a root and leaf index blocks.
            let (path, _) = try writeSegment(in: tmp, records: 8_000)
            let clean = try StoreVerifier.verify(fileAt: path)
            #expect(clean.isClean, "\(clean.faults)")
            let d = try SegmentInspector.dump(segmentAt: path)
            let f = d.footer
            #expect(d.index.height >= 2)

            let flipAt: Int, expected: Int
            switch region {
            case .dataBlock:
                let b = d.dataBlocks[3]
                (flipAt, expected) = (Int(b.offset) + 1, Int(b.offset))
            case .rootIndex:
                (flipAt, expected) = (Int(f.rootIndexOffset + f.rootIndexSize / 2), Int(f.rootIndexOffset))
            case .leafIndex:
                // Leaf index blocks sit between the range tombstones and the root; the first
                // starts right after the range tombstone block.
                let start = Int(f.rangeTombstonesOffset + f.rangeTombstonesSize) + SegmentFormat.blockTrailerSize
                (flipAt, expected) = (start + 2, start)
            case .filter:
                (flipAt, expected) = (Int(f.filterOffset + f.filterSize / 2), Int(f.filterOffset))
            case .rangeTombstones:
                (flipAt, expected) = (Int(f.rangeTombstonesOffset) + 1, Int(f.rangeTombstonesOffset))
            case .properties:
                (flipAt, expected) = (Int(f.propertiesOffset) + 1, Int(f.propertiesOffset))
            case .footer:
                let footer = Int(d.fileSize) - SegmentFormat.footerSize
                (flipAt, expected) = (footer + 4, footer)
            }
            try flipByte(at: flipAt, in: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(!report.isClean)
            #expect(report.faults.contains { $0.file == path && $0.offset == expected }, "\(region): \(report.faults)")
        }
    }

    @Test("verify and summary of a store that is being written: no false faults")
    func verifyWhileWriting() throws {
        try withTemporaryDirectory { tmp in
            let dir = tmp.appendingPathComponent("store", isDirectory: true)
            var options = StoreOptions(durability: .buffered)
            options.memtableSize = 64 << 10
            options.blockSize = 1 << 10
            let store = try Store.open(at: dir, options: options)
            let stop = StopFlag()
            let done = DispatchSemaphore(value: 0)
            let failure = Mutex<String?>(nil)
            DispatchQueue.global().async {
                defer { done.signal() }
                var rng = SplitMix64(seed: 77)
                var i = 0
                do {
                    // Flushes every few batches, compactions now and then, deletes that leave tombstones.
                    // At least 4,000 records (several memtables) however slow the machine is.
                    while (!stop.isSet || i < 4_000) && i < 40_000 {
                        var batch = WriteBatch()
                        for _ in 0..<20 {
                            batch.put(userKey(i % 5_000), value(&rng, size: 150))
                            i += 1
                        }
                        if i % 400 == 0 { batch.delete(userKey((i / 2) % 5_000)) }
                        try store.write(batch)
                    }
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
            var passes = 0
            var inspectionError: Error?
            let started = ContinuousClock.now
            while passes < 4 || ContinuousClock.now - started < .seconds(1) {
                do {
                    let report = try StoreVerifier.verify(storeAt: dir.path)
                    #expect(report.isClean, "pass \(passes): \(report.faults)")
                    _ = try StoreInspector.summary(ofStoreAt: dir.path)
                } catch {
                    inspectionError = error
                    break
                }
                passes += 1
                if ContinuousClock.now - started > .seconds(10) { break }
            }
            // Stop the writer (it must not outlive the directory) before anything can throw.
            stop.set()
            done.wait()
            try store.close()
            if let inspectionError { throw inspectionError }
            #expect(failure.withLock { $0 } == nil)
            let final = try StoreVerifier.verify(storeAt: dir.path)
            #expect(final.isClean, "\(final.faults)")
            #expect(final.segmentsChecked > 0)
        }
    }

    @Test("verify checks the manifest against the segments: runs that overlap, counts and key ranges that differ")
    func manifestAgainstSegments() throws {
        try withTemporaryDirectory { tmp in
            let (pathA, metaA) = try writeSegment(in: tmp, number: 9, records: 100)
            let (pathB, metaB) = try writeSegment(in: tmp, number: 10, records: 200)
            var m = Manifest()
            m.nextFileNumber = 11
            // Two runs: consistent.
            m.runs = [[metaB], [metaA]]
            try m.write(directory: tmp.path, fileSystem: .real)
            let clean = try StoreVerifier.verify(storeAt: tmp.path)
            #expect(clean.isClean, "\(clean.faults)")
            #expect(clean.segmentsChecked == 2)
            let summary = try StoreInspector.summary(ofStoreAt: tmp.path)
            #expect(summary.runs.map { $0.segments.map(\.number) } == [[10], [9]])
            #expect(summary.records == metaA.records + metaB.records)
            #expect(summary.keyspaces.map(\.id) == [1, 7])
            #expect(summary.keyspaces.map(\.segments) == [2, 2])
            #expect(summary.rangeTombstones == 4)

            // One run holding both: their keys overlap.
            m.runs = [[metaA, metaB]]
            try m.write(directory: tmp.path, fileSystem: .real)
            let overlap = try StoreVerifier.verify(storeAt: tmp.path)
            #expect(overlap.faults.contains { ($0.file == pathA || $0.file == pathB) && $0.reason.contains("overlap") },
                    "\(overlap.faults)")

            // The manifest's record count and key range for a segment disagree with the segment.
            var wrong = metaA
            wrong.records += 5
            wrong.largestKey = Keyspace.keyValue.key(userKey(7))
            m.runs = [[metaB], [wrong]]
            try m.write(directory: tmp.path, fileSystem: .real)
            let mismatch = try StoreVerifier.verify(storeAt: tmp.path)
            #expect(mismatch.faults.contains { $0.file == pathA && $0.reason.contains("the manifest records \(metaA.records + 5) records") },
                    "\(mismatch.faults)")
            #expect(mismatch.faults.contains { $0.file == pathA && $0.reason.contains("key range") }, "\(mismatch.faults)")
            #expect(mismatch.faults.count == 2, "\(mismatch.faults)")

            // A segment on disk the manifest does not list is a note, not a fault.
            m.runs = [[metaB]]
            try m.write(directory: tmp.path, fileSystem: .real)
            let unlisted = try StoreVerifier.verify(storeAt: tmp.path)
            #expect(unlisted.isClean, "\(unlisted.faults)")
            #expect(unlisted.notes.contains { $0.file == pathA && $0.message.contains("not listed") })
        }
    }

    // MARK: Damage a checksum cannot see

    private static let forgedBlocks: [[[UInt8]]] = [
        (0..<20).map(userKey), (20..<40).map(userKey), (40..<60).map(userKey),
    ]

    @Test("verify accepts a forged segment that is consistent (the forging itself is right)")
    func forgedClean() throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            try ForgedSegment(blocks: Self.forgedBlocks).write(to: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(report.isClean, "\(report.faults)")
            #expect(report.recordsChecked == 60)
            let dump = try SegmentInspector.dump(segmentAt: path)
            #expect(dump.dataBlocks.map(\.records) == [20, 20, 20])
            #expect(dump.dataBlocks.map(\.compression) == ["none", "none", "none"])
            #expect(dump.dataBlocks.map { $0.lastKey?.text } == [19, 39, 59].map { rendered(userKey($0)) })
        }
    }

    @Test("verify reports keys out of order across data blocks")
    func forgedKeyOrder() throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            // The second block repeats keys of the first: each block is sorted, the file is not.
            try ForgedSegment(blocks: [(0..<20).map(userKey), (10..<30).map(userKey)]).write(to: path)
            let dump = try SegmentInspector.dump(segmentAt: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(report.faults.contains { $0.offset == Int(dump.dataBlocks[1].offset) && $0.reason.contains("does not follow") },
                    "\(report.faults)")
            #expect(report.faults.count == 1, "\(report.faults)")
        }
    }

    @Test("verify reports an index entry whose key is not its block's last key")
    func forgedIndexKey() throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            // The middle entry says 35, but the block ends at 39 (order is still fine).
            try ForgedSegment(blocks: Self.forgedBlocks, indexKeys: [userKey(19), userKey(35), userKey(59)]).write(to: path)
            let dump = try SegmentInspector.dump(segmentAt: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(report.faults.map(\.offset) == [Int(dump.dataBlocks[1].offset)], "\(report.faults)")
            #expect(report.faults.first?.reason.contains("index entry \(rendered(userKey(35)))") == true, "\(report.faults)")
        }
    }

    @Test("verify reports index entries that do not increase")
    func forgedIndexOrder() throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            try ForgedSegment(blocks: Self.forgedBlocks, indexKeys: [userKey(19), userKey(19), userKey(59)]).write(to: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(!report.isClean)
            #expect(report.faults.contains { $0.reason.contains("index level 0") && $0.reason.contains("does not follow") },
                    "\(report.faults)")
        }
    }

    @Test("verify reports properties whose counts differ from the blocks", arguments: [0, 1, 2, 3])
    func forgedProperties(variant: Int) throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            var forged = ForgedSegment(blocks: Self.forgedBlocks)
            let expected: String
            switch variant {
            case 0: forged.adjust = { $0.records += 1 }; expected = "properties say 61 records"
            case 1: forged.adjust = { $0.dataBlocks = 2 }; expected = "properties say 2 data blocks"
            case 2: forged.adjust = { $0.keyspaces[0].records = 7 }; expected = "keyspace summaries"
            default: forged.adjust = { $0.valueBytes = 0 }; expected = "properties say 0 value bytes"
            }
            try forged.write(to: path)
            let dump = try SegmentInspector.dump(segmentAt: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(report.faults.contains { $0.offset == Int(dump.footer.propertiesOffset) && $0.reason.contains(expected) },
                    "\(report.faults)")
        }
    }

    @Test("verify accepts a consistent version-2 segment and reports an index entry that miscounts its block")
    func forgedIndexCounts() throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            var forged = ForgedSegment(blocks: Self.forgedBlocks)
            forged.formatVersion = 2
            try forged.write(to: path)
            let clean = try StoreVerifier.verify(fileAt: path)
            #expect(clean.isClean, "\(clean.faults)")
            #expect(clean.recordsChecked == 60)

            // The first two entries lie, but add up to the properties' 60: opening cannot tell.
            forged.leafCounts = [RecordCounts(records: 3, tombstones: 0), RecordCounts(records: 37, tombstones: 0),
                                 RecordCounts(records: 20, tombstones: 0)]
            try forged.write(to: path)
            let dump = try SegmentInspector.dump(segmentAt: path)
            let report = try StoreVerifier.verify(fileAt: path)
            let root = Int(dump.footer.rootIndexOffset)
            #expect(report.faults.count == 2, "\(report.faults)")
            #expect(report.faults.allSatisfy { $0.offset == root && $0.reason.contains("index entry counts") }, "\(report.faults)")
            // A count that finds more values below its bound than the entry gives the block refuses it.
            let reader = try SegmentReader(path: path, number: 1, cache: nil, fileSystem: .real)
            let lower = Keyspace.keyValue.key(userKey(5)), upper = Keyspace.keyValue.key(userKey(50))
            #expect(throws: StrataError.self) {
                try lower.withUnsafeBytes { l in try upper.withUnsafeBytes { try reader.countValues(lower: l, upper: $0) } }
            }

            // Counts that do not add up to the properties are refused when the segment opens.
            forged.leafCounts = [RecordCounts(records: 20, tombstones: 0), RecordCounts(records: 20, tombstones: 0),
                                 RecordCounts(records: 21, tombstones: 0)]
            try forged.write(to: path)
            #expect(throws: StrataError.self) { _ = try SegmentReader(path: path, number: 1, cache: nil, fileSystem: .real) }
            let refused = try StoreVerifier.verify(fileAt: path)
            #expect(refused.faults.contains { $0.offset == root && $0.reason.contains("root index entries count") }, "\(refused.faults)")
        }
    }

    @Test("verify reports a filter that rejects a key the segment holds")
    func forgedFilter() throws {
        try withTemporaryDirectory { tmp in
            let path = tmp.appendingPathComponent("000001.seg").path
            // A filter built from other keys: it rejects (nearly) all of the real ones.
            try ForgedSegment(blocks: Self.forgedBlocks, filterKeys: (1_000..<1_060).map(userKey)).write(to: path)
            let dump = try SegmentInspector.dump(segmentAt: path)
            let report = try StoreVerifier.verify(fileAt: path)
            #expect(report.faults.contains { $0.offset == Int(dump.footer.filterOffset) && $0.reason.contains("filter rejects") },
                    "\(report.faults)")
        }
    }

    // MARK: Detection and errors

    @Test("files are told apart by their magic, and wrong or missing files are clear errors")
    func detectionAndErrors() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 11, keys: 300, compact: true)
            let m = try manifest(of: written)
            let segment = try #require(try segmentPaths(written).first)
            let log = written.path + "/" + FileNames.log(m.logNumber)
            #expect(try StoreInspector.kind(ofFileAt: segment) == .segment)
            #expect(try StoreInspector.kind(ofFileAt: log) == .log)
            #expect(try StoreInspector.kind(ofFileAt: written.path + "/MANIFEST") == .manifest)
            #expect(try StoreInspector.kind(ofFileAt: written.path + "/LOCK") == .lock)

            // A segment under another name is still a segment: the magic decides.
            let renamed = tmp.appendingPathComponent("copy.bin").path
            try FileManager.default.copyItem(atPath: segment, toPath: renamed)
            #expect(try StoreInspector.kind(ofFileAt: renamed) == .segment)
            #expect(try SegmentInspector.dump(segmentAt: renamed).number == nil)

            #expect(throws: InspectionError.wrongKind(path: segment, found: .segment, expected: .log)) {
                try LogInspector.dump(logAt: segment)
            }
            #expect(throws: InspectionError.wrongKind(path: log, found: .log, expected: .segment)) {
                try SegmentInspector.dump(segmentAt: log)
            }
            let missing = tmp.appendingPathComponent("nothing-here.seg").path
            #expect(throws: InspectionError.notFound(path: missing)) { try SegmentInspector.dump(segmentAt: missing) }
            let text = tmp.appendingPathComponent("notes.txt").path
            try Data(repeating: 0x41, count: 500).write(to: URL(fileURLWithPath: text))
            #expect(throws: InspectionError.notAStrataFile(path: text)) { try SegmentInspector.dump(segmentAt: text) }
            #expect(throws: InspectionError.notAFile(path: tmp.path, expected: "a regular file")) {
                try LogInspector.dump(logAt: tmp.path)
            }
            let empty = tmp.appendingPathComponent("empty", isDirectory: true)
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
            #expect(throws: InspectionError.notAStore(path: empty.path)) { try StoreVerifier.verify(storeAt: empty.path) }
            #expect(throws: InspectionError.notAStore(path: empty.path)) { try StoreInspector.summary(ofStoreAt: empty.path) }
            #expect(throws: InspectionError.notFound(path: missing)) { try StoreVerifier.verify(storeAt: missing) }
        }
    }

    @Test("files of a future format version are reported as such")
    func futureVersions() throws {
        try withTemporaryDirectory { tmp in
            // A log header of version 4, with a valid checksum.
            var header = LogFormat.magic
            LittleEndian.append(UInt32(4), to: &header)
            LittleEndian.append(UInt64(3), to: &header)
            LittleEndian.append(CRC32C.mask(CRC32C.checksum(header)), to: &header)
            let log = tmp.appendingPathComponent("000003.log").path
            try Data(header).write(to: URL(fileURLWithPath: log))
            #expect(throws: StrataError.unsupportedFormatVersion(file: log, found: 4)) { try LogInspector.dump(logAt: log) }

            // A segment whose footer says version 5.
            let (segment, _) = try writeSegment(in: tmp, records: 100)
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
            let footer = bytes.count - SegmentFormat.footerSize
            bytes[footer + 52] = 5
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            #expect(try StoreInspector.kind(ofFileAt: segment) == .segment)
            #expect(throws: StrataError.unsupportedFormatVersion(file: segment, found: 5)) {
                try SegmentInspector.dump(segmentAt: segment)
            }
            let report = try StoreVerifier.verify(fileAt: segment)
            #expect(report.faults.contains { $0.reason.contains("format version 5") }, "\(report.faults)")
        }
    }

    @Test("keys render as tuples, raw key-value keys as the keyspace and the caller's bytes")
    func keyRendering() {
        #expect(InspectedKey(Keyspace.keyValue.key(Array("apple".utf8))).text == "(1) + \"apple\"")
        #expect(InspectedKey(Keyspace.keyValue.key([0x00, 0xFF])).text == "(1) + x'00ff'")
        #expect(InspectedKey(Keyspace.keyValue.key(Array("user/".utf8) + [0x00, 0x2A])).text == "(1) + \"user/\\x00*\"")
        #expect(InspectedKey(Keyspace.keyValue.key(Array("say \"hi\"".utf8))).text == "(1) + \"say \\\"hi\\\"\"")
        #expect(InspectedKey(TupleKey.encode([.uint(3), .string("prices/AAPL"), .uint(42)])).text == "(3, \"prices/AAPL\", 42)")
        #expect(InspectedKey(TupleKey.encode([.uint(3), .string("a")]) + [0x99, 0x98]).text == "(3, \"a\") + x'9998'")
        #expect(InspectedKey([0x99]).text == "x'99'")
        #expect(InspectedKey([0x11, 0x01, 0x6B]).hex == "11016b")
    }

    // MARK: The executable

    @Test("strata-dump: verify exits 0 on a clean store and 1 with a fault line on a damaged one; summary --json parses")
    func executable() throws {
        try withTemporaryDirectory { tmp in
            let written = try buildStore(in: tmp, seed: 12, keys: 1_500, compact: true)

            let clean = try runTool(["verify", written.path], in: tmp)
            #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
            #expect(clean.stdout.contains("OK"))

            let json = try runTool(["summary", "--json", written.path], in: tmp)
            #expect(json.status == 0, "\(json.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect((object["records"] as? NSNumber)?.intValue == written.live.count)
            #expect((object["runs"] as? [Any])?.count == 1)
            #expect((object["logOperations"] as? NSNumber)?.intValue == written.lateBatches.reduce(0) { $0 + $1.count })
            #expect(json.stdout.contains("\n  \"compressionRatio\""), "pretty-printed with sorted keys")

            let table = try runTool(["summary", written.path], in: tmp)
            #expect(table.status == 0, "\(table.stderr)")
            #expect(table.stdout.contains("key-value"))
            #expect(table.stdout.contains("KiB"))

            let segment = try #require(try segmentPaths(written).first)
            let segmentJSON = try runTool(["segment", "--json", "--records", segment], in: tmp)
            #expect(segmentJSON.status == 0, "\(segmentJSON.stderr)")
            let decoded = try JSONDecoder().decode(SegmentDump.self, from: Data(segmentJSON.stdout.utf8))
            #expect(decoded.records?.count == Int(decoded.properties.records))

            let m = try manifest(of: written)
            let logJSON = try runTool(["log", "--json", "--records", written.path + "/" + FileNames.log(m.logNumber)], in: tmp)
            #expect(logJSON.status == 0, "\(logJSON.stderr)")
            let log = try JSONDecoder().decode(LogDump.self, from: Data(logJSON.stdout.utf8))
            #expect(log.records.count == written.lateBatches.count)

            let block = decoded.dataBlocks[decoded.dataBlocks.count / 2]
            try flipByte(at: Int(block.offset) + 5, in: segment)
            let damaged = try runTool(["verify", written.path], in: tmp)
            #expect(damaged.status == 1)
            let faultLines = damaged.stdout.split(separator: "\n").filter { $0.contains(segment) && $0.contains("offset \(block.offset)") }
            #expect(faultLines.count == 1, "\(damaged.stdout)")
            let damagedJSON = try runTool(["verify", "--json", written.path], in: tmp)
            #expect(damagedJSON.status == 1)
            let report = try JSONDecoder().decode(VerifyReport.self, from: Data(damagedJSON.stdout.utf8))
            #expect(report.faults.map(\.offset) == [Int(block.offset)])
        }
    }

    @Test("strata-dump: a missing path, a non-Strata file and bad usage give one line on stderr and a non-zero exit")
    func executableErrors() throws {
        try withTemporaryDirectory { tmp in
            let missing = tmp.appendingPathComponent("absent").path
            let text = tmp.appendingPathComponent("plain.txt").path
            try Data("hello, not a segment\n".utf8).write(to: URL(fileURLWithPath: text))
            let cases: [(args: [String], status: Int32, mention: String)] = [
                (["summary", missing], 2, missing),
                (["verify", missing], 2, missing),
                (["segment", missing], 2, missing),
                (["segment", text], 2, text),
                (["log", text], 2, text),
                (["verify", text], 2, text),
                (["summary", tmp.path], 2, tmp.path),
                (["frobnicate"], 2, "frobnicate"),
                (["verify"], 2, "path"),
            ]
            for c in cases {
                let run = try runTool(c.args, in: tmp)
                #expect(run.status == c.status, "\(c.args): \(run.status) \(run.stderr)")
                #expect(run.stderr.contains(c.mention), "\(c.args): \(run.stderr)")
                #expect(!run.stderr.contains("Fatal error") && !run.stderr.contains("backtrace"), "\(c.args): \(run.stderr)")
                if c.args.count == 2 && c.args[0] != "frobnicate" && c.args != ["verify"] {
                    #expect(run.stderr.split(separator: "\n").count == 1, "\(c.args): \(run.stderr)")
                }
            }
        }
    }
}

private extension String {
    /// The bytes of a lowercase hex string.
    func hexBytes() -> [UInt8]? {
        let chars = Array(utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let b = UInt8(String(decoding: chars[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}
