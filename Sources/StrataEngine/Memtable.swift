import CStrataSupport
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A range deletion in a memtable, with the sequence number that orders it against puts.
package struct SequencedRangeTombstone: Sendable {
    package var start: [UInt8]
    package var end: [UInt8]
    package var sequence: UInt64

    package func covers(_ key: UnsafeRawBufferPointer) -> Bool {
        ByteComparison.compare(start, key) <= 0 && ByteComparison.compare(end, key) > 0
    }

    package init(start: [UInt8], end: [UInt8], sequence: UInt64) {
        self.start = start
        self.end = end
        self.sequence = sequence
    }
}

/// The result of looking a key up in one layer of the store.
package enum Lookup: Equatable {
    /// The layer has nothing for the key; look in older layers.
    case notFound
    /// The key was deleted here (point or range deletion); older layers do not count.
    case deleted
    case value([UInt8])
}

/// The in-memory, newest layer of the store: every write since the last flush, in key order,
/// all versions kept so that snapshots read consistently while writes go on.
///
/// One writer (the commit leader) applies batches; readers use it concurrently. A memtable is
/// tied to the log file that holds the same writes (`logNumber`); once the memtable is flushed
/// to a segment, that log can go. A memtable that recovery filled also holds the writes of the
/// logs it replayed into it (`replayedLogs`, FORMAT.md 4.5), which go with it.
package final class Memtable: Sendable {
    package let list = ArenaSkipList(memory: .pages)
    /// The log that new writes to this memtable go to (for a memtable recovery sealed, the newest
    /// log it replayed).
    package let logNumber: UInt64
    /// Older logs whose records recovery replayed into this memtable, oldest first; empty for a
    /// memtable that only took writes of this run.
    package let replayedLogs: [UInt64]
    /// Every range tombstone in arrival order, and their index for lookups.
    private let tombstones = Mutex<(all: [SequencedRangeTombstone], index: RangeTombstoneIndex)>(([], RangeTombstoneIndex()))
    private let tombstoneBytes = Atomic<Int>(0)

    package init(logNumber: UInt64, replayedLogs: [UInt64] = []) {
        self.logNumber = logNumber
        self.replayedLogs = replayedLogs
    }

    /// The oldest log holding writes of this memtable: what the manifest's `logNumber` must not
    /// pass until the memtable is flushed.
    package var oldestLogNumber: UInt64 { replayedLogs.first ?? logNumber }

    /// Every log holding writes of this memtable, oldest first: deleted once it is flushed.
    package var logNumbers: [UInt64] { replayedLogs + [logNumber] }

    package var approximateSize: Int { list.memoryUsage + tombstoneBytes.load(ordering: .relaxed) }

    package var isEmpty: Bool { list.first == nil && tombstones.withLock { $0.all.isEmpty } }

    /// Applies the operations of a batch with consecutive sequence numbers from `firstSequence`.
    /// Writer-only. Point writes are inserted in key order, each search starting where the
    /// previous one ended (``ArenaSkipList/insert(key:sequence:kind:value:afterPrevious:)``).
    /// `file` and `offset` name where the operations came from, for errors.
    package func apply(operations: UnsafeRawBufferPointer, count: Int, firstSequence: UInt64, file: String, offset: Int = 0) throws {
        var points: [Point] = []
        points.reserveCapacity(count)
        // The views point into `operations`, which outlives this call's use of them.
        try collect(operations: operations, count: count, firstSequence: firstSequence, file: file, offset: offset, into: &points)
        insertInKeyOrder(&points)
    }

    /// A batch read back from a log, for ``apply(replaying:)``.
    package struct ReplayedBatch {
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

    /// A batch read back from a log as a view into the log's bytes, for
    /// ``apply(replayingViews:)``, which copies nothing but keys and values into the arena.
    package struct ReplayedView {
        /// The log record's payload: first sequence (u64), count (u32), operations. Valid until
        /// `apply(replayingViews:)` returns.
        package let payload: UnsafeRawBufferPointer
        package let file: String
        package let offset: Int

    package init(payload: UnsafeRawBufferPointer, file: String, offset: Int) {
        self.payload = payload
        self.file = file
        self.offset = offset
    }
}

    /// ``apply(replayingViews:)`` for payloads held in arrays: copies them into one buffer first.
    package func apply(replaying batches: [ReplayedBatch]) throws -> UInt64? {
        let total = batches.reduce(0) { $0 + $1.payload.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 8)
        defer { storage.deallocate() }
        var views: [ReplayedView] = []
        views.reserveCapacity(batches.count)
        var at = 0
        for b in batches {
            let region = UnsafeMutableRawBufferPointer(rebasing: storage[at..<(at + b.payload.count)])
            b.payload.withUnsafeBytes { region.copyMemory(from: $0) }
            at += b.payload.count
            views.append(ReplayedView(payload: UnsafeRawBufferPointer(region), file: b.file, offset: b.offset))
        }
        return try apply(replayingViews: views)
    }

    /// Applies batches read back from logs (recovery) all at once: one sort of all their point
    /// writes, then inserts in key order — into an empty memtable (recovery's), appended without a
    /// search at all. Applying them batch by batch would insert each write at a random place of a
    /// growing list, which for a log of a million writes took seconds. Returns the highest
    /// sequence applied, if any. The points are views into the payloads, which outlive the call's
    /// use of them (the arena copies keys and values).
    package func apply(replayingViews batches: [ReplayedView]) throws -> UInt64? {
        var points: [Point] = []
        // Each operation takes at least two bytes: a count beyond that is corrupt (and refused
        // below), not a size to reserve.
        points.reserveCapacity(batches.reduce(0) { total, b in
            b.payload.count >= 12 ? total + min(Int(LittleEndian.uint32(b.payload, at: 8)), b.payload.count) : total
        })
        var highest: UInt64?
        for b in batches {
            guard b.payload.count >= 12 else {
                throw StrataError.corrupted(file: b.file, offset: b.offset, reason: "batch record of \(b.payload.count) bytes")
            }
            let p = b.payload
            let first = LittleEndian.uint64(p, at: 0)
            let count = Int(LittleEndian.uint32(p, at: 8))
            try collect(operations: UnsafeRawBufferPointer(rebasing: p[12...]), count: count, firstSequence: first,
                        file: b.file, offset: b.offset, into: &points)
            if count > 0 { highest = max(highest ?? 0, first + UInt64(count) - 1) }
        }
        if list.first == nil {
            let order = Self.listOrder(points)
            // Into an empty list, in list order: appended without a search. The points and their
            // keys are read in an order unrelated to where they lie: fetch them ahead, each point
            // (both cache lines it may span) long enough before its key's address is read from it
            // that reading it does not stall.
            points.withUnsafeBufferPointer { p in
                order.withUnsafeBufferPointer { o in
                    list.append(count: o.count) { i in
                        if i + 32 < o.count {
                            let ahead = UnsafeRawPointer(p.baseAddress! + o[i + 32].index)
                            strata_prefetch(ahead)
                            strata_prefetch(ahead + (MemoryLayout<Point>.size - 1))
                        }
                        if i + 16 < o.count, let k = p[o[i + 16].index].key.baseAddress { strata_prefetch(k) }
                        let point = p[o[i].index]
                        return (point.key, point.sequence, point.kind.rawValue, point.value)
                    }
                }
            }
        } else {
            insertInKeyOrder(&points)
        }
        return highest
    }

    private struct Point {
        var key: UnsafeRawBufferPointer
        var value: UnsafeRawBufferPointer
        var sequence: UInt64
        var kind: RecordKind
        /// The key's first 8 bytes big-endian (zero-padded, ``window(_:from:)``): orders most pairs
        /// without a memcmp.
        var head: UInt64

        init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sequence: UInt64, kind: RecordKind) {
            self.key = key
            self.value = value
            self.sequence = sequence
            self.kind = kind
            self.head = Memtable.window(key, from: 0)
        }
    }

    /// Appends the point writes of a batch to `points` (as views into `operations`) and records
    /// its range tombstones.
    private func collect(operations: UnsafeRawBufferPointer, count: Int, firstSequence: UInt64, file: String, offset: Int,
                         into points: inout [Point]) throws {
        var seq = firstSequence
        try WriteBatch.forEachOperation(in: operations, count: count, file: file, offset: offset) { op, key, second in
            switch op {
            case .put:
                points.append(Point(key: key, value: second, sequence: seq, kind: .value))
            case .delete:
                points.append(Point(key: key, value: UnsafeRawBufferPointer(start: nil, count: 0), sequence: seq, kind: .tombstone))
            case .deleteRange:
                let t = SequencedRangeTombstone(start: Array(key), end: Array(second), sequence: seq)
                if ByteComparison.compare(t.start, t.end) < 0 {
                    let indexGrowth = tombstones.withLock { state in
                        state.all.append(t)
                        let all = state.all
                        let before = state.index.approximateBytes
                        state.index.add(t, all: all)
                        return state.index.approximateBytes - before
                    }
                    // The tombstone itself, and what the index allocated for it (O(log n) nodes).
                    tombstoneBytes.add(key.count + second.count + 64 + indexGrowth, ordering: .relaxed)
                }
            }
            seq += 1
        }
    }

    /// A point's place in the sort: 8 bytes of its key (big-endian, zero-padded) and its index.
    private struct Ranked {
        var head: UInt64
        var index: Int
    }

    /// The key's bytes `from..<from + 8`, big-endian, zero-padded past its end. For any two keys,
    /// a smaller window means a smaller key (a key that ends inside the window pads with zeros,
    /// and a key that is a prefix of another comes first); equal windows decide nothing.
    @inline(__always)
    private static func window(_ key: UnsafeRawBufferPointer, from: Int) -> UInt64 {
        if key.count >= from + 8 { return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: from, as: UInt64.self)) }
        var h: UInt64 = 0
        for i in from..<(from + 8) { h = h << 8 | UInt64(i < key.count ? key[i] : 0) }
        return h
    }

    /// The indices of `points` in list order (key ascending, then newest first), for a bulk load:
    /// a most-significant-digit radix sort of (window, index) pairs, a byte at a time from the
    /// keys' first 8 bytes; a byte every pair of a range shares costs a count and no move; a
    /// range whose windows are all equal moves on to the keys' next 8 bytes; small ranges are
    /// finished by insertion sort on whole keys. Random keys take one pass over all pairs and a
    /// second within cache-sized ranges; the comparison sort this replaced cost several times more.
    private static func listOrder(_ points: [Point]) -> [Ranked] {
        let n = points.count
        guard n > 0 else { return [] }
        var order = [Ranked](unsafeUninitializedCapacity: n) { buffer, initialized in
            for i in 0..<n { buffer[i] = Ranked(head: points[i].head, index: i) }
            initialized = n
        }
        let scratch = UnsafeMutablePointer<Ranked>.allocate(capacity: n)
        defer { scratch.deallocate() }
        order.withUnsafeMutableBufferPointer { o in
            points.withUnsafeBufferPointer { p in
                radixSort(o.baseAddress!, count: n, scratch: scratch, shift: 56, window: 0, points: p)
            }
        }
        return order
    }

    /// Whether point `x` comes before point `y` in list order.
    @inline(__always)
    private static func precedes(_ x: Ranked, _ y: Ranked, _ points: UnsafeBufferPointer<Point>) -> Bool {
        if x.head != y.head { return x.head < y.head }
        let a = points[x.index], b = points[y.index]
        let c = ByteComparison.compare(a.key, b.key)
        return c != 0 ? c < 0 : a.sequence > b.sequence
    }

    /// Sorts `a[0..<count]`, whose windows at `window` agree above bit `shift + 8`.
    private static func radixSort(_ a: UnsafeMutablePointer<Ranked>, count: Int, scratch: UnsafeMutablePointer<Ranked>,
                                  shift: Int, window: Int, points: UnsafeBufferPointer<Point>) {
        if count <= 32 {
            for i in 1..<max(count, 1) {
                let x = a[i]
                var j = i
                while j > 0 && precedes(x, a[j - 1], points) {
                    a[j] = a[j - 1]
                    j -= 1
                }
                a[j] = x
            }
            return
        }
        var shift = shift
        var window = window
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 256) { counts in
            while true {
                if shift < 0 {
                    // Every window equal: compare the next 8 bytes of the keys, while some key
                    // reaches them (beyond a few windows, whole keys decide).
                    let next = window + 8
                    var longer = false
                    for i in 0..<count where points[a[i].index].key.count > next { longer = true; break }
                    guard longer, next < 64 else {
                        var range = UnsafeMutableBufferPointer(start: a, count: count)
                        range.sort { precedes($0, $1, points) }
                        return
                    }
                    for i in 0..<count { a[i].head = Self.window(points[a[i].index].key, from: next) }
                    window = next
                    shift = 56
                }
                counts.initialize(repeating: 0)
                for i in 0..<count { counts[Int(truncatingIfNeeded: a[i].head >> UInt64(shift)) & 0xFF] += 1 }
                let digit = Int(truncatingIfNeeded: a[0].head >> UInt64(shift)) & 0xFF
                if counts[digit] == count {
                    shift -= 8  // a byte all share
                    continue
                }
                var at = 0
                for d in 0..<256 { (counts[d], at) = (at, at + counts[d]) }
                for i in 0..<count {
                    let r = a[i]
                    let d = Int(truncatingIfNeeded: r.head >> UInt64(shift)) & 0xFF
                    scratch[counts[d]] = r
                    counts[d] += 1
                }
                a.update(from: scratch, count: count)
                // counts[d] is now the end of bucket d.
                var begin = 0
                for d in 0..<256 where counts[d] > begin {
                    radixSort(a + begin, count: counts[d] - begin, scratch: scratch + begin,
                              shift: shift - 8, window: window, points: points)
                    begin = counts[d]
                }
                return
            }
        }
    }

    /// Inserts `points` in (key, newest first) order, each insert starting after the previous.
    private func insertInKeyOrder(_ points: inout [Point]) {
        func precedes(_ a: Point, _ b: Point) -> Bool {
            if a.head != b.head { return a.head < b.head }
            let c = ByteComparison.compare(a.key, b.key)
            return c != 0 ? c < 0 : a.sequence > b.sequence
        }
        // A batch of one series' appends comes in order already: one pass finds it, no sort.
        if points.count > 1, !zip(points, points.dropFirst()).allSatisfy({ precedes($0, $1) }) {
            points.sort(by: precedes)
        }
        for (i, p) in points.enumerated() {
            list.insert(key: p.key, sequence: p.sequence, kind: p.kind.rawValue, value: p.value, afterPrevious: i > 0)
        }
    }

    /// The range tombstones, indexed for lookups at any sequence.
    package var rangeTombstoneIndex: RangeTombstoneIndex { tombstones.withLock { $0.index } }

    package var allRangeTombstones: [SequencedRangeTombstone] { tombstones.withLock { $0.all } }

    /// The newest version of `key` visible at `sequence`.
    package func get(_ key: UnsafeRawBufferPointer, sequence: UInt64) -> Lookup {
        var pointSequence: UInt64?
        var result = Lookup.notFound
        if let n = list.seek(key, sequence: sequence), ByteComparison.compare(ArenaSkipList.key(n), key) == 0 {
            pointSequence = ArenaSkipList.sequence(n)
            result = ArenaSkipList.kind(n) == RecordKind.tombstone.rawValue ? .deleted : .value(Array(ArenaSkipList.value(n)))
        }
        guard tombstoneBytes.load(ordering: .relaxed) > 0 else { return result }
        let deletedAt = tombstones.withLock { $0.index.newest(covering: key, at: sequence).sequence }
        if let d = deletedAt, d > (pointSequence ?? 0) || pointSequence == nil { return .deleted }
        return result
    }
}
