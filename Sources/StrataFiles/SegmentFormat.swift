@_spi(Layers) import StrataFormat

/// Constants and small structures shared by ``SegmentWriter`` and ``SegmentReader``;
/// FORMAT.md "Segment files" is the spec.
///
/// ```
/// segment := dataBlock+ filterBlock? rangeTombstoneBlock? indexBlock+ propertiesBlock footer
/// stored block := payload | compression:u8 | uncompressedLength:u32 | maskedCRC:u32
///                 (the CRC covers payload, compression byte and uncompressed length)
/// footer (68 bytes) :=
///   0  rootIndexOffset:u64   8 rootIndexSize:u32   12 indexHeight:u32
///   16 filterOffset:u64     24 filterSize:u32      28 rangeTombstoneSize:u32
///   32 rangeTombstoneOffset:u64                    40 propertiesOffset:u64
///   48 propertiesSize:u32   52 formatVersion:u32   56 magic:u64 "STRATSEG"   64 maskedCRC:u32
/// ```
/// All integers little-endian. A size of 0 means the block is absent (only the filter and the
/// range tombstone block may be), and its offset is then 0.
///
/// An encrypted store's segments are version 4: version 3's layout with every stored block's
/// payload sealed (ciphertext then a 16-byte tag, the handle's length counting both; the tag
/// covering the compression byte and uncompressed length; the nonce the payload's offset), and,
/// between the properties block and the footer, `keyIdentifier:16 | salt:16 | maskedCRC:u32`
/// (36 bytes, the CRC over the 32 before it). FORMAT.md 5.12.
package enum SegmentFormat {
    package static let magic: UInt64 = 0x4745_5354_4152_5453  // "STRATSEG" read as a little-endian u64; never change
    /// The version written: 2 adds record counts to index entries (FORMAT.md 5.5, 8); 3 changes
    /// no layout of the file but lets keyspace 2 hold time-series chunks (§14.6), which a build
    /// that reads only 1 and 2 would take for damaged event records.
    package static let version: UInt32 = 3
    /// The version of an encrypted store's segments: version 3's, blocks sealed.
    package static let encryptedVersion: UInt32 = 4
    package static let footerSize = 68
    /// The key identifier, salt and CRC before the footer of a version 4 segment.
    package static let cipherHeaderSize = EncryptionKey.identifierSize + FileCipher.saltSize + 4
    package static let blockTrailerSize = 9
    /// Versions this build reads.
    package static let supportedVersions: ClosedRange<UInt32> = 1...4
    /// The index heights a reader accepts (FORMAT.md 5.5). Each index level has at most half the
    /// blocks of the level below, so 65 levels would take more than 2^64 data blocks.
    package static let indexHeights: ClosedRange<UInt32> = 1...64

    /// Whether the stored block at `h` lies, trailer included, before the footer at `footerOffset`.
    package static func liesBeforeFooter(_ h: BlockHandle, footerOffset: Int) -> Bool {
        let limit = UInt64(max(footerOffset, 0))
        return h.offset <= limit && h.length <= limit - h.offset && UInt64(blockTrailerSize) <= limit - h.offset - h.length
    }
}

/// Where a stored block is: the offset of its payload and the payload's length (without trailer).
package struct BlockHandle: Hashable, Sendable {
    package var offset: UInt64
    package var length: UInt64

    package static let empty = BlockHandle(offset: 0, length: 0)

    /// The encoding used in index entries: two varints.
    package func encode(into bytes: inout [UInt8]) {
        Varint.append(offset, to: &bytes)
        Varint.append(length, to: &bytes)
    }

    package static func decode(_ value: UnsafeRawBufferPointer) -> BlockHandle? {
        var p = 0
        guard let o = Varint.read(value, at: &p), let l = Varint.read(value, at: &p), p == value.count else { return nil }
        return BlockHandle(offset: o, length: l)
    }

    package init(offset: UInt64, length: UInt64) {
        self.offset = offset
        self.length = length
    }
}

/// The point records and point tombstones below an index entry (FORMAT.md 5.5, version 2): in
/// the data block a leaf entry names, or in the whole subtree an upper entry names.
package struct RecordCounts: Hashable, Sendable {
    package var records: UInt64
    package var tombstones: UInt64

    package init(records: UInt64, tombstones: UInt64) {
        self.records = records
        self.tombstones = tombstones
    }

    package static let zero = RecordCounts(records: 0, tombstones: 0)

    /// The values (records that are not tombstones); only when `tombstones <= records`.
    package var values: UInt64 { records - tombstones }
}

