/// One decoded (decompressed, checksum-verified) block, owning its bytes.
///
/// Invariants, established by `init` and relied on by ``BlockCursor``: `restartCount >= 1`,
/// `restartsOffset + 4 * restartCount + 4 == bytes.count`, every restart offset is
/// `< restartsOffset`, increasing, and the offset of an entry that stores its key whole, and the
/// entries, decoded one after another from 0, end exactly at `restartsOffset` (FORMAT.md 5.3).
/// Entries are still bounds-checked as they are decoded.
@_spi(Layers) public final class Block: @unchecked Sendable {
    // Owned, immutable after init; freed in deinit. Never handed out beyond a cursor's lifetime.
    @usableFromInline package let bytes: UnsafeRawBufferPointer
    @usableFromInline package let restartsOffset: Int
    package let restartCount: Int
    /// The entries (records) of the block and how many are tombstones, counted when it was loaded.
    package let recordCount: Int
    package let tombstoneCount: Int
    /// `R` when restart `j` is entry `j × R` for every `j` (as the writer lays blocks out), so that
    /// `j × R` entries come before restart `j`; 0 when the block is not laid out so.
    package let restartStride: Int
    /// Where the block came from, for error messages.
    package let file: String
    package let fileOffset: Int

    /// Takes ownership of `storage` (allocated with `UnsafeMutableRawBufferPointer.allocate`).
    package init(adopting storage: UnsafeMutableRawBufferPointer, file: String, fileOffset: Int) throws {
        self.bytes = UnsafeRawBufferPointer(storage)
        self.file = file
        self.fileOffset = fileOffset
        let raw = UnsafeRawBufferPointer(storage)
        guard raw.count >= 4 else {
            storage.deallocate()
            throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block of \(raw.count) bytes is too short")
        }
        let n = Int(LittleEndian.uint32(raw, at: raw.count - 4))
        guard n >= 1, n <= (raw.count - 4) / 4 else {
            storage.deallocate()
            throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block restart count \(n) impossible for \(raw.count) bytes")
        }
        let start = raw.count - 4 - 4 * n
        var previous = -1
        for i in 0..<n {
            let r = Int(LittleEndian.uint32(raw, at: start + 4 * i))
            guard r > previous, r < start || (r == 0 && start == 0), i > 0 || r == 0 else {
                storage.deallocate()
                throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block restart \(i) at \(r) out of order or past the entries")
            }
            previous = r
        }
        var shape = Shape()
        if let reason = Self.entryStructureFault(raw, restartsOffset: start, restartCount: n, shape: &shape) {
            storage.deallocate()
            throw StrataError.corrupted(file: file, offset: fileOffset, reason: reason)
        }
        self.restartsOffset = start
        self.restartCount = n
        self.recordCount = shape.records
        self.tombstoneCount = shape.tombstones
        self.restartStride = shape.stride ?? 0
    }

    /// Walks the entry headers from offset 0 (FORMAT.md 5.3): every entry's three varints and
    /// kind are present and the kind is known, `shared` is no longer than the previous key, the
    /// key suffix and value end before the restart array, the entries end exactly at it, and every
    /// restart offset is the offset of an entry (an entry boundary) whose `shared` is 0. A restart
    /// inside an entry would let a seek decode bytes of a key or value as an entry. Nil when the
    /// structure is sound, else the reason.
    private static func entryStructureFault(_ raw: UnsafeRawBufferPointer, restartsOffset limit: Int,
                                            restartCount n: Int, shape: inout Shape) -> String? {
        var p = 0
        var nextRestart = 0
        var nextRestartOffset = 0  // restart 0 is 0, checked above
        var previousKeyLength = 0
        while p < limit {
            let entry = p
            let atRestart = nextRestart < n && nextRestartOffset == entry
            if nextRestart < n && nextRestartOffset < entry {
                return "block restart \(nextRestart) at \(nextRestartOffset) is not an entry boundary (the entry before it ends at \(entry))"
            }
            let shared: Int, unshared: Int, valueLength: Int
            if limit - p > 3 && (raw[p] | raw[p + 1] | raw[p + 2]) < 0x80 {
                // The common case, three one-byte varints: this walk runs on every block loaded.
                shared = Int(raw[p])
                unshared = Int(raw[p + 1])
                valueLength = Int(raw[p + 2])
                p += 3
            } else {
                guard let s = Varint.readLength(raw, at: &p, limit: limit),
                      let u = Varint.readLength(raw, at: &p, limit: limit),
                      let v = Varint.readLength(raw, at: &p, limit: limit),
                      p < limit
                else { return "block entry at \(entry): truncated entry header" }
                (shared, unshared, valueLength) = (s, u, v)
            }
            guard RecordKind(rawValue: raw[p]) != nil else { return "block entry at \(entry): unknown record kind \(raw[p])" }
            p += 1
            guard shared <= previousKeyLength, unshared <= limit - p, valueLength <= limit - p - unshared else {
                return "block entry at \(entry): lengths run past the block (shared \(shared), unshared \(unshared), value \(valueLength))"
            }
            if atRestart {
                guard shared == 0 else { return "block entry at \(entry): restart entry shares \(shared) bytes" }
                if nextRestart == 1 { shape.stride = shape.records }
                if let r = shape.stride, r * nextRestart != shape.records { shape.stride = nil }
                nextRestart += 1
                if nextRestart < n { nextRestartOffset = Int(LittleEndian.uint32(raw, at: limit + 4 * nextRestart)) }
            }
            previousKeyLength = shared + unshared
            shape.records += 1
            if raw[p - 1] == RecordKind.tombstone.rawValue { shape.tombstones += 1 }
            p += unshared + valueLength
        }
        if nextRestart < n && limit > 0 {
            return "block restart \(nextRestart) at \(nextRestartOffset) is not an entry boundary (the entries end at \(limit))"
        }
        return nil
    }

