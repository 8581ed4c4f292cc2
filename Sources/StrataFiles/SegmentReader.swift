import Synchronization
@_spi(Layers) import StrataFormat

/// Reads a segment file through a read-only memory map of the whole file.
///
/// Invariants: the mapping covers exactly `fileSize` bytes and lives as long as the reader; every
/// handle is checked against `fileSize` before its bytes are touched; before a block is copied out
/// of the map the file's current size is checked again, so a file that shrank under us is reported
/// as ``StrataError/corrupted(file:offset:reason:)`` instead of faulting (SIGBUS) on a page past
/// its end. Block bytes are verified against their CRC before they are decompressed.
///
/// A reader is shared by every version and snapshot that lists its segment; when the engine marks
/// it obsolete, the file is deleted once the last of them lets go (in `deinit`).
@_spi(Layers) public final class SegmentReader: @unchecked Sendable {
    package let number: UInt64
    package let path: String
    package let fileSize: Int
    package let footer: SegmentFooter
    package let properties: SegmentProperties
    /// Sorted, disjoint `[start, end)` ranges this segment deletes in older segments.
    package let rangeTombstones: [RangeTombstone]
    private let file: SystemFile
    private let map: UnsafeRawBufferPointer
    private let filter: [UInt8]
    private let root: Block
    private let cache: BlockCache?
    /// Opens the blocks of an encrypted store's segment (version 4); nil for one in clear.
    private let cipher: FileCipher?
    /// Where the stored blocks end: the footer's offset, less the cipher header in version 4.
    package let blocksEnd: Int
    private let obsolete = Atomic<Bool>(false)
    /// Told when `deinit` fails to delete the obsolete file (``markObsolete(reportingRemovalFailure:)``).
    private let removalFailure = Mutex<(@Sendable (StrataError) -> Void)?>(nil)

