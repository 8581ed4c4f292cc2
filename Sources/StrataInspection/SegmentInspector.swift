import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Reads a segment file for people and scripts: its footer, properties, index shape, each data
/// block (where it is, how it is stored, which keys it holds), the filter, the range tombstones
/// and, on request, every record with its decoded key.
///
/// ```swift
/// let dump = try SegmentInspector.dump(segmentAt: "/var/lib/app/data.strata/000012.seg")
/// for block in dump.dataBlocks { print(block.offset, block.storedSize, block.records) }
/// ```
public enum SegmentInspector {
    /// Dumps the segment at `path`.
    ///
    /// The footer, properties, filter, range tombstones and root index must be readable (their
    /// checksums are checked when the file is opened); damage below the root — a data or index
    /// block failing its checksum — is reported per block in ``SegmentDump/problems`` and the
    /// ``SegmentDump/DataBlock/error`` of the block, and the dump goes on.
    ///
    /// - Throws: ``InspectionError`` when `path` is not a segment;
    ///   `StrataError.unsupportedFormatVersion(file:found:)` for a future format version;
    ///   `StrataError.corrupted(file:offset:reason:)` when the file cannot be opened.
    ///
    /// `key` reads a segment of an encrypted store (``StoreOptions/encryptionKey``).
    public static func dump(segmentAt path: String, includeRecords: Bool = false, key: EncryptionKey? = nil) throws -> SegmentDump {
        try InspectionKey.$current.withValue(key ?? InspectionKey.current) { try dumpSegment(path, includeRecords: includeRecords) }
    }

    private static func dumpSegment(_ path: String, includeRecords: Bool) throws -> SegmentDump {
        try StoreInspector.require(.segment, at: path)
        var number: UInt64?
        if case .segment(let n) = FileNames.parse(StoreInspector.baseName(path)) { number = n }
        let reader = try SegmentReader(path: path, number: number ?? 0, cache: nil, fileSystem: .real, key: InspectionKey.current)
        let f = reader.footer, p = reader.properties

        var dump = SegmentDump(path: path, fileSize: UInt64(reader.fileSize))
        dump.number = number
        dump.footer = SegmentDump.Footer(
            rootIndexOffset: f.rootIndex.offset, rootIndexSize: f.rootIndex.length, indexHeight: f.indexHeight,
            filterOffset: f.filter.offset, filterSize: f.filter.length,
            rangeTombstonesOffset: f.rangeTombstones.offset, rangeTombstonesSize: f.rangeTombstones.length,
            propertiesOffset: f.properties.offset, propertiesSize: f.properties.length, formatVersion: f.formatVersion)
        dump.properties = SegmentDump.Properties(p)
        dump.rangeTombstones = reader.rangeTombstones.map {
            SegmentDump.RangeTombstone(start: InspectedKey($0.start), end: InspectedKey($0.end))
        }

        let tree = SegmentTree(reader)
        dump.index = SegmentDump.Index(height: Int(f.indexHeight), blocksPerLevel: tree.indexBlocksPerLevel,
                                       blocks: tree.indexBlocksPerLevel.reduce(0, +))
        dump.problems = tree.faults.map { SegmentDump.Problem(offset: $0.offset, reason: $0.reason) }
        var records: [SegmentDump.Record] = []

        try SegmentTrailerReader.withFile(path) { trailers in
            if f.filter.length > 0 {
                let probes = try trailers.byte(at: f.filter.offset + f.filter.length - 1).map(Int.init) ?? 0
                let bits = (f.filter.length - 1) * 8
                dump.filter = SegmentDump.Filter(offset: f.filter.offset, size: f.filter.length, bits: bits, probes: probes,
                                                 bitsPerKey: p.records > 0 ? Double(bits) / Double(p.records) : nil)
            }
            for (i, ref) in tree.dataBlocks.enumerated() {
                var b = SegmentDump.DataBlock(index: i, offset: ref.handle.offset, size: ref.handle.length,
                                              storedSize: ref.handle.length + UInt64(SegmentFormat.blockTrailerSize))
                if let t = try? trailers.trailer(of: ref.handle) {
                    b.compression = SegmentTrailerReader.compressionName(t.compression)
                    b.uncompressedSize = UInt64(t.uncompressedLength)
                }
                do {
                    let block = try reader.block(ref.handle)
                    b.uncompressedSize = UInt64(block.bytes.count)
                    var cursor = BlockCursor(block)
                    try cursor.seekToFirst()
                    while cursor.isValid {
                        if b.records == 0 { b.firstKey = InspectedKey(cursor.key) }
                        b.records += 1
                        if includeRecords {
                            records.append(SegmentDump.Record(block: i, key: InspectedKey(cursor.key),
                                                              kind: cursor.kind == .tombstone ? .tombstone : .value,
                                                              valueSize: cursor.value.count))
                        }
                        let key = cursor.key
                        try cursor.next()
                        if !cursor.isValid { b.lastKey = InspectedKey(key) }
                    }
                } catch {
                    let fault = FileFault(error, at: Int(clamping: ref.handle.offset))
                    b.error = fault.reason
                    dump.problems.append(SegmentDump.Problem(offset: fault.offset, reason: fault.reason))
                }
                dump.dataBlocks.append(b)
            }
        }
        if includeRecords { dump.records = records }
        return dump
    }
}

