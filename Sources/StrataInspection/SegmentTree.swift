import Strata

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
/// the data block) and the entries of a level must increase. Each block is visited once, so a
/// damaged index that points at a block twice cannot make the walk blow up.
struct SegmentTree {
    struct DataBlockReference {
        var handle: BlockHandle
        /// The key of the leaf index entry pointing here: the block's last key.
        var indexKey: [UInt8]
    }

    var indexBlocksPerLevel: [Int] = []
    var indexHandlesPerLevel: [[BlockHandle]] = []
    var dataBlocks: [DataBlockReference] = []
    var faults: [FileFault] = []

    init(_ reader: SegmentReader) {
        let height = Int(reader.footer.indexHeight)
        var visited: Set<UInt64> = [reader.footer.rootIndex.offset]
        // The blocks of the current level, each with the key its parent entry gives it.
        var level: [(block: Block, handle: BlockHandle, parentKey: [UInt8]?)] = [(reader.rootBlock, reader.footer.rootIndex, nil)]
        for depth in 0..<height {
            indexBlocksPerLevel.append(level.count)
            indexHandlesPerLevel.append(level.map(\.handle))
            let leaf = depth == height - 1
            var next: [(block: Block, handle: BlockHandle, parentKey: [UInt8]?)] = []
            var previous: [UInt8]?
            for (block, _, parentKey) in level {
                var cursor = BlockCursor(block)
                var last: [UInt8]?
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
                        do {
                            h = try reader.childHandle(kind: cursor.kind, value: cursor.value, in: block)
                        } catch {
                            let f = FileFault(error, at: block.fileOffset)
                            faults.append(FileFault(offset: f.offset, reason: "index level \(depth): entry \(KeyRendering.describe(key)): \(f.reason)"))
                            try cursor.next()
                            continue
                        }
                        if !visited.insert(h.offset).inserted {
                            faults.append(FileFault(offset: block.fileOffset, reason:
                                "index level \(depth): a second entry points to the block at \(h.offset)"))
                        } else if leaf {
                            dataBlocks.append(DataBlockReference(handle: h, indexKey: key))
                        } else {
                            do {
                                next.append((try reader.block(h), h, key))
                            } catch {
                                faults.append(FileFault(error, at: Int(clamping: h.offset)))
                            }
                        }
                        try cursor.next()
                    }
                } catch {
                    faults.append(FileFault(error, at: block.fileOffset))
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
        try SystemFile.withFile(path, flags: .readOnly) { try body(SegmentTrailerReader(file: $0)) }
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
