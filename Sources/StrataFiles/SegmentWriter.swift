@_spi(Layers) import StrataFormat

/// What a segment file holds, as the manifest records it.
package struct SegmentMetadata: Equatable, Sendable {
    package var number: UInt64
    package var fileSize: UInt64
    /// The smallest and largest key the segment speaks for, range tombstones included
    /// (a range tombstone's exclusive end counts as its largest key).
    package var smallestKey: [UInt8]
    package var largestKey: [UInt8]
    package var records: UInt64

    package init(number: UInt64, fileSize: UInt64, smallestKey: [UInt8], largestKey: [UInt8], records: UInt64) {
        self.number = number
        self.fileSize = fileSize
        self.smallestKey = smallestKey
        self.largestKey = largestKey
        self.records = records
    }
}

/// Tuning for the files a ``SegmentWriter`` produces.
package struct SegmentWriterOptions: Sendable {
    /// Target size of a data block before compression (``StoreOptions/blockSize`` says why 4 KiB).
    package var blockSize = 4 * 1024
    /// Target size of an index block.
    package var indexBlockSize = 8 * 1024
    /// Keys stored whole every this many entries in a data block.
    package var restartInterval = 16
    /// Bloom filter bits per key; 0 writes no filter.
    package var bloomBitsPerKey = 10
    /// The segment format version written: ``SegmentFormat/version``, or 1 (index entries without
    /// record counts) to produce files of an older build, for tests.
    package var formatVersion = SegmentFormat.version
    /// The store's key: with one, the segment is sealed (version 4, ``FileCipher``).
    package var encryptionKey: EncryptionKey?

    package init(blockSize: Int = 4 * 1024, indexBlockSize: Int = 8 * 1024, restartInterval: Int = 16,
                 bloomBitsPerKey: Int = 10, formatVersion: UInt32 = SegmentFormat.version, encryptionKey: EncryptionKey? = nil) {
        self.encryptionKey = encryptionKey
        self.blockSize = blockSize
        self.indexBlockSize = indexBlockSize
        self.restartInterval = restartInterval
        self.bloomBitsPerKey = bloomBitsPerKey
        self.formatVersion = formatVersion
    }
}

