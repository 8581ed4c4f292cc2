import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A problem found in a file: where, and what.
struct FileFault: Sendable, Equatable {
    var offset: Int
    var reason: String

    init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// The fault an error thrown while reading at `offset` stands for.
    init(_ error: Error, at offset: Int) {
        if case StrataError.corrupted(_, let at, let reason) = error {
            self.init(offset: at, reason: reason)
        } else {
            self.init(offset: offset, reason: "\(error)")
        }
    }
}

/// The B-tree of a segment as read from its blocks, for the inspection tools: the index blocks
/// of each level, the data blocks the leaves point to, and whatever is wrong with the index.
///
/// Level 0 is the root; the entries of level `indexHeight - 1` point to data blocks, those of the
/// levels above to index blocks. Every index entry's key must equal the last key of the block it
/// points to (checked here for index children; a data child's last key is checked by whoever reads
/// the data block) and the entries of a level must increase. From format version 2, an entry's
/// record counts must be the sum of the entries of the index block it points to (checked here) or
/// what its data block holds (checked by whoever reads it). Each block is visited once, so a
/// damaged index that points at a block twice cannot make the walk blow up.
struct SegmentTree {
    struct DataBlockReference {
        var handle: BlockHandle
        /// The key of the leaf index entry pointing here: the block's last key.
        var indexKey: [UInt8]
        /// The records and tombstones the leaf entry says the block holds (format version 2).
        var counts: RecordCounts?
        /// The offset of the leaf index block holding that entry.
        var indexBlockOffset: Int
    }

    var indexBlocksPerLevel: [Int] = []
    var indexHandlesPerLevel: [[BlockHandle]] = []
    var dataBlocks: [DataBlockReference] = []
    var faults: [FileFault] = []

    init(_ reader: SegmentReader) {
        let height = Int(reader.footer.indexHeight)
        var visited: Set<UInt64> = [reader.footer.rootIndex.offset]
        // The blocks of the current level, each with the key and counts its parent entry gives it.
        typealias Node = (block: Block, handle: BlockHandle, parentKey: [UInt8]?, parentCounts: RecordCounts?)
        var level: [Node] = [(reader.rootBlock, reader.footer.rootIndex, nil, nil)]
        for depth in 0..<height {
            indexBlocksPerLevel.append(level.count)
            indexHandlesPerLevel.append(level.map(\.handle))
            let leaf = depth == height - 1
            var next: [Node] = []
            var previous: [UInt8]?
            for (block, _, parentKey, parentCounts) in level {
                var cursor = BlockCursor(block)
                var last: [UInt8]?
                var sum: RecordCounts? = parentCounts.map { _ in RecordCounts(records: 0, tombstones: 0) }
                var unreadEntries = false
                do {
                    try cursor.seekToFirst()
                    while cursor.isValid {
                        let key = cursor.key
                        if let p = previous, ByteComparison.compare(p, key) >= 0 {
                            faults.append(FileFault(offset: block.fileOffset, reason:
                                "index level \(depth): entry \(KeyRendering.describe(key)) does not follow \(KeyRendering.describe(p))"))
                        }
                        previous = key
                        last = key
                        let h: BlockHandle
                        let counts: RecordCounts?
                        do {
                            let entry = try reader.indexEntry(kind: cursor.kind, value: cursor.value, in: block)
                            (h, counts) = (entry.handle, entry.counts)
                        } catch {
                            unreadEntries = true
                            let f = FileFault(error, at: block.fileOffset)
                            faults.append(FileFault(offset: f.offset, reason: "index level \(depth): entry \(KeyRendering.describe(key)): \(f.reason)"))
                            try cursor.next()
                            continue
                        }
                        if let s = sum, let c = counts {
                            let (r, o1) = s.records.addingReportingOverflow(c.records)
                            let (t, o2) = s.tombstones.addingReportingOverflow(c.tombstones)
                            sum = o1 || o2 ? nil : RecordCounts(records: r, tombstones: t)
                        }
                        if !visited.insert(h.offset).inserted {
                            faults.append(FileFault(offset: block.fileOffset, reason:
                                "index level \(depth): a second entry points to the block at \(h.offset)"))
                        } else if leaf {
                            dataBlocks.append(DataBlockReference(handle: h, indexKey: key, counts: counts, indexBlockOffset: block.fileOffset))
                        } else {
                            do {
                                next.append((try reader.block(h), h, key, counts))
                            } catch {
                                faults.append(FileFault(error, at: Int(clamping: h.offset)))
                            }
                        }
                        try cursor.next()
                    }
                } catch {
                    unreadEntries = true
                    faults.append(FileFault(error, at: block.fileOffset))
                }
                if let parentCounts, !unreadEntries, sum != parentCounts {
                    let counted = sum.map { "\($0.records) records, \($0.tombstones) tombstones" } ?? "more than 2^64 records"
                    faults.append(FileFault(offset: block.fileOffset, reason:
                        "index block's entries count \(counted); its parent entry \(parentCounts.records), \(parentCounts.tombstones)"))
                }
                if let parentKey, last != parentKey {
                    faults.append(FileFault(offset: block.fileOffset, reason:
                        "index block's last key \(last.map(KeyRendering.describe) ?? "(none)") differs from its parent entry \(KeyRendering.describe(parentKey))"))
                }
            }
            level = next
        }
    }
}

/// Reads block trailers (compression, uncompressed length) with `pread`, beside a
/// `SegmentReader` that owns the mapping and checks the blocks.
struct SegmentTrailerReader {
    let file: SystemFile

    struct Trailer {
        var compression: UInt8
        var uncompressedLength: UInt32
    }

    static func withFile<R>(_ path: String, _ body: (SegmentTrailerReader) throws -> R) throws -> R {
        try FileSystem.real.withFile(path, flags: .readOnly) { try body(SegmentTrailerReader(file: $0)) }
    }

    /// The trailer of the stored block at `handle`; nil if the file ends before it.
    func trailer(of handle: BlockHandle) throws -> Trailer? {
        let bytes = try file.read(at: Int(clamping: handle.offset &+ handle.length), count: SegmentFormat.blockTrailerSize)
        guard bytes.count == SegmentFormat.blockTrailerSize else { return nil }
        return bytes.withUnsafeBytes { Trailer(compression: $0[0], uncompressedLength: LittleEndian.uint32($0, at: 1)) }
    }

    /// The byte at `offset`.
    func byte(at offset: UInt64) throws -> UInt8? {
        try file.read(at: Int(clamping: offset), count: 1).first
    }

    static func compressionName(_ raw: UInt8) -> String {
        switch raw {
        case BlockCompression.none.rawValue: return "none"
        case BlockCompression.lz4.rawValue: return "lz4"
        default: return "unknown(\(raw))"
        }
    }
}