/// What ``SegmentInspector/dump(segmentAt:includeRecords:)`` reports about a segment file.
/// Sizes and offsets are in bytes.
public struct SegmentDump: Codable, Sendable {
    /// The fixed-size footer at the end of the file (FORMAT.md, "Segment files"). A size of 0
    /// means the block is absent.
    public struct Footer: Codable, Sendable, Equatable {
        /// The offset of the root index block.
        public var rootIndexOffset: UInt64 = 0
        /// The size of the root index block.
        public var rootIndexSize: UInt64 = 0
        /// The levels of the index (1: the root points to data blocks).
        public var indexHeight: UInt32 = 0
        /// The offset of the bloom filter block.
        public var filterOffset: UInt64 = 0
        /// The size of the bloom filter block (0: no filter).
        public var filterSize: UInt64 = 0
        /// The offset of the range tombstone block.
        public var rangeTombstonesOffset: UInt64 = 0
        /// The size of the range tombstone block (0: none).
        public var rangeTombstonesSize: UInt64 = 0
        /// The offset of the properties block.
        public var propertiesOffset: UInt64 = 0
        /// The size of the properties block.
        public var propertiesSize: UInt64 = 0
        /// The segment format version the file was written with.
        public var formatVersion: UInt32 = 0
    }

    /// One keyspace's share of the segment, from the properties block.
    public struct KeyspaceProperties: Codable, Sendable, Equatable {
        /// The keyspace's id.
        public var id: UInt64
        /// The keyspace's name (`catalog`, `key-value`, …).
        public var name: String
        /// Its records in this segment, tombstones included.
        public var records: UInt64
        /// Its point tombstones in this segment.
        public var tombstones: UInt64
        /// The bytes of its keys.
        public var keyBytes: UInt64
        /// The bytes of its values.
        public var valueBytes: UInt64
        /// Its smallest key in this segment.
        public var smallestKey: InspectedKey
        /// Its largest key in this segment.
        public var largestKey: InspectedKey
    }

    /// The properties block: what the writer counted.
    public struct Properties: Codable, Sendable, Equatable {
        /// Records, tombstones included.
        public var records: UInt64 = 0
        /// Point tombstones.
        public var tombstones: UInt64 = 0
        /// Range tombstones.
        public var rangeTombstones: UInt64 = 0
        /// The bytes of the records' keys.
        public var keyBytes: UInt64 = 0
        /// The bytes of the records' values.
        public var valueBytes: UInt64 = 0
        /// Data blocks.
        public var dataBlocks: UInt64 = 0
        /// Index blocks, at every level.
        public var indexBlocks: UInt64 = 0
        /// Data blocks as stored (payloads and trailers).
        public var storedDataBytes: UInt64 = 0
        /// Data block payloads before compression.
        public var uncompressedDataBytes: UInt64 = 0
        /// `uncompressedDataBytes / storedDataBytes`; nil without data.
        public var compressionRatio: Double?
        /// The smallest point key; nil without records.
        public var smallestKey: InspectedKey?
        /// The largest point key; nil without records.
        public var largestKey: InspectedKey?
        /// Each keyspace's share, in id order.
        public var keyspaces: [KeyspaceProperties] = []

        init() {}

