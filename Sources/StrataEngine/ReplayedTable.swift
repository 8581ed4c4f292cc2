@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// The point writes of replayed logs (recovery, FORMAT.md 4.5), in memtable order — key
/// ascending, then newest first — as one sorted array of entries that point into the logs'
/// bytes. It is the part of a ``Memtable`` that recovery fills: built by one sort, with no key or
/// value copied, where inserting a million writes into a skip list cost most of an open after a
/// crash (copying every key and value into fresh arena memory). Writes of this run go to the
/// memtable's skip list, which is newer than every entry here.
///
/// Immutable once built, so readers share it without a lock. Range deletions are not entries:
/// they go to the memtable's tombstone index (``tombstones``).
@usableFromInline package final class ReplayedTable: @unchecked Sendable {
    /// A batch read back from a log as a view into the log's bytes.
    package struct View {
        /// The log record's payload: first sequence (u64), count (u32), operations. Valid while
        /// the bytes handed to ``ReplayedTable/init(replaying:keeping:)`` with it live.
        package let payload: UnsafeRawBufferPointer
        package let file: String
        package let offset: Int

        package init(payload: UnsafeRawBufferPointer, file: String, offset: Int) {
            self.payload = payload
            self.file = file
            self.offset = offset
        }
    }

    /// A batch read back from a log, held in an array (``ReplayedTable/init(copying:)``).
    package struct Batch {
        /// The log record's payload: first sequence (u64), count (u32), operations.
        package let payload: ArraySlice<UInt8>
        package let file: String
        package let offset: Int

        package init(payload: ArraySlice<UInt8>, file: String, offset: Int) {
            self.payload = payload
            self.file = file
            self.offset = offset
        }
    }

    /// One point write. `key` points into bytes the table keeps alive; the value follows the
    /// key, after the varint of its length (which the build checked ends within the record).
    @usableFromInline package struct Entry {
        /// The key's first 8 bytes, big-endian, zero-padded (``KeyWindow``): orders most pairs
        /// without reading the key.
        @usableFromInline package var head: UInt64
        @usableFromInline package var sequence: UInt64
        @usableFromInline var key: UnsafeRawPointer
        @usableFromInline var keyCount: UInt32
        /// The value's length; ``tombstone`` for a point deletion.
        @usableFromInline var valueCount: UInt32

        @usableFromInline static let tombstone = UInt32.max

        @usableFromInline init(head: UInt64, sequence: UInt64, key: UnsafeRawPointer, keyCount: UInt32, valueCount: UInt32) {
            self.head = head
            self.sequence = sequence
            self.key = key
            self.keyCount = keyCount
            self.valueCount = valueCount
        }

        @inlinable @inline(__always) package var keyBytes: UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: key, count: Int(keyCount))
        }

        @inlinable @inline(__always) package var isTombstone: Bool { valueCount == Self.tombstone }

        /// Empty for a tombstone.
        @inlinable @inline(__always) package var value: UnsafeRawBufferPointer {
            guard valueCount != Self.tombstone else { return UnsafeRawBufferPointer(start: nil, count: 0) }
            // Past the varint of the value's length: its last byte is the first without the
            // continuation bit.
            var p = key + Int(keyCount)
            while p.load(as: UInt8.self) & 0x80 != 0 { p += 1 }
            return UnsafeRawBufferPointer(start: p + 1, count: Int(valueCount))
        }
    }

    /// The entries in order. INVARIANT: sorted by key ascending, then sequence descending; every
    /// `key` points into `owners`' bytes.
    package let entries: UnsafeBufferPointer<Entry>
    /// The range deletions of the replayed batches, in log order.
    package let tombstones: [SequencedRangeTombstone]
    /// The highest sequence of the replayed operations, if there was one.
    package let highestSequence: UInt64?
    /// The bytes of the replayed payloads and of the entries: what the memtable counts towards
    /// its flush.
    package let byteCount: Int
    /// What the entries point into.
    private let owners: [AnyObject]

    package var isEmpty: Bool { entries.isEmpty }

    /// Sorts the point writes of `batches` and records their range deletions; `owners` hold the
    /// bytes the views point into, for as long as the table lives. Throws
    /// ``StrataError/corrupted(file:offset:reason:)`` naming the batch for a malformed one.
    package init(replaying batches: [View], keeping owners: [AnyObject]) throws {
        // Each operation takes at least two bytes: a count beyond that is corrupt (and refused
        // below), not a size to reserve.
        let capacity = batches.reduce(0) { total, b in
            b.payload.count >= 12 ? total + min(Int(LittleEndian.uint32(b.payload, at: 8)), b.payload.count) : total
        }
        // Filled unsorted here, then moved in order to `storage` by the sort's first pass.
        let unsorted = UnsafeMutableBufferPointer<Entry>.allocate(capacity: max(capacity, 1))
        defer { unsorted.deallocate() }
        // Per byte of the heads (most significant first), how many entries have each value: the
        // counts of the sort's first pass, whichever byte it turns out to be.
        let histograms = UnsafeMutableBufferPointer<Int>.allocate(capacity: 8 * 256)
        defer { histograms.deallocate() }
        histograms.initialize(repeating: 0)
        var filled = 0
        var tombstones: [SequencedRangeTombstone] = []
        var highest: UInt64?
        var payloadBytes = 0
        do {
            for b in batches {
                guard b.payload.count >= 12 else {
                    throw StrataError.corrupted(file: b.file, offset: b.offset, reason: "batch record of \(b.payload.count) bytes")
                }
                let p = b.payload
                let first = LittleEndian.uint64(p, at: 0)
                let count = Int(LittleEndian.uint32(p, at: 8))
                var seq = first
                payloadBytes += p.count
                try WriteBatch.forEachOperation(in: UnsafeRawBufferPointer(rebasing: p[12...]), count: count,
                                                file: b.file, offset: b.offset) { op, key, second in
                    switch op {
                    case .put, .delete:
                        // The record is at most LogFormat.maxRecordLength (2³⁰) bytes: both fit.
                        let head = KeyWindow.head(key)
                        unsorted[filled] = Entry(head: head, sequence: seq,
                                                 key: key.baseAddress ?? p.baseAddress!, keyCount: UInt32(key.count),
                                                 valueCount: op == .put ? UInt32(second.count) : Entry.tombstone)
                        filled += 1
                        for b in 0..<8 { histograms[b << 8 | Int(truncatingIfNeeded: head >> UInt64(56 - 8 * b)) & 0xFF] += 1 }
                    case .deleteRange:
                        if ByteComparison.compare(key, second) < 0 {
                            tombstones.append(SequencedRangeTombstone(start: Array(key), end: Array(second), sequence: seq))
                        }
                    }
                    seq += 1
                }
                if count > 0 { highest = max(highest ?? 0, first + UInt64(count) - 1) }
            }
        }
        let storage = UnsafeMutableBufferPointer<Entry>.allocate(capacity: max(filled, 1))
        Self.sort(moving: unsorted.baseAddress!, count: filled, into: storage.baseAddress!, histograms: UnsafePointer(histograms.baseAddress!))
        entries = UnsafeBufferPointer(rebasing: storage[0..<filled])
        self.tombstones = tombstones
        self.highestSequence = highest
        self.byteCount = payloadBytes + filled * MemoryLayout<Entry>.stride
        self.owners = owners
    }

    /// A table of batches held in arrays: their payloads are copied into one buffer it keeps.
    package convenience init(copying batches: [Batch]) throws {
        let buffer = LogReader.Bytes(copying: batches.reduce(into: [UInt8]()) { $0.append(contentsOf: $1.payload) })
        var views: [View] = []
        views.reserveCapacity(batches.count)
        var at = 0
        for b in batches {
            views.append(View(payload: UnsafeRawBufferPointer(rebasing: buffer.buffer[at..<(at + b.payload.count)]),
                              file: b.file, offset: b.offset))
            at += b.payload.count
        }
        try self.init(replaying: views, keeping: [buffer])
    }

    deinit {
        entries.baseAddress.map { UnsafeMutablePointer(mutating: $0).deallocate() }
    }

    // MARK: Lookups

    /// The index of the first entry whose key is `>= key` (`entries.count` if none).
    package func lowerBound(_ key: UnsafeRawBufferPointer) -> Int { firstIndex(above: key, orEqual: true) }

    /// The index of the first entry whose key is `> key` (`entries.count` if none).
    package func upperBound(_ key: UnsafeRawBufferPointer) -> Int { firstIndex(above: key, orEqual: false) }

    /// The index of the first entry whose key is `> key`, or `>= key` when `orEqual`: a binary
    /// search, the 8-byte heads compared first.
    private func firstIndex(above key: UnsafeRawBufferPointer, orEqual: Bool) -> Int {
        let head = KeyWindow.head(key)
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) >> 1
            let e = entries[mid]
            let c = e.head != head ? (e.head < head ? -1 : 1) : ByteComparison.compare(e.keyBytes, key)
            if c < 0 || (c == 0 && !orEqual) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Whether entries `i` and `j` hold the same key.
    @inline(__always)
    package func sameKey(_ i: Int, _ j: Int) -> Bool {
        let a = entries[i], b = entries[j]
        return a.head == b.head && a.keyCount == b.keyCount && ByteComparison.compare(a.keyBytes, b.keyBytes) == 0
    }

    /// The newest version of `key` visible at `sequence`: its entry index, if it has one here.
    package func find(_ key: UnsafeRawBufferPointer, sequence: UInt64) -> Int? {
        var i = lowerBound(key)
        while i < entries.count, ByteComparison.compare(entries[i].keyBytes, key) == 0 {
            if entries[i].sequence <= sequence { return i }
            i += 1
        }
        return nil
    }
}
