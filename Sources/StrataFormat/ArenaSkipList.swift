import CStrataSupport

/// A skiplist of `(key, sequence) → (kind, value)` entries stored in an arena, for the memtable.
///
/// Order: key ascending (bytewise), then sequence descending, so the newest version of a key
/// comes first. One writer at a time inserts (the engine's commit leader); any number of readers
/// walk the list concurrently without locks.
///
/// Invariants:
/// - Nodes live in arena chunks that are never moved or freed before the list is deinitialized;
///   a reader holding the list (a strong reference) may follow any pointer it loaded.
/// - A node is fully written (key, value, its own next pointers) before it is published by a
///   release store into its predecessor's next pointer; readers load next pointers with acquire.
/// - Node layout (8-byte aligned): `sequence:u64 | keyLength:u32 | valueLength:u32 | kind:u8 |
///   height:u8 | pad:6 | next:uintptr × height | key | value`.
@_spi(Layers) public final class ArenaSkipList: @unchecked Sendable {
    package static let maxHeight = 12
    @usableFromInline static let headerSize = 24

    /// Every chunk taken from `memory`, with its size.
    @exclusivity(unchecked) private var chunks: [(start: UnsafeMutableRawPointer, size: Int)] = []
    @exclusivity(unchecked) private var cursor: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var remaining = 0
    private let memory: ArenaMemory
    private let head: UnsafeMutableRawPointer
    // Written by the writer with release, read by readers with acquire.
    private let heightCell: UnsafeMutablePointer<UInt64>
    private let usageCell: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var random: UInt64 = 0x2545_F491_4F6C_DD1D
    @exclusivity(unchecked) private var entryCount = 0
    /// Scratch for `insert` (writer-only): the predecessor at each level. Between writes it is
    /// the search path of `lastLinked`: at each level, the last node of that level at or before it.
    private let preds: UnsafeMutablePointer<UnsafeMutableRawPointer>
    /// The node the writer linked last (nil before the first).
    @exclusivity(unchecked) private var lastLinked: Node?

    /// An empty list whose nodes live in chunks of `memory`.
    package init(memory: ArenaMemory = .heap) {
        self.memory = memory
        heightCell = .allocate(capacity: 1)
        heightCell.initialize(to: 1)
        usageCell = .allocate(capacity: 1)
        usageCell.initialize(to: 0)
        head = UnsafeMutableRawPointer.allocate(byteCount: Self.headerSize + 8 * Self.maxHeight, alignment: 8)
        head.initializeMemory(as: UInt8.self, repeating: 0, count: Self.headerSize + 8 * Self.maxHeight)
        head.storeBytes(of: UInt8(Self.maxHeight), toByteOffset: 17, as: UInt8.self)
        preds = .allocate(capacity: Self.maxHeight)
        preds.initialize(repeating: head, count: Self.maxHeight)
    }

    deinit {
        for c in chunks { memory.deallocate(c.start, c.size) }
        head.deallocate()
        preds.deallocate()
        heightCell.deallocate()
        usageCell.deallocate()
    }

    /// Bytes of arena in use (keys, values and node overhead); readable from any thread.
    package var memoryUsage: Int { Int(strata_atomic_load_u64(usageCell)) }

    /// Number of entries; writer-side only.
    package var count: Int { entryCount }

    // MARK: Node access

    @usableFromInline package typealias Node = UnsafeMutableRawPointer

    @inlinable @inline(__always) package static func sequence(_ n: Node) -> UInt64 { n.load(as: UInt64.self) }
    @inlinable @inline(__always) package static func kind(_ n: Node) -> UInt8 { n.load(fromByteOffset: 16, as: UInt8.self) }
    @inlinable @inline(__always) static func height(_ n: Node) -> Int { Int(n.load(fromByteOffset: 17, as: UInt8.self)) }