    /// What ``entryStructureFault(_:restartsOffset:restartCount:shape:)`` counts on its walk.
    private struct Shape {
        var records = 0
        var tombstones = 0
        /// The entries before restart 1, while every restart so far has been a multiple of it.
        var stride: Int?
    }

    /// A block built in memory (tests, the memtable flush path).
    package convenience init(copying data: [UInt8], file: String = "<memory>", fileOffset: Int = 0) throws {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 8)
        let slice = UnsafeMutableRawBufferPointer(rebasing: storage[0..<data.count])
        data.withUnsafeBytes { slice.copyMemory(from: $0) }
        try self.init(adopting: slice, file: file, fileOffset: fileOffset)
    }

    deinit { UnsafeMutableRawBufferPointer(mutating: bytes).deallocate() }

    package func restart(_ i: Int) -> Int {
        Int(LittleEndian.uint32(bytes, at: restartsOffset + 4 * i))
    }

    /// For a block whose every entry is a restart point (index blocks): the kind and value of the
    /// first entry whose key is `>= target`, found by binary search over the restart keys in place,
    /// without a cursor. `.notFound` when every key is smaller; nil when the block is not laid
    /// out that way (the caller then uses a ``BlockCursor``).
    package enum WholeKeyLookup { case found(RecordKind, UnsafeRawBufferPointer), notFound }

    package func lookupWholeKeys(_ target: UnsafeRawBufferPointer) throws -> WholeKeyLookup? {
        if restartsOffset == 0 { return .notFound }  // an empty block
        let n = restartCount
        // Restart interval 1 means entries end exactly where the next restart begins; the check
        // below confirms it for the entries the search touches.
        var lo = 0, hi = n  // first restart whose key >= target
        while lo < hi {
            let mid = (lo + hi) / 2
            guard let (key, _, _, _) = try wholeEntry(mid) else { return nil }
            if ByteComparison.compare(key, target) < 0 { lo = mid + 1 } else { hi = mid }
        }
        if lo == n {
            // Every restart key is smaller; with interval 1 that is every key.
            guard let (_, _, _, end) = try wholeEntry(n - 1), end == restartsOffset else { return nil }
            return .notFound
        }
        guard let (_, kind, value, end) = try wholeEntry(lo),
              lo + 1 == n ? end == restartsOffset : end == restart(lo + 1) else { return nil }
        if lo > 0 {
            guard let (_, _, _, previousEnd) = try wholeEntry(lo - 1), previousEnd == restart(lo) else { return nil }
        }
        return .found(kind, value)
    }

    /// The key, kind, value and end offset of the entry at restart `i`, read in place; nil if the
    /// entry does not store its key whole; throws if it is malformed.
    @inline(__always)
    private func wholeEntry(_ i: Int) throws -> (UnsafeRawBufferPointer, RecordKind, UnsafeRawBufferPointer, Int)? {
        let offset = restart(i)
        var p = offset
        guard let shared = Varint.readLength(bytes, at: &p, limit: restartsOffset),
              let unshared = Varint.readLength(bytes, at: &p, limit: restartsOffset),
              let vlen = Varint.readLength(bytes, at: &p, limit: restartsOffset),
              p < restartsOffset, unshared <= restartsOffset - p - 1, vlen <= restartsOffset - p - 1 - unshared,
              let kind = RecordKind(rawValue: bytes[p])
        else {
            throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(offset): malformed")
        }
        guard shared == 0 else { return nil }
        let k = p + 1
        return (UnsafeRawBufferPointer(rebasing: bytes[k..<(k + unshared)]), kind,
                UnsafeRawBufferPointer(rebasing: bytes[(k + unshared)..<(k + unshared + vlen)]), k + unshared + vlen)
    }

    /// The record stored under exactly `target`, found without materializing any key: a binary
    /// search over the restart keys in place, then a walk that keeps only how many leading bytes
    /// of `target` the current key matches (`matched`). For an entry sharing `shared` bytes with
    /// the previous key (which is smaller than `target` and matches it for `matched` bytes):
    /// `shared > matched` means the new key still differs from `target` where the previous one
    /// did, so it is smaller too; otherwise only its suffix needs comparing with `target[shared...]`.
    package func find(_ target: UnsafeRawBufferPointer) throws -> (RecordKind, UnsafeRawBufferPointer)? {
        if restartsOffset == 0 { return nil }
        var lo = 0, hi = restartCount - 1  // the last restart whose key is < target (or 0)
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            guard let (key, _, _, _) = try wholeEntry(mid) else {
                throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(restart(mid)): restart key not whole")
            }
            if ByteComparison.compare(key, target) < 0 { lo = mid } else { hi = mid - 1 }
        }
        var p = restart(lo)
        var matched = 0
        var previousLength = 0
        let limit = restartsOffset
        while p < limit {
            let entry = p
            guard let shared = Varint.readLength(bytes, at: &p, limit: limit),
                  let unshared = Varint.readLength(bytes, at: &p, limit: limit),
                  let vlen = Varint.readLength(bytes, at: &p, limit: limit),
                  p < limit, let kind = RecordKind(rawValue: bytes[p]),
                  shared <= previousLength, p + 1 + unshared + vlen <= limit
            else {
                throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(entry): malformed")
            }
            let suffixStart = p + 1
            p = suffixStart + unshared + vlen
            previousLength = shared + unshared
            if shared > matched { continue }  // smaller than target, like the previous key
            // Compare the suffix with target[shared...].
            var l = 0
            while l < unshared && shared + l < target.count && bytes[suffixStart + l] == target[shared + l] { l += 1 }
            if l == unshared && shared + l == target.count {
                let v = suffixStart + unshared
                return (kind, UnsafeRawBufferPointer(rebasing: bytes[v..<(v + vlen)]))
            }
            let smaller = l == unshared || (shared + l < target.count && bytes[suffixStart + l] < target[shared + l])
            if !smaller { return nil }  // past target: keys increase, so it is not here
            matched = shared + l
        }
        return nil
    }

    /// The number of bytes the block occupies in memory (for the cache's budget).
    package var memoryFootprint: Int { bytes.count + 96 }
}