        init(_ p: SegmentProperties) {
            records = p.records
            tombstones = p.tombstones
            rangeTombstones = p.rangeTombstones
            keyBytes = p.keyBytes
            valueBytes = p.valueBytes
            dataBlocks = p.dataBlocks
            indexBlocks = p.indexBlocks
            storedDataBytes = p.storedDataBytes
            uncompressedDataBytes = p.uncompressedDataBytes
            if p.storedDataBytes > 0 { compressionRatio = Double(p.uncompressedDataBytes) / Double(p.storedDataBytes) }
            if p.records > 0 {
                smallestKey = InspectedKey(p.smallestKey)
                largestKey = InspectedKey(p.largestKey)
            }
            keyspaces = p.keyspaces.map {
                KeyspaceProperties(id: $0.id, name: StoreCollections.keyspaceName($0.id), records: $0.records, tombstones: $0.tombstones,
                                   keyBytes: $0.keyBytes, valueBytes: $0.valueBytes,
                                   smallestKey: InspectedKey($0.smallestKey), largestKey: InspectedKey($0.largestKey))
            }
        }
    }

    /// The shape of the B-tree index: level 0 is the root, the last level points to data blocks.
    public struct Index: Codable, Sendable, Equatable {
        /// The number of index levels.
        public var height: Int = 0
        /// Index blocks per level, the root's level first.
        public var blocksPerLevel: [Int] = []
        /// Index blocks in all.
        public var blocks: Int = 0
    }

    /// One data block, in key order.
    public struct DataBlock: Codable, Sendable, Equatable {
        /// The block's position among the data blocks (0 first).
        public var index: Int
        /// The offset of the block's payload in the file.
        public var offset: UInt64
        /// The payload's size as stored (compressed, if it is).
        public var size: UInt64
        /// The payload and its 9-byte trailer.
        public var storedSize: UInt64
        /// The payload's size before compression.
        public var uncompressedSize: UInt64 = 0
        /// `none` or `lz4`.
        public var compression: String = "unknown"
        /// The records the block holds.
        public var records: Int = 0
        /// The block's first key; nil if it holds none or could not be read.
        public var firstKey: InspectedKey?
        /// The block's last key; nil if it holds none or could not be read.
        public var lastKey: InspectedKey?
        /// Why the block could not be read, if it could not.
        public var error: String?
    }

    /// The bloom filter block.
    public struct Filter: Codable, Sendable, Equatable {
        /// The offset of the filter block.
        public var offset: UInt64
        /// The filter block's size in bytes (its bits and the probe count byte).
        public var size: UInt64
        /// The filter's size in bits.
        public var bits: UInt64
        /// Bits set and tested per key.
        public var probes: Int
        /// Filter bits per record; nil without records.
        public var bitsPerKey: Double?
    }

    /// A deleted key range `[start, end)` this segment applies to older runs.
    public struct RangeTombstone: Codable, Sendable, Equatable {
        /// The first key deleted.
        public var start: InspectedKey
        /// The first key after the range (not deleted).
        public var end: InspectedKey
    }

    /// The kind of a stored record.
    public enum RecordKind: String, Codable, Sendable {
        /// A key with its value.
        case value
        /// A point deletion.
        case tombstone
    }

    /// One record, in key order.
    public struct Record: Codable, Sendable, Equatable {
        /// The index of the data block holding it.
        public var block: Int
        /// The record's key.
        public var key: InspectedKey
        /// Whether it is a value or a tombstone.
        public var kind: RecordKind
        /// The value's size in bytes (0 for a tombstone).
        public var valueSize: Int
    }

    /// Something wrong found while reading the file.
    public struct Problem: Codable, Sendable, Equatable {
        /// Where in the file the problem is.
        public var offset: Int
        /// What is wrong.
        public var reason: String
    }

    /// The segment file's path, as given.
    public var path: String
    /// The file number from the name, if the name is a segment's.
    public var number: UInt64?
    /// The file's size in bytes.
    public var fileSize: UInt64
    /// The footer.
    public var footer = Footer()
    /// The properties block.
    public var properties = Properties()
    /// The shape of the index.
    public var index = Index()
    /// The data blocks, in key order.
    public var dataBlocks: [DataBlock] = []
    /// The bloom filter; nil when the segment has none.
    public var filter: Filter?
    /// The range tombstones, in key order.
    public var rangeTombstones: [RangeTombstone] = []
    /// Every record, when asked for.
    public var records: [Record]?
    /// Blocks that could not be read; empty when every block read.
    public var problems: [Problem] = []

    /// A dump of the segment at `path` with nothing read yet; ``SegmentInspector/dump(segmentAt:includeRecords:)`` fills it.
    public init(path: String, fileSize: UInt64) {
        self.path = path
        self.fileSize = fileSize
    }
}
