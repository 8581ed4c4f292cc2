/// The range tombstones of a memtable, indexed so that "the newest tombstone visible at sequence
/// `S` that covers key `k`" costs O(log² n) in their number, and O(1) for the next key of a scan
/// that stays in the same stretch of key space (``Probe``).
///
/// Tombstones arrive in sequence order (the writer applies batches in order), so the tombstones a
/// snapshot sees are a prefix of the arrival order. They are kept as a binary counter of
/// ``Block``s: blocks of 1, 2, 4 … consecutive tombstones, oldest (largest) first, two blocks of
/// the same size merged into one as the next arrives (amortized O(log n) merge work per
/// tombstone). Each block holds its tombstones *fragmented*: disjoint key intervals in key order,
/// each with the newest sequence of the block's tombstones that cover it; every block keeps the
/// two halves it was merged from, so a snapshot that sees only part of a block descends into them.
/// A tombstone that arrives out of sequence order (never from the writer; a damaged log could
/// replay one) rebuilds the counter from all tombstones sorted by sequence.
///
/// Immutable and `Sendable`: the memtable swaps in a new value under its lock; readers query a
/// copy (the roots, at most 64 references).
struct RangeTombstoneIndex: Sendable {
    /// Oldest first; sizes strictly decreasing powers of two.
    private(set) var roots: [Block] = []

    var isEmpty: Bool { roots.isEmpty }

    /// Adds a tombstone whose sequence is not lower than any already added, else rebuilds from `all`
    /// (every tombstone, this one included).
    mutating func add(_ t: SequencedRangeTombstone, all: [SequencedRangeTombstone]) {
        if let last = roots.last, last.highest > t.sequence {
            roots = []
            // A stable sort: tombstones of equal sequence keep their order.
            let sorted = all.enumerated().sorted { ($0.element.sequence, $0.offset) < ($1.element.sequence, $1.offset) }
            for (_, s) in sorted { append(s) }
        } else {
            append(t)
        }
    }

    private mutating func append(_ t: SequencedRangeTombstone) {
        var block = Block(t)
        while let last = roots.last, last.count == block.count {
            roots.removeLast()
            block = Block(older: last, newer: block)
        }
        roots.append(block)
    }

    /// A fragment of a block: a key interval and the newest sequence of the block that covers it.
    struct Fragment: Sendable {
        var start: [UInt8]
        var end: [UInt8]
        var sequence: UInt64
    }

    /// `count` consecutive tombstones (in sequence order), fragmented.
    final class Block: Sendable {
        let count: Int
        let lowest: UInt64
        let highest: UInt64
        /// Disjoint, in key order.
        let fragments: [Fragment]
        /// The halves this block was merged from (nil for a single tombstone).
        let older: Block?
        let newer: Block?

        init(_ t: SequencedRangeTombstone) {
            count = 1
            lowest = t.sequence
            highest = t.sequence
            fragments = [Fragment(start: t.start, end: t.end, sequence: t.sequence)]
            older = nil
            newer = nil
        }

        /// Overlays `newer` (whose sequences are all at least `older`'s) on `older`.
        init(older: Block, newer: Block) {
            count = older.count + newer.count
            lowest = older.lowest
            highest = newer.highest
            self.older = older
            self.newer = newer
            let top = newer.fragments
            // The parts of the older fragments that no newer fragment covers.
            var pieces: [Fragment] = []
            var j = 0
            for f in older.fragments {
                while j < top.count && ByteComparison.compare(top[j].end, f.start) <= 0 { j += 1 }
                var cursor = f.start
                var k = j
                while k < top.count && ByteComparison.compare(top[k].start, f.end) < 0 {
                    if ByteComparison.compare(top[k].start, cursor) > 0 {
                        pieces.append(Fragment(start: cursor, end: top[k].start, sequence: f.sequence))
                    }
                    if ByteComparison.compare(top[k].end, cursor) > 0 { cursor = top[k].end }
                    k += 1
                }
                if ByteComparison.compare(cursor, f.end) < 0 {
                    pieces.append(Fragment(start: cursor, end: f.end, sequence: f.sequence))
                }
            }
            // Merge two disjoint lists by start.
            var merged: [Fragment] = []
            merged.reserveCapacity(pieces.count + top.count)
            var a = 0, b = 0
            while a < pieces.count || b < top.count {
                if b == top.count || (a < pieces.count && ByteComparison.compare(pieces[a].start, top[b].start) < 0) {
                    merged.append(pieces[a])
                    a += 1
                } else {
                    merged.append(top[b])
                    b += 1
                }
            }
            fragments = merged
        }