    @inlinable @inline(__always) package static func key(_ n: Node) -> UnsafeRawBufferPointer {
        let kl = Int(n.load(fromByteOffset: 8, as: UInt32.self))
        return UnsafeRawBufferPointer(start: n + headerSize + 8 * height(n), count: kl)
    }

    @inlinable @inline(__always) package static func value(_ n: Node) -> UnsafeRawBufferPointer {
        let kl = Int(n.load(fromByteOffset: 8, as: UInt32.self))
        let vl = Int(n.load(fromByteOffset: 12, as: UInt32.self))
        return UnsafeRawBufferPointer(start: n + headerSize + 8 * height(n) + kl, count: vl)
    }

    @inlinable @inline(__always) static func nextCell(_ n: Node, _ level: Int) -> UnsafeMutablePointer<UInt> {
        (n + headerSize + 8 * level).assumingMemoryBound(to: UInt.self)
    }

    @inlinable @inline(__always) package static func next(_ n: Node, _ level: Int) -> Node? {
        UnsafeMutableRawPointer(bitPattern: strata_atomic_load_acquire(nextCell(n, level)))
    }

    // MARK: Ordering

    /// Compares node `n` with `(key, sequence)` in list order: negative when `n` comes first.
    @inline(__always)
    private static func compare(_ n: Node, _ key: UnsafeRawBufferPointer, _ sequence: UInt64) -> Int {
        let c = ByteComparison.compare(Self.key(n), key)
        if c != 0 { return c }
        let s = Self.sequence(n)
        return s > sequence ? -1 : (s < sequence ? 1 : 0)
    }

    private var currentHeight: Int { Int(strata_atomic_load_u64(heightCell)) }

    // MARK: Writer