/// Walks a ``Block`` forward or backward, or seeks in it by key.
///
/// The cursor keeps the current key in a buffer of its own; `value` is a view of the block's
/// bytes, valid while the cursor (which holds the block) lives: a block's bytes never move or
/// change while the block exists. `key`, `kind` and `value` are stored, so that a cursor kept in a
/// class (``SegmentCursor``) is read field by field, without copying the whole cursor (its block
/// and three arrays retained and released) on every record.
@_spi(Layers) public struct BlockCursor {
    /// The block walked; changed only by ``reset(_:)``.
    @usableFromInline package private(set) var block: Block
    /// Offset of the current entry; `nil` when the cursor is not on an entry.
    /// (The cursor's fields are settable in the package only so that its per-record steps,
    /// `next()` and `decode(at:)`, can be inlined into the segment cursor of StrataFiles.)
    @usableFromInline package var current: Int?
    @usableFromInline var nextOffset = 0
    @usableFromInline package var key: [UInt8] = []
    @usableFromInline package var kind: RecordKind = .value
    /// The current value, a view of `block.bytes`.
    @usableFromInline package var value = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The entries of one restart interval as `previous()` decoded them, with their keys
    /// concatenated in `backKeys`: stepping backward through the interval then decodes each entry
    /// once, instead of decoding forward from the restart point again at every step. Entries are
    /// consecutive; `backIndex` is the one the cursor was last moved back to. The block never
    /// changes, so an entry stays true; a lookup checks offsets before it uses one.
    private var backEntries: [BackEntry] = []
    private var backKeys: [UInt8] = []
    private var backIndex = 0