        /// The newest sequence of this block covering `key`, narrowing `stretch` to the key
        /// interval around `key` over which that answer holds.
        func newest(covering key: UnsafeRawBufferPointer, stretch: inout Stretch) -> UInt64? {
            // The last fragment starting at or before key.
            var lo = 0, hi = fragments.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if ByteComparison.compare(fragments[mid].start, key) <= 0 { lo = mid + 1 } else { hi = mid }
            }
            let i = lo - 1
            if i >= 0 && ByteComparison.compare(fragments[i].end, key) > 0 {
                stretch.narrow(lower: fragments[i].start, upper: fragments[i].end)
                return fragments[i].sequence
            }
            stretch.narrow(lower: i >= 0 ? fragments[i].end : nil, upper: lo < fragments.count ? fragments[lo].start : nil)
            return nil
        }

        /// As ``newest(covering:stretch:)``, counting only tombstones of sequence `<= sequence`.
        func newest(covering key: UnsafeRawBufferPointer, at sequence: UInt64, stretch: inout Stretch) -> UInt64? {
            if lowest > sequence { return nil }
            if highest <= sequence { return newest(covering: key, stretch: &stretch) }
            guard let older, let newer else { return nil }
            if let s = newer.newest(covering: key, at: sequence, stretch: &stretch) { return s }
            return older.newest(covering: key, at: sequence, stretch: &stretch)
        }
    }

    /// A key interval `[lower, upper)` (nil: unbounded), over which a lookup's answer is constant.
    struct Stretch {
        var lower: [UInt8]?
        var upper: [UInt8]?

        mutating func narrow(lower l: [UInt8]?, upper u: [UInt8]?) {
            if let l, lower.map({ ByteComparison.compare(l, $0) > 0 }) ?? true { lower = l }
            if let u, upper.map({ ByteComparison.compare(u, $0) < 0 }) ?? true { upper = u }
        }

        func contains(_ key: UnsafeRawBufferPointer) -> Bool {
            if let lower, ByteComparison.compare(lower, key) > 0 { return false }
            if let upper, ByteComparison.compare(upper, key) <= 0 { return false }
            return true
        }
    }

    /// The newest sequence `<= sequence` of a tombstone covering `key`, and the stretch of keys
    /// around `key` with the same answer.
    func newest(covering key: UnsafeRawBufferPointer, at sequence: UInt64) -> (sequence: UInt64?, stretch: Stretch) {
        var stretch = Stretch()
        // Newest block first: the first one that covers the key holds the newest tombstone.
        for block in roots.reversed() {
            if let s = block.newest(covering: key, at: sequence, stretch: &stretch) { return (s, stretch) }
        }
        return (nil, stretch)
    }

    /// Lookups at one snapshot sequence for keys that come in order (a cursor's), remembering the
    /// last answer and the stretch of keys it holds for.
    struct Probe {
        let index: RangeTombstoneIndex
        let sequence: UInt64
        private var cached: (sequence: UInt64?, stretch: Stretch)?

        init(index: RangeTombstoneIndex, sequence: UInt64) {
            self.index = index
            self.sequence = sequence
        }

        /// The newest sequence `<= self.sequence` of a tombstone covering `key`.
        mutating func newest(covering key: UnsafeRawBufferPointer) -> UInt64? {
            if let c = cached, c.stretch.contains(key) { return c.sequence }
            let answer = index.newest(covering: key, at: sequence)
            cached = answer
            return answer.sequence
        }
    }
}