    private func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        let rounded = (size + 7) & ~7
        if rounded > remaining {
            let n = max(memory.chunkSize, rounded)
            let c = memory.allocate(n)
            chunks.append((c, n))
            cursor = c
            remaining = n
        }
        let p = cursor!
        cursor = p + rounded
        remaining -= rounded
        return p
    }

    private func randomHeight() -> Int {
        var h = 1
        while h < Self.maxHeight {
            random ^= random << 13; random ^= random >> 7; random ^= random << 17
            if random & 3 != 0 { break }
            h += 1
        }
        return h
    }

    /// Inserts an entry. Only one thread may call this at a time; `(key, sequence)` must be new.
    ///
    /// An entry that falls right after the entry linked last (between it and its successor, as the
    /// next event of a series or a key past the list's last node does) is linked there with no
    /// search: two comparisons. Otherwise, with `afterPrevious`, the caller promises that
    /// `(key, sequence)` comes after the entry it inserted last (a batch inserted in order): each
    /// level's search then starts from the previous insert's predecessor at that level when it lies
    /// further along than the level above got, which saves most of the walk for nearby keys.
    package func insert(key: UnsafeRawBufferPointer, sequence: UInt64, kind: UInt8, value: UnsafeRawBufferPointer,
                afterPrevious: Bool = false) {
        // `preds` is the search path of `last`: at every level, its successor comes at or after
        // `last`'s successor at level 0, so for an entry between the two it is the entry's too.
        if let last = lastLinked, Self.compare(last, key, sequence) < 0,
           Self.next(last, 0).map({ Self.compare($0, key, sequence) > 0 }) ?? true {
            link(key: key, sequence: sequence, kind: kind, value: value)
            return
        }
        var x = head
        var level = currentHeight - 1
        while level >= 0 {
            // preds[level] still precedes the new entry (it preceded the previous one, which
            // precedes this one); start from it when it is past x.
            if afterPrevious, preds[level] != head, x == head || Self.compare(x, Self.key(preds[level]), Self.sequence(preds[level])) < 0 {
                x = preds[level]
            }
            while let n = Self.next(x, level), Self.compare(n, key, sequence) < 0 { x = n }
            preds[level] = x
            level -= 1
        }
        for i in max(currentHeight, 0)..<Self.maxHeight { preds[i] = head }
        link(key: key, sequence: sequence, kind: kind, value: value)
    }

    /// Copies `bytes` to `target`: a short key or value (up to 32 bytes, the common case) inline,
    /// where a call to `memmove` per key and per value cost more than the copy.
    @inline(__always)
    private static func copy(_ bytes: UnsafeRawBufferPointer, to target: UnsafeMutableRawPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        let n = bytes.count
        if n < 8 {
            if n >= 4 {
                // Two words of four, overlapping when n < 8.
                target.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
                target.storeBytes(of: source.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self), toByteOffset: n - 4, as: UInt32.self)
            } else {
                for i in 0..<n { target.storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self) }
            }
            return
        }
        guard n <= 32 else {
            target.copyMemory(from: source, byteCount: n)
            return
        }
        var i = 0
        while i + 8 <= n {
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: i, as: UInt64.self), toByteOffset: i, as: UInt64.self)
            i += 8
        }
        if i < n {
            // The last word overlaps the one before it.
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self), toByteOffset: n - 8, as: UInt64.self)
        }
    }

    /// Writes a node and publishes it after `preds[level]` at each of its levels; `preds` then
    /// holds the node at those levels.
    @inline(__always)
    private func link(key: UnsafeRawBufferPointer, sequence: UInt64, kind: UInt8, value: UnsafeRawBufferPointer) {
        let h = randomHeight()
        let size = Self.headerSize + 8 * h + key.count + value.count
        let node = allocate(size)
        node.storeBytes(of: sequence, as: UInt64.self)
        node.storeBytes(of: UInt32(key.count), toByteOffset: 8, as: UInt32.self)
        node.storeBytes(of: UInt32(value.count), toByteOffset: 12, as: UInt32.self)
        node.storeBytes(of: kind, toByteOffset: 16, as: UInt8.self)
        node.storeBytes(of: UInt8(h), toByteOffset: 17, as: UInt8.self)
        let body = node + Self.headerSize + 8 * h
        Self.copy(key, to: body)
        Self.copy(value, to: body + key.count)
        if h > currentHeight {
            // Levels above the old height have `head` as predecessor (preds was reset to head).
            strata_atomic_store_u64(heightCell, UInt64(h))
        }
        for i in 0..<h {
            Self.nextCell(node, i).pointee = strata_atomic_load_acquire(Self.nextCell(preds[i], i))
            strata_atomic_store_release(Self.nextCell(preds[i], i), UInt(bitPattern: node))
            preds[i] = node  // the new node precedes whatever comes after it
        }
        lastLinked = node
        entryCount += 1
        strata_atomic_store_u64(usageCell, strata_atomic_load_u64(usageCell) + UInt64(size))
    }

    // MARK: Readers

    /// The first node at or after `(key, sequence)` in list order; with `sequence` = the snapshot,
    /// the newest version of `key` visible to it, if there is one.
    package func seek(_ key: UnsafeRawBufferPointer, sequence: UInt64) -> Node? {
        var x = head
        var level = currentHeight - 1
        while true {
            let n = Self.next(x, level)
            if let n, Self.compare(n, key, sequence) < 0 {
                x = n
            } else if level == 0 {
                return n
            } else {
                level -= 1
            }
        }
    }

    /// The first node.
    package var first: Node? { Self.next(head, 0) }

    /// The last node whose key is strictly less than `key` (any version); nil if none.
    package func lastBefore(_ key: UnsafeRawBufferPointer) -> Node? {
        var x = head
        var level = currentHeight - 1
        while true {
            let n = Self.next(x, level)
            if let n, ByteComparison.compare(Self.key(n), key) < 0 {
                x = n
            } else if level == 0 {
                return x == head ? nil : x
            } else {
                level -= 1
            }
        }
    }

    /// The last node in the list.
    package var last: Node? {
        var x = head
        var level = currentHeight - 1
        while true {
            if let n = Self.next(x, level) {
                x = n
            } else if level == 0 {
                return x == head ? nil : x
            } else {
                level -= 1
            }
        }
    }
}