/// Writes one segment file: sorted records into LZ4-compressed data blocks, then the filter,
/// range tombstones, the B-tree index, the properties and the footer (FORMAT.md "Segment files").
///
/// The file is written under a temporary name and only renamed to its final name by ``finish()``
/// after it is complete and synced; the caller then syncs the directory and publishes it in the
/// manifest. Records must be added in strictly increasing key order.
package final class SegmentWriter {
    package let number: UInt64
    package let finalPath: String
    private let tempPath: String
    private let options: SegmentWriterOptions
    private let file: SystemFile
    private var out: [UInt8] = []
    private var offset: UInt64 = 0
    private var data: BlockBuilder
    /// Per data block: its last key, handle and record counts.
    private var leafEntries: [([UInt8], BlockHandle, RecordCounts)] = []
    /// The tombstones of the open data block.
    private var blockTombstones: UInt64 = 0
    private var hashes: [UInt64] = []
    private var rangeTombstones: [([UInt8], [UInt8])] = []
    package private(set) var properties = SegmentProperties()
    private var lastKeyspace: UInt64?
    private var lastKey: [UInt8] = []
    /// Seals every block of an encrypted store's segment; a new salt for each file written.
    private let cipher: FileCipher?

    package init(directory: String, number: UInt64, options: SegmentWriterOptions, fileSystem: FileSystem) throws {
        self.number = number
        self.cipher = options.encryptionKey.map { FileCipher.forNewFile(key: $0, purpose: .segment, fileNumber: number) }
        self.finalPath = directory + "/" + FileNames.segment(number)
        self.tempPath = finalPath + ".tmp"
        self.options = options
        self.data = BlockBuilder(restartInterval: options.restartInterval)
        self.file = try fileSystem.open(tempPath, flags: [.writeOnly, .create, .truncate])
        out.reserveCapacity(1 << 20)
    }

    package var isEmpty: Bool { properties.records == 0 && rangeTombstones.isEmpty }

    /// The size of the file so far, counting the open data block uncompressed.
    package var estimatedFileSize: Int { Int(offset) + out.count + data.estimatedSize }

    package func add(key: UnsafeRawBufferPointer, kind: RecordKind, value: UnsafeRawBufferPointer) throws {
        #if STRATA_INVARIANTS
        Invariants.require(lastKeyspace == nil || ByteComparison.compare(lastKey, key) < 0,
                           "segment \(number): key added out of order")
        #endif
        let ks = SegmentProperties.keyspace(of: key)
        if let last = lastKeyspace, last != ks { properties.closeKeyspace(lastKey: lastKey) }
        lastKeyspace = ks
        properties.add(key: key, kind: kind, valueLength: value.count)
        if options.bloomBitsPerKey > 0 { hashes.append(KeyHash.hash64(key)) }
        data.add(key: key, kind: kind, value: value)
        if kind == .tombstone { blockTombstones += 1 }
        if data.estimatedSize >= options.blockSize { try flushDataBlock() }
        lastKey.removeAll(keepingCapacity: true)
        lastKey.append(contentsOf: key)
    }

    package func add(key: [UInt8], kind: RecordKind, value: [UInt8]) throws {
        try key.withUnsafeBytes { (k) in
            try value.withUnsafeBytes { (v) in try add(key: k, kind: kind, value: v) }
        }
    }

    /// Records a range tombstone `[start, end)`; they may come in any order.
    package func addRangeTombstone(start: [UInt8], end: [UInt8]) {
        if ByteComparison.compare(start, end) < 0 { rangeTombstones.append((start, end)) }
    }

    private func flushDataBlock() throws {
        guard !data.isEmpty else { return }
        let last = data.lastAddedKey
        let counts = RecordCounts(records: UInt64(data.count), tombstones: blockTombstones)
        blockTombstones = 0
        let raw = data.finish()
        properties.uncompressedDataBytes += UInt64(raw.count)
        let handle = try writeBlock(raw, compress: true)
        properties.storedDataBytes += handle.length + UInt64(SegmentFormat.blockTrailerSize)
        properties.dataBlocks += 1
        leafEntries.append((last, handle, counts))
    }

    /// Appends a stored block (payload + trailer) and returns its handle.
    private func writeBlock(_ raw: [UInt8], compress: Bool) throws -> BlockHandle {
        let (kind, compressed) = compress ? BlockCompression.compress(raw) : (.none, raw)
        let position = offset + UInt64(out.count)
        var trailer: [UInt8] = [kind.rawValue]
        LittleEndian.append(UInt32(raw.count), to: &trailer)
        var payload = compressed
        if let cipher {
            payload = []
            payload.reserveCapacity(compressed.count + FileCipher.tagSize)
            compressed.withUnsafeBytes { c in
                trailer.withUnsafeBytes { cipher.seal(c, position: position, header: $0, to: &payload) }
            }
        }
        let handle = BlockHandle(offset: position, length: UInt64(payload.count))
        out.append(contentsOf: payload)
        var crc = CRC32C.checksum(payload)
        crc = CRC32C.checksum(trailer, extending: crc)
        out.append(contentsOf: trailer)
        LittleEndian.append(CRC32C.mask(crc), to: &out)
        if out.count >= 1 << 20 { try drain() }
        return handle
    }

    private func drain() throws {
        try file.write(out)
        offset += UInt64(out.count)
        out.removeAll(keepingCapacity: true)
    }

    /// Writes the rest of the file, syncs it and renames it to its final name.
    package func finish() throws -> SegmentMetadata {
        try flushDataBlock()
        properties.finish(lastKey: lastKey)

        var filter = BlockHandle.empty
        if options.bloomBitsPerKey > 0 && !hashes.isEmpty {
            filter = try writeBlock(BloomFilter.build(hashes: hashes, bitsPerKey: options.bloomBitsPerKey), compress: false)
        }

        // Range tombstones of one segment all apply to older segments only, so their union is
        // equivalent to the list: store it as sorted, disjoint ranges.
        var merged: [([UInt8], [UInt8])] = []
        for (s, e) in rangeTombstones.sorted(by: { ByteComparison.compare($0.0, $1.0) < 0 }) {
            if let last = merged.last, ByteComparison.compare(s, last.1) <= 0 {
                if ByteComparison.compare(e, last.1) > 0 { merged[merged.count - 1].1 = e }
            } else {
                merged.append((s, e))
            }
        }
        var tombstones = BlockHandle.empty
        if !merged.isEmpty {
            var b = BlockBuilder(restartInterval: 1)
            for (s, e) in merged { b.add(key: s, kind: .value, value: e) }
            tombstones = try writeBlock(b.finish(), compress: false)
            properties.rangeTombstones = UInt64(merged.count)
        }

        // The B-tree, bottom up: each level indexes the blocks of the level below by their last key,
        // and (version 2) carries the record counts of each entry's subtree.
        let withCounts = options.formatVersion >= 2
        var level = leafEntries
        var height: UInt32 = 0
        if level.isEmpty {
            var b = BlockBuilder(restartInterval: 1)
            level = [([], try writeBlock(b.finish(), compress: false), .zero)]
            properties.indexBlocks += 1
            height = 1
        }
        while height == 0 || level.count > 1 {
            var next: [([UInt8], BlockHandle, RecordCounts)] = []
            var b = BlockBuilder(restartInterval: 1)
            var value: [UInt8] = []
            var blockCounts = RecordCounts.zero
            for (i, (key, handle, counts)) in level.enumerated() {
                value.removeAll(keepingCapacity: true)
                IndexEntryValue(handle: handle, counts: withCounts ? counts : nil).encode(into: &value)
                b.add(key: key, kind: .value, value: value)
                blockCounts.records += counts.records
                blockCounts.tombstones += counts.tombstones
                // At least two entries a block, so that each level is smaller than the one below
                // even when single keys are larger than an index block.
                if (b.count >= 2 && b.estimatedSize >= options.indexBlockSize) || i == level.count - 1 {
                    next.append((key, try writeBlock(b.finish(), compress: false), blockCounts))
                    blockCounts = .zero
                    properties.indexBlocks += 1
                }
            }
            level = next
            height += 1
        }
        let root = level[0].1
        let props = try writeBlock(properties.encode(), compress: false)
        if let cipher {
            let start = out.count
            out.append(contentsOf: cipher.keyIdentifier)
            out.append(contentsOf: cipher.salt)
            let crc = out.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start...]))) }
            LittleEndian.append(crc, to: &out)
        }
        let footer = SegmentFooter(rootIndex: root, indexHeight: height, filter: filter, rangeTombstones: tombstones, properties: props,
                                   formatVersion: cipher == nil ? options.formatVersion : SegmentFormat.encryptedVersion)
        out.append(contentsOf: footer.encode())
        try drain()
        try file.sync()
        file.close()
        try FileSystem(environment: file.environment).rename(tempPath, finalPath)

        var smallest = properties.smallestKey, largest = properties.largestKey
        if let first = merged.first, properties.records == 0 || ByteComparison.compare(first.0, smallest) < 0 {
            smallest = first.0
        }
        if let last = merged.last, properties.records == 0 || ByteComparison.compare(last.1, largest) > 0 {
            largest = last.1
        }
        return SegmentMetadata(number: number, fileSize: offset, smallestKey: smallest,
                               largestKey: largest, records: properties.records)
    }

    /// Closes and deletes the unfinished file; returns the error of a failed deletion (recovery
    /// deletes the file at the next open).
    @discardableResult
    package func abandon() -> StrataError? {
        file.close()
        do { try FileSystem(environment: file.environment).remove(tempPath) } catch { return error as? StrataError ?? .io(path: tempPath, errno: Errno.ioError.code, operation: "unlink") }
        return nil
    }
}