    /// `key` is the store's: a version 4 segment needs the key it was sealed with, and one in clear
    /// refuses a key (``StrataError/encryptionKey(store:problem:)`` naming the file).
    package init(path: String, number: UInt64, cache: BlockCache?, expectedSize: Int? = nil,
                 fileSystem: FileSystem, key: EncryptionKey? = nil) throws {
        self.path = path
        self.number = number
        self.cache = cache
        let file = try fileSystem.open(path, flags: .readOnly)
        var mapped: UnsafeRawBufferPointer?
        do {
            let size = try file.size()
            if let expectedSize, expectedSize != size {
                throw StrataError.corrupted(file: path, offset: min(size, expectedSize),
                                            reason: "file is \(size) bytes, the manifest says \(expectedSize)")
            }
            guard size >= SegmentFormat.footerSize else {
                throw StrataError.corrupted(file: path, offset: 0, reason: "file of \(size) bytes is too short for a segment")
            }
            try fileSystem.environment.check(.mmap, path)
            let m: UnsafeRawBufferPointer
            do {
                m = try SystemCalls.mapReadOnly(file.descriptor, count: size)
            } catch {
                throw StrataError.io(path: path, errno: error.code, operation: "mmap")
            }
            mapped = m
            self.fileSize = size
            self.file = file
            self.map = m
            let footerOffset = size - SegmentFormat.footerSize
            self.footer = try SegmentFooter.decode(UnsafeRawBufferPointer(rebasing: m[footerOffset...]),
                                                   file: path, fileOffset: footerOffset)
            var blocksEnd = footerOffset
            if footer.formatVersion == SegmentFormat.encryptedVersion {
                let at = footerOffset - SegmentFormat.cipherHeaderSize
                guard at >= 0 else {
                    throw StrataError.corrupted(file: path, offset: 0, reason: "file of \(size) bytes is too short for an encrypted segment")
                }
                let h = UnsafeRawBufferPointer(rebasing: m[at..<footerOffset])
                guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: h[0..<32]))) == LittleEndian.uint32(h, at: 32) else {
                    throw StrataError.corrupted(file: path, offset: at, reason: "encryption header checksum mismatch")
                }
                let identifier = Array(h[0..<EncryptionKey.identifierSize])
                try FileCipher.checkKey(key, fileIdentifier: identifier, store: path)
                self.cipher = FileCipher(key: key!, purpose: .segment, fileNumber: number, salt: Array(h[EncryptionKey.identifierSize..<32]))
                blocksEnd = at
            } else {
                try FileCipher.checkKey(key, fileIdentifier: nil, store: path)
                self.cipher = nil
            }
            self.blocksEnd = blocksEnd
            for (name, h) in [("root index", footer.rootIndex), ("filter", footer.filter),
                              ("range tombstones", footer.rangeTombstones), ("properties", footer.properties)] {
                // An optional block is absent when its size is 0, and its offset is then 0 too.
                if h.length == 0 && (name == "filter" || name == "range tombstones") {
                    guard h.offset == 0 else {
                        throw StrataError.corrupted(file: path, offset: footerOffset,
                                                    reason: "absent \(name) block (size 0) has offset \(h.offset), not 0")
                    }
                    continue
                }
                guard SegmentFormat.liesBeforeFooter(h, footerOffset: blocksEnd) else {
                    throw StrataError.corrupted(file: path, offset: footerOffset,
                                                reason: "\(name) block handle \(h.offset)+\(h.length) outside the file")
                }
            }
            guard SegmentFormat.indexHeights.contains(footer.indexHeight) else {
                throw StrataError.corrupted(file: path, offset: footerOffset, reason: "index height \(footer.indexHeight) outside \(SegmentFormat.indexHeights)")
            }
            let propsBytes = try Self.decodeBytes(m, footer.properties, path: path, cipher: cipher)
            guard let props = propsBytes.withUnsafeBytes({ SegmentProperties.decode($0) }) else {
                throw StrataError.corrupted(file: path, offset: Int(footer.properties.offset), reason: "malformed properties block")
            }
            self.properties = props
            self.filter = footer.filter.length > 0 ? try Self.decodeBytes(m, footer.filter, path: path, cipher: cipher) : []
            var tombstones: [RangeTombstone] = []
            if footer.rangeTombstones.length > 0 {
                var c = BlockCursor(try Self.decodeBlock(m, footer.rangeTombstones, path: path, checkSize: nil, cipher: cipher))
                try c.seekToFirst()
                while c.isValid {
                    guard c.kind == .value else {
                        throw StrataError.corrupted(file: path, offset: Int(footer.rangeTombstones.offset),
                                                    reason: "range tombstone entry at \(c.current ?? 0) has kind \(c.kind.rawValue), not 0")
                    }
                    tombstones.append(RangeTombstone(start: c.key, end: c.valueBytes))
                    try c.next()
                }
            }
            self.rangeTombstones = tombstones
            let root = try Self.decodeBlock(m, footer.rootIndex, path: path, checkSize: nil, cipher: cipher)
            if footer.formatVersion >= 2 {
                try Self.checkRootCounts(root, path: path, footer: footer, blocksEnd: blocksEnd, properties: props)
            }
            self.root = root
        } catch {
            if let mapped { SystemCalls.unmap(mapped) }
            file.close()
            throw error
        }
        // Fully initialized: a fault found here unmaps and closes through deinit.
        try checkKeyBounds()
    }

    /// Version 2: the root entries' counts add up to the properties' (FORMAT.md 5.5), so that no
    /// count summed from the index can exceed what the properties promise.
    private static func checkRootCounts(_ root: Block, path: String, footer: SegmentFooter, blocksEnd: Int,
                                        properties: SegmentProperties) throws {
        var sum = RecordCounts.zero
        var c = BlockCursor(root)
        try c.seekToFirst()
        while c.isValid {
            guard let counts = try indexEntry(kind: c.kind, value: c.value, in: root, path: path, version: footer.formatVersion,
                                              blocksEnd: blocksEnd, segmentRecords: properties.records).counts else { break }
            // Each term is at most properties.records (checked by indexEntry), so comparing before
            // adding cannot overflow.
            guard counts.records <= properties.records - sum.records, counts.tombstones <= counts.records else {
                throw StrataError.corrupted(file: path, offset: root.fileOffset, reason: "root index entries count more than the properties' \(properties.records) records")
            }
            sum.records += counts.records
            sum.tombstones += counts.tombstones
            try c.next()
        }
        guard sum.records == properties.records, sum.tombstones == properties.tombstones else {
            throw StrataError.corrupted(file: path, offset: root.fileOffset, reason:
                "root index entries count \(sum.records) records, \(sum.tombstones) tombstones; the properties \(properties.records), \(properties.tombstones)")
        }
    }

    deinit {
        SystemCalls.unmap(map)
        file.close()
        if obsolete.load(ordering: .acquiring) {
            cache?.evict(file: number)
            do {
                try FileSystem(environment: file.environment).remove(path)
            } catch {
                let report = removalFailure.withLock { $0 }
                report?(error as? StrataError ?? .io(path: path, errno: Errno.ioError.code, operation: "unlink"))
            }
        }
    }

    /// Marks the file for deletion once no version, snapshot or iterator uses it. A deletion that
    /// fails leaves the file for the next open to delete, and is told to `report`, from whatever
    /// thread lets the reader go (possibly one holding the engine's lock).
    package func markObsolete(reportingRemovalFailure report: (@Sendable (StrataError) -> Void)? = nil) {
        if let report { removalFailure.withLock { $0 = report } }
        obsolete.store(true, ordering: .releasing)
    }

    /// Verifies and decodes the stored block at `handle` and parses it as a ``Block``.
    private static func decodeBlock(
        _ map: UnsafeRawBufferPointer, _ h: BlockHandle, path: String, checkSize: SystemFile?, cipher: FileCipher?
    ) throws -> Block {
        try Block(adopting: try decodePayload(map, h, path: path, checkSize: checkSize, cipher: cipher), file: path, fileOffset: Int(h.offset))
    }

    /// Verifies and decodes a stored block whose content is not a ``Block`` (filter, properties).
    private static func decodeBytes(_ map: UnsafeRawBufferPointer, _ h: BlockHandle, path: String, cipher: FileCipher?) throws -> [UInt8] {
        let storage = try decodePayload(map, h, path: path, checkSize: nil, cipher: cipher)
        defer { storage.deallocate() }
        return Array(storage)
    }

    /// Verifies the stored block at `handle` (bounds, CRC, and with `cipher` its tag) and
    /// decompresses it into memory the caller owns.
    private static func decodePayload(
        _ map: UnsafeRawBufferPointer, _ h: BlockHandle, path: String, checkSize: SystemFile?, cipher: FileCipher?
    ) throws -> UnsafeMutableRawBufferPointer {
        let trailer = SegmentFormat.blockTrailerSize
        guard h.offset <= UInt64(map.count), h.length <= UInt64(map.count) - h.offset,
              UInt64(trailer) <= UInt64(map.count) - h.offset - h.length
        else {
            throw StrataError.corrupted(file: path, offset: Int(clamping: h.offset), reason: "block handle \(h.offset)+\(h.length) outside the file")
        }
        let start = Int(h.offset), length = Int(h.length)
        if let file = checkSize {
            let now = try file.size()
            guard now >= map.count else {
                throw StrataError.corrupted(file: path, offset: now, reason: "file shrank from \(map.count) to \(now) bytes while open")
            }
        }
        let stored = UnsafeRawBufferPointer(rebasing: map[start..<(start + length)])
        let t = UnsafeRawBufferPointer(rebasing: map[(start + length)..<(start + length + trailer)])
        var crc = CRC32C.checksum(stored)
        crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: t[0..<5]), extending: crc)
        guard CRC32C.mask(crc) == LittleEndian.uint32(t, at: 5) else {
            throw StrataError.corrupted(file: path, offset: start, reason: "block checksum mismatch")
        }
        guard let cipher else {
            return try decodeChecked(stored, trailer: t, path: path, start: start)
        }
        // The tag is checked before a byte of the block is decoded: damage to one block, or a block
        // moved from another place or file, never reads as data.
        guard let opened = cipher.open(stored, position: h.offset, header: UnsafeRawBufferPointer(rebasing: t[0..<5])) else {
            throw StrataError.corrupted(file: path, offset: start, reason: "block fails authentication (AES-GCM tag mismatch)")
        }
        return try opened.withUnsafeBytes { try decodeChecked($0, trailer: t, path: path, start: start) }
    }

    /// Decompresses a stored block's payload whose CRC (and tag) matched.
    private static func decodeChecked(_ payload: UnsafeRawBufferPointer, trailer t: UnsafeRawBufferPointer, path: String,
                                      start: Int) throws -> UnsafeMutableRawBufferPointer {
        let length = payload.count
        // Every fault of a stored block names its first payload byte (FORMAT.md 5.11), also when
        // the trailer is what is wrong.
        let rawLength = Int(LittleEndian.uint32(t, at: 1))
        guard let compression = BlockCompression(rawValue: t[0]) else {
            throw StrataError.corrupted(file: path, offset: start, reason: "unknown block compression \(t[0])")
        }
        let storage: UnsafeMutableRawBufferPointer
        switch compression {
        case .none:
            guard rawLength == length else {
                throw StrataError.corrupted(file: path, offset: start, reason: "raw block length \(length) != \(rawLength)")
            }
            storage = .allocate(byteCount: max(length, 1), alignment: 8)
            if length > 0 { storage.copyMemory(from: payload) }
        case .lz4:
            // The CRC already matched; this bound only keeps a forged length from a huge allocation.
            guard rawLength <= Int(Int32.max) else {
                throw StrataError.corrupted(file: path, offset: start, reason: "uncompressed length \(rawLength) impossible")
            }
            storage = .allocate(byteCount: max(rawLength, 1), alignment: 8)
            guard BlockCompression.decompressLZ4(payload, into: UnsafeMutableRawBufferPointer(rebasing: storage[0..<rawLength])) else {
                storage.deallocate()
                throw StrataError.corrupted(file: path, offset: start, reason: "LZ4 payload does not decode to \(rawLength) bytes")
            }
        }
        return UnsafeMutableRawBufferPointer(rebasing: storage[0..<rawLength])
    }

    /// The block at `handle`, from the cache or decoded from the file; a decoded block goes
    /// into the cache unless `fillCache` is false (a bulk scan that would evict what gets use).
    package func block(_ handle: BlockHandle, fillCache: Bool = true) throws -> Block {
        let key = BlockCache.Key(file: number, offset: handle.offset)
        if let hit = cache?.lookup(key) { return hit }
        let b = try Self.decodeBlock(map, handle, path: path, checkSize: file, cipher: cipher)
        if fillCache { cache?.insert(key, b) }
        return b
    }

    package var rootBlock: Block { root }

    /// The handle an index entry of `block` holds (FORMAT.md 5.5): the entry's kind MUST be 0,
    /// its value exactly two varints (four from version 2), and the block it names MUST lie,
    /// trailer included, before the footer. A fault names the index block holding the entry, not
    /// the place it points to.
    package func childHandle(kind: RecordKind, value: UnsafeRawBufferPointer, in block: Block) throws -> BlockHandle {
        try indexEntry(kind: kind, value: value, in: block).handle
    }

    /// The whole value of an index entry of `block`, checked as ``childHandle(kind:value:in:)``
    /// says; from version 2 also its counts: no more tombstones than records, and no more records
    /// than the segment's properties count.
    package func indexEntry(kind: RecordKind, value: UnsafeRawBufferPointer, in block: Block) throws -> IndexEntryValue {
        try Self.indexEntry(kind: kind, value: value, in: block, path: path, version: footer.formatVersion,
                            blocksEnd: blocksEnd, segmentRecords: properties.records)
    }

    private static func indexEntry(kind: RecordKind, value: UnsafeRawBufferPointer, in block: Block, path: String,
                                   version: UInt32, blocksEnd: Int, segmentRecords: UInt64) throws -> IndexEntryValue {
        guard kind == .value else {
            throw StrataError.corrupted(file: path, offset: block.fileOffset, reason: "index entry has kind \(kind.rawValue), not 0")
        }
        guard let entry = IndexEntryValue.decode(value, version: version) else {
            throw StrataError.corrupted(file: path, offset: block.fileOffset, reason: "malformed index entry")
        }
        let h = entry.handle
        guard SegmentFormat.liesBeforeFooter(h, footerOffset: blocksEnd) else {
            throw StrataError.corrupted(file: path, offset: block.fileOffset, reason: "index entry's block handle \(h.offset)+\(h.length) outside the file")
        }
        if let c = entry.counts, c.tombstones > c.records || c.records > segmentRecords {
            throw StrataError.corrupted(file: path, offset: block.fileOffset,
                                        reason: "index entry counts \(c.records) records, \(c.tombstones) tombstones (the segment has \(segmentRecords) records)")
        }
        return entry
    }

    /// Whether the bloom filter allows `key` to be here (always true without a filter).
    package func mayContain(hash: UInt64) -> Bool {
        if filter.isEmpty { return true }
        return filter.withUnsafeBytes { BloomFilter.mayContain($0, hash: hash) }
    }

    /// The record stored for exactly `key`, if this segment has one.
    package func get(_ key: UnsafeRawBufferPointer, hash: UInt64) throws -> (RecordKind, [UInt8])? {
        guard mayContain(hash: hash) else { return nil }
        var block = root
        for _ in 0..<footer.indexHeight {
            let h: BlockHandle
            switch try block.lookupWholeKeys(key) {
            case .found(let kind, let value)?:
                h = try childHandle(kind: kind, value: value, in: block)
            case .notFound?:
                return nil
            case nil:
                var c = BlockCursor(block)
                try c.seek(key)
                guard c.isValid else { return nil }
                h = try childHandle(kind: c.kind, value: c.value, in: block)
            }
            block = try self.block(h)
        }
        guard let (kind, value) = try block.find(key) else { return nil }
        return (kind, Array(value))
    }
}

/// A deleted key range `[start, end)`.
package struct RangeTombstone: Equatable, Sendable {
    package var start: [UInt8]
    package var end: [UInt8]

    package init(start: [UInt8], end: [UInt8]) {
        self.start = start
        self.end = end
    }

    @inlinable @inline(__always)
    package func covers(_ key: UnsafeRawBufferPointer) -> Bool {
        ByteComparison.compare(start, key) <= 0 && ByteComparison.compare(end, key) > 0
    }
}