    private struct BackEntry {
        var offset: Int
        var next: Int
        var keyEnd: Int
        var kind: RecordKind
        var value: UnsafeRawBufferPointer
    }

    package init(_ block: Block) {
        self.block = block
        key.reserveCapacity(64)
    }

    /// Points the cursor at `block`, keeping its buffers (the key and the entries `previous()`
    /// remembers) for it; it must be positioned again before use. A segment cursor walking from
    /// block to block so allocates nothing per block.
    package mutating func reset(_ block: Block) {
        self.block = block
        current = nil
        nextOffset = 0
        key.removeAll(keepingCapacity: true)
        backEntries.removeAll(keepingCapacity: true)
        backKeys.removeAll(keepingCapacity: true)
        backIndex = 0
    }

    @inlinable package var isValid: Bool { current != nil }

    package var valueBytes: [UInt8] { Array(value) }

    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try key.withUnsafeBytes(body)
    }

    @usableFromInline func corrupt(_ offset: Int, _ reason: String) -> StrataError {
        .corrupted(file: block.file, offset: block.fileOffset, reason: "block entry at \(offset): \(reason)")
    }

    /// Decodes the entry at `offset`, whose predecessor's key is in `key`.
    @inlinable @inline(__always)
    mutating func decode(at offset: Int) throws {
        let b = block.bytes
        let limit = block.restartsOffset
        var p = offset
        guard let shared = Varint.readLength(b, at: &p, limit: limit),
              let unshared = Varint.readLength(b, at: &p, limit: limit),
              let vlen = Varint.readLength(b, at: &p, limit: limit),
              p < limit
        else { throw corrupt(offset, "truncated entry header") }
        guard let k = RecordKind(rawValue: b[p]) else { throw corrupt(offset, "unknown record kind \(b[p])") }
        p += 1
        guard shared <= key.count, p + unshared + vlen <= limit else {
            throw corrupt(offset, "lengths run past the block (shared \(shared), unshared \(unshared), value \(vlen))")
        }
        let suffix = UnsafeRawBufferPointer(rebasing: b[p..<(p + unshared)])
        if key.count == shared + unshared {
            // Same length (common for fixed-width keys): overwrite the differing suffix in place.
            key.withUnsafeMutableBytes { k in
                if unshared > 0 { (k.baseAddress! + shared).copyMemory(from: suffix.baseAddress!, byteCount: unshared) }
            }
        } else {
            // removeLast, not removeSubrange: it only shortens the count (the bytes are trivial).
            if key.count > shared { key.removeLast(key.count - shared) }
            key.append(contentsOf: suffix)
        }
        p += unshared
        kind = k
        value = UnsafeRawBufferPointer(rebasing: b[p..<(p + vlen)])
        current = offset
        nextOffset = p + vlen
    }

    package mutating func seekToFirst() throws {
        key.removeAll(keepingCapacity: true)
        if block.restartsOffset == 0 { current = nil; return }
        try decode(at: 0)
    }

    @inlinable @inline(__always)
    package mutating func next() throws {
        guard current != nil else { return }
        if nextOffset >= block.restartsOffset { current = nil; return }
        try decode(at: nextOffset)
    }

    /// Positions at restart `i` (whose key is stored whole).
    private mutating func seekToRestart(_ i: Int) throws {
        key.removeAll(keepingCapacity: true)
        try decode(at: block.restart(i))  // with an empty key, decode rejects shared > 0
    }

    /// The key stored whole at restart `i`, read in place.
    @inline(__always)
    private func restartKey(_ i: Int) throws -> UnsafeRawBufferPointer {
        let b = block.bytes
        let limit = block.restartsOffset
        let offset = block.restart(i)
        var p = offset
        guard let shared = Varint.readLength(b, at: &p, limit: limit),
              let unshared = Varint.readLength(b, at: &p, limit: limit),
              Varint.readLength(b, at: &p, limit: limit) != nil,
              shared == 0, p + 1 + unshared <= limit
        else { throw corrupt(offset, "malformed restart entry") }
        return UnsafeRawBufferPointer(rebasing: b[(p + 1)..<(p + 1 + unshared)])
    }

    /// Positions at the first entry whose key is `>= target`; invalid if there is none.
    package mutating func seek(_ target: UnsafeRawBufferPointer) throws {
        if block.restartsOffset == 0 { current = nil; return }
        // Binary search for the last restart whose key is < target, comparing keys in place.
        var lo = 0, hi = block.restartCount - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if ByteComparison.compare(try restartKey(mid), target) < 0 {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        try seekToRestart(lo)
        while current != nil, key.withUnsafeBytes({ ByteComparison.compare($0, target) }) < 0 {
            try next()
        }
    }

    package mutating func seek(_ target: [UInt8]) throws {
        try target.withUnsafeBytes { (t) in try seek(t) }
    }

    /// Positions at the last entry, remembering the entries of its restart interval on the way,
    /// so that the `previous()` steps after it decode nothing again.
    package mutating func seekToLast() throws {
        if block.restartsOffset == 0 { current = nil; return }
        try seekToRestart(block.restartCount - 1)
        forgetBackEntries()
        rememberCurrent()
        while nextOffset < block.restartsOffset {
            try decode(at: nextOffset)
            rememberCurrent()
        }
        backIndex = backEntries.count - 1
    }

    /// Moves to the entry before the current one; invalid before the first.
    package mutating func previous() throws {
        guard let here = current else { return }
        if here == 0 { current = nil; return }
        if backIndex > 0 && backIndex <= backEntries.count && backEntries[backIndex - 1].next == here {
            restoreBackEntry(backIndex - 1)
            return
        }
        // The last restart strictly before `here`, then forward to the entry before `here`,
        // remembering every entry on the way.
        var lo = 0, hi = block.restartCount - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if block.restart(mid) < here { lo = mid } else { hi = mid - 1 }
        }
        try seekToRestart(lo)
        forgetBackEntries()
        rememberCurrent()
        while nextOffset < here {
            try decode(at: nextOffset)
            rememberCurrent()
        }
        guard current != nil, nextOffset == here else { throw corrupt(here, "entry boundaries do not line up") }
        backIndex = backEntries.count - 1
    }

    private mutating func forgetBackEntries() {
        backEntries.removeAll(keepingCapacity: true)
        backKeys.removeAll(keepingCapacity: true)
    }

    private mutating func rememberCurrent() {
        guard let offset = current else { return }
        if backEntries.isEmpty && backEntries.capacity < 16 {
            // A restart interval's worth at once (the writer's interval is 16), not regrown.
            backEntries.reserveCapacity(16)
            backKeys.reserveCapacity(16 * max(key.count, 16))
        }
        key.withUnsafeBytes { backKeys.append(contentsOf: $0) }
        backEntries.append(BackEntry(offset: offset, next: nextOffset, keyEnd: backKeys.count, kind: kind,
                                     value: value))
    }

    private mutating func restoreBackEntry(_ i: Int) {
        let e = backEntries[i]
        let keyStart = i == 0 ? 0 : backEntries[i - 1].keyEnd
        if key.count == e.keyEnd - keyStart {
            // Same length (common for fixed-width keys): copy over the key in place.
            backKeys.withUnsafeBytes { all in
                let saved = UnsafeRawBufferPointer(rebasing: all[keyStart..<e.keyEnd])
                key.withUnsafeMutableBytes { $0.copyMemory(from: saved) }
            }
        } else {
            key.removeAll(keepingCapacity: true)
            key.append(contentsOf: backKeys[keyStart..<e.keyEnd])
        }
        kind = e.kind
        value = e.value
        current = e.offset
        nextOffset = e.next
        backIndex = i
    }

    /// Positions at the last entry whose key is `<= target`; invalid if there is none.
    ///
    /// Decodes forward from the last restart whose key is `<= target`, remembering the entries as
    /// `previous()` does, so that stepping backward from the result decodes nothing again.
    package mutating func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        if block.restartsOffset == 0 { current = nil; return }
        var lo = 0, hi = block.restartCount - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if ByteComparison.compare(try restartKey(mid), target) <= 0 {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        try seekToRestart(lo)
        forgetBackEntries()
        // Only restart 0 can be above target (the search keeps a restart `<= target` otherwise).
        if key.withUnsafeBytes({ ByteComparison.compare($0, target) }) > 0 { current = nil; return }
        rememberCurrent()
        while nextOffset < block.restartsOffset {
            try decode(at: nextOffset)
            if key.withUnsafeBytes({ ByteComparison.compare($0, target) }) > 0 {
                restoreBackEntry(backEntries.count - 1)
                return
            }
            rememberCurrent()
        }
        backIndex = backEntries.count - 1
    }
}