/// The value of an index entry (FORMAT.md 5.5): the child's handle, then from version 2 the
/// child's record counts. Version 1: `offset length`; version 2: `offset length records
/// tombstones`, all varints.
package struct IndexEntryValue: Hashable, Sendable {
    package var handle: BlockHandle
    /// Nil in a version-1 segment.
    package var counts: RecordCounts?

    package func encode(into bytes: inout [UInt8]) {
        handle.encode(into: &bytes)
        if let counts {
            Varint.append(counts.records, to: &bytes)
            Varint.append(counts.tombstones, to: &bytes)
        }
    }

    /// Decodes the value of an index entry of a segment of `version`: exactly its varints, nil
    /// otherwise. The counts are not checked here (``SegmentReader/indexEntry(kind:value:in:)``).
    package static func decode(_ value: UnsafeRawBufferPointer, version: UInt32) -> IndexEntryValue? {
        var p = 0
        guard let o = Varint.read(value, at: &p), let l = Varint.read(value, at: &p) else { return nil }
        var counts: RecordCounts?
        if version >= 2 {
            guard let r = Varint.read(value, at: &p), let t = Varint.read(value, at: &p) else { return nil }
            counts = RecordCounts(records: r, tombstones: t)
        }
        guard p == value.count else { return nil }
        return IndexEntryValue(handle: BlockHandle(offset: o, length: l), counts: counts)
    }

    package init(handle: BlockHandle, counts: RecordCounts? = nil) {
        self.handle = handle
        self.counts = counts
    }
}

/// The fixed-size trailer of a segment file.
package struct SegmentFooter: Equatable, Sendable {
    package var rootIndex: BlockHandle
    package var indexHeight: UInt32
    package var filter: BlockHandle
    package var rangeTombstones: BlockHandle
    package var properties: BlockHandle
    package var formatVersion: UInt32 = SegmentFormat.version

    package func encode() -> [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(SegmentFormat.footerSize)
        LittleEndian.append(rootIndex.offset, to: &b)
        LittleEndian.append(UInt32(rootIndex.length), to: &b)
        LittleEndian.append(indexHeight, to: &b)
        LittleEndian.append(filter.offset, to: &b)
        LittleEndian.append(UInt32(filter.length), to: &b)
        LittleEndian.append(UInt32(rangeTombstones.length), to: &b)
        LittleEndian.append(rangeTombstones.offset, to: &b)
        LittleEndian.append(properties.offset, to: &b)
        LittleEndian.append(UInt32(properties.length), to: &b)
        LittleEndian.append(formatVersion, to: &b)
        LittleEndian.append(SegmentFormat.magic, to: &b)
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(b)), to: &b)
        assert(b.count == SegmentFormat.footerSize)
        return b
    }

    /// Decodes the last ``SegmentFormat/footerSize`` bytes of `file`. The magic and version are
    /// checked first, so a future version with another footer layout is reported as such.
    package static func decode(_ f: UnsafeRawBufferPointer, file: String, fileOffset: Int) throws -> SegmentFooter {
        precondition(f.count == SegmentFormat.footerSize)
        guard LittleEndian.uint64(f, at: 56) == SegmentFormat.magic else {
            throw StrataError.corrupted(file: file, offset: fileOffset + 56, reason: "not a Strata segment (bad magic)")
        }
        let version = LittleEndian.uint32(f, at: 52)
        guard SegmentFormat.supportedVersions.contains(version) else {
            throw StrataError.unsupportedFormatVersion(file: file, found: version)
        }
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: f[0..<64]))) == LittleEndian.uint32(f, at: 64) else {
            throw StrataError.corrupted(file: file, offset: fileOffset, reason: "segment footer checksum mismatch")
        }
        return SegmentFooter(
            rootIndex: BlockHandle(offset: LittleEndian.uint64(f, at: 0), length: UInt64(LittleEndian.uint32(f, at: 8))),
            indexHeight: LittleEndian.uint32(f, at: 12),
            filter: BlockHandle(offset: LittleEndian.uint64(f, at: 16), length: UInt64(LittleEndian.uint32(f, at: 24))),
            rangeTombstones: BlockHandle(offset: LittleEndian.uint64(f, at: 32), length: UInt64(LittleEndian.uint32(f, at: 28))),
            properties: BlockHandle(offset: LittleEndian.uint64(f, at: 40), length: UInt64(LittleEndian.uint32(f, at: 48))),
            formatVersion: version)
    }

    package init(rootIndex: BlockHandle, indexHeight: UInt32, filter: BlockHandle, rangeTombstones: BlockHandle, properties: BlockHandle, formatVersion: UInt32 = SegmentFormat.version) {
        self.rootIndex = rootIndex
        self.indexHeight = indexHeight
        self.filter = filter
        self.rangeTombstones = rangeTombstones
        self.properties = properties
        self.formatVersion = formatVersion
    }
}
