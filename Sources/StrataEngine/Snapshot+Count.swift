@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

extension Snapshot {
    /// The number of keys with `lower <= key < upper` (nil `upper`: no upper bound) that have a
    /// value in this snapshot — exactly the records `cursor(lower:upper:)` would step through —
    /// summed from the segments' stored counts where that is provably exact, read record by record
    /// elsewhere.
    ///
    /// **The rule.** Cut `[lower, upper)` at the edges of every layer's *point span* (a
    /// memtable's: its first to its last key in the range, every version, whatever its sequence; a
    /// segment's: its properties' smallest to largest point key) and of every visible range
    /// tombstone. On a piece that lies inside the point span of exactly one layer, and that layer
    /// is a segment of run `r`, and no range tombstone of a newer layer (a memtable, or a run
    /// before `r`) touches the piece, no other layer holds a key of the piece, so each key's newest
    /// record is the segment's and nothing newer deletes it (a run's own range tombstones never
    /// apply to its records, older runs' never to newer records): the count is the segment's
    /// values in the piece (``SegmentReader/countValues(lower:upper:)``: whole-segment counts from
    /// the properties, otherwise the version-2 index counts, FORMAT.md 5.5). A piece in no point
    /// span counts 0. Every other piece — memtable keys, overlapping segments, a newer range
    /// tombstone, a version-1 segment cut by the piece — is counted with a merged cursor, as a
    /// scan would.
    package func count(lower: [UInt8], upper: [UInt8]?) throws -> Int {
        var total = 0
        for piece in countPieces(lower: lower, upper: upper) {
            var n: Int?
            if let segment = piece.segment {
                n = try piece.lower.withUnsafeBytes { l in
                    try piece.upper.withOptionalBytes { u in try segment.countValues(lower: l, upper: u) }
                }
            }
            if n == nil { n = try scanCount(lower: piece.lower, upper: piece.upper) }
            let (sum, overflow) = total.addingReportingOverflow(n ?? 0)
            guard !overflow else {
                throw StrataError.corrupted(file: "segments of the snapshot", offset: 0, reason: "record counts overflow")
            }
            total = sum
        }
        return total
    }

    /// The pieces ``count(lower:upper:)`` counts, each from one segment or by a scan.
    package func countPieces(lower: [UInt8], upper: [UInt8]?) -> [CountPlan.Piece] {
        if let upper, ByteComparison.compare(lower, upper) >= 0 { return [] }
        var plan = CountPlan(lower: lower, upper: upper)
        for (i, m) in memtables.enumerated() {
            plan.addSpan(of: m, rank: i)
            for t in m.allRangeTombstones where t.sequence <= sequence {
                plan.addMemtableTombstone(start: t.start, end: t.end)
            }
        }
        for (j, run) in version.runs.enumerated() {
            plan.addSpans(of: run, rank: memtables.count + j)
        }
        return plan.pieces()
    }

    /// The visible records in `[lower, upper)`, one by one.
    private func scanCount(lower: [UInt8], upper: [UInt8]?) throws -> Int {
        let c = cursor(lower: lower, upper: upper)
        var n = 0
        while try c.next() { n += 1 }
        return n
    }
}

extension Optional where Wrapped == [UInt8] {
    /// Calls `body` with a view of the bytes, or nil.
    fileprivate func withOptionalBytes<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        switch self {
        case .some(let bytes): return try bytes.withUnsafeBytes { try body($0) }
        case .none: return try body(nil)
        }
    }
}

/// The pieces a count cuts its range into (``Snapshot/count(lower:upper:)``). Span ends are
/// exclusive; a nil end is the range's upper end.
package struct CountPlan {
    package struct Span {
        package var start: [UInt8]
        package var end: [UInt8]?
        package var rank: Int
        /// The segment whose point keys these are; nil for a memtable.
        package var segment: SegmentReader?

    package init(start: [UInt8], end: [UInt8]? = nil, rank: Int, segment: SegmentReader? = nil) {
        self.start = start
        self.end = end
        self.rank = rank
        self.segment = segment
    }
}

    /// A stretch of the range and how to count it: from `segment` alone, or by a scan when nil.
    package struct Piece {
        package var lower: [UInt8]
        package var upper: [UInt8]?
        package var segment: SegmentReader?

    package init(lower: [UInt8], upper: [UInt8]? = nil, segment: SegmentReader? = nil) {
        self.lower = lower
        self.upper = upper
        self.segment = segment
    }
}

    package let lower: [UInt8]
    package let upper: [UInt8]?
    private var points: [Span] = []
    /// The runs' range tombstones, and the memtables' (which may overlap one another). Every
    /// memtable is newer than every run, so the memtables' all get rank -1.
    private var tombstones: [Span] = []
    private var memtableTombstones: [Span] = []

    package init(lower: [UInt8], upper: [UInt8]?) {
        self.lower = lower
        self.upper = upper
    }

    /// `[start, end)` clipped to the range; nil if nothing of it is left.
    private func clip(_ start: [UInt8], _ end: [UInt8]?) -> (start: [UInt8], end: [UInt8]?)? {
        let s = ByteComparison.compare(start, lower) < 0 ? lower : start
        var e = end
        if let end, let upper, ByteComparison.compare(end, upper) >= 0 { e = nil }
        if let e, ByteComparison.compare(s, e) >= 0 { return nil }
        if let upper, ByteComparison.compare(s, upper) >= 0 { return nil }
        return (s, e)
    }

    /// The smallest key above `key`.
    private static func successor(_ key: UnsafeRawBufferPointer) -> [UInt8] {
        var k = Array(key)
        k.append(0)
        return k
    }

    /// Adds the point span of a memtable: its skip list's and its replayed table's together.
    package mutating func addSpan(of memtable: Memtable, rank: Int) {
        var first: [UInt8]?
        var last: [UInt8]?
        func widen(_ lowest: UnsafeRawBufferPointer, _ highest: UnsafeRawBufferPointer) {
            if first.map({ f in f.withUnsafeBytes { ByteComparison.compare(lowest, $0) < 0 } }) ?? true { first = Array(lowest) }
            if last.map({ l in l.withUnsafeBytes { ByteComparison.compare(highest, $0) > 0 } }) ?? true { last = Array(highest) }
        }
        let list = memtable.list
        if let f = lower.withUnsafeBytes({ list.seek($0, sequence: .max) }),
           upper.map({ u in u.withUnsafeBytes { ByteComparison.compare(ArenaSkipList.key(f), $0) < 0 } }) ?? true,
           let l = upper.map({ u in u.withUnsafeBytes { list.lastBefore($0) } }) ?? list.last {
            widen(ArenaSkipList.key(f), ArenaSkipList.key(l))
        }
        if let table = memtable.replayed {
            let from = lower.withUnsafeBytes { table.lowerBound($0) }
            let to = upper.map { u in u.withUnsafeBytes { table.lowerBound($0) } } ?? table.entries.count
            if from < to { widen(table.entries[from].keyBytes, table.entries[to - 1].keyBytes) }
        }
        guard let first, let last else { return }
        if let c = clip(first, last + [0]) {  // last's successor
            points.append(Span(start: c.start, end: c.end, rank: rank, segment: nil))
        }
    }

    package mutating func addMemtableTombstone(start: [UInt8], end: [UInt8]) {
        if let c = clip(start, end) { memtableTombstones.append(Span(start: c.start, end: c.end, rank: -1)) }
    }

    package mutating func addSpans(of run: SortedRun, rank: Int) {
        var i = lower.withUnsafeBytes { run.segmentIndex(atOrAfter: $0) }
        while i < run.segments.count {
            let segment = run.segments[i]
            i += 1
            let p = segment.properties
            guard p.records > 0 else { continue }
            if let upper, ByteComparison.compare(p.smallestKey, upper) >= 0 { break }
            if let c = clip(p.smallestKey, p.largestKey.withUnsafeBytes { Self.successor($0) }) {
                points.append(Span(start: c.start, end: c.end, rank: rank, segment: segment))
            }
        }
        // The run's tombstones are sorted and disjoint: from the first ending above `lower`.
        let ts = run.rangeTombstones
        var lo = 0, hi = ts.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ByteComparison.compare(ts[mid].end, lower) <= 0 { lo = mid + 1 } else { hi = mid }
        }
        for t in ts[lo...] {
            if let upper, ByteComparison.compare(t.start, upper) >= 0 { break }
            if let c = clip(t.start, t.end) { tombstones.append(Span(start: c.start, end: c.end, rank: rank)) }
        }
    }

    /// Cuts the range at every span's edges, decides each piece by the rule of
    /// ``Snapshot/count(lower:upper:)``, and joins neighbours decided alike. Pieces no span covers
    /// are left out.
    package func pieces() -> [Piece] {
        if memtableTombstones.isEmpty && tombstones.isEmpty && points.count <= 1 {
            // The common case of a settled range: one segment's span or nothing.
            return points.map { Piece(lower: $0.start, upper: $0.end ?? upper, segment: $0.segment) }
        }
        // Memtable tombstones may overlap one another: their union, so that marking the pieces
        // below costs at most the number of pieces per layer.
        let tombstones = self.tombstones + Self.union(memtableTombstones)
        var bounds: [[UInt8]] = [lower]
        for s in points + tombstones {
            bounds.append(s.start)
            if let e = s.end { bounds.append(e) }
        }
        bounds.sort { ByteComparison.compare($0, $1) < 0 }
        var unique: [[UInt8]] = []
        for b in bounds where unique.last.map({ ByteComparison.compare($0, b) != 0 }) ?? true { unique.append(b) }
        bounds = unique
        let n = bounds.count
        func index(_ key: [UInt8]?) -> Int {
            guard let key else { return n }
            var lo = 0, hi = n
            while lo < hi {
                let mid = (lo + hi) / 2
                if ByteComparison.compare(bounds[mid], key) < 0 { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        // How many point spans cover each piece, and the sum of their numbers (the one number
        // when only one does): running sums of these differences.
        var coverDelta = [Int](repeating: 0, count: n + 1)
        var idDelta = [Int](repeating: 0, count: n + 1)
        for (id, s) in points.enumerated() {
            let a = index(s.start), b = index(s.end)
            coverDelta[a] += 1
            coverDelta[b] -= 1
            idDelta[a] += id
            idDelta[b] -= id
        }
        // The newest (lowest) rank of a range tombstone touching each piece.
        var newestTombstone = [Int](repeating: Int.max, count: n)
        for t in tombstones {
            for i in index(t.start)..<index(t.end) { newestTombstone[i] = min(newestTombstone[i], t.rank) }
        }
        enum Decision: Equatable { case empty, segment(Int), scan }
        var out: [Piece] = []
        var open: (decision: Decision, start: Int)?
        func close(at end: Int) {
            guard let o = open else { return }
            open = nil
            let segment: SegmentReader?
            switch o.decision {
            case .empty: return
            case .segment(let id): segment = points[id].segment
            case .scan: segment = nil
            }
            out.append(Piece(lower: bounds[o.start], upper: end < n ? bounds[end] : upper, segment: segment))
        }
        var cover = 0, ids = 0
        for i in 0..<n {
            cover += coverDelta[i]
            ids += idDelta[i]
            let decision: Decision
            if cover == 0 {
                decision = .empty
            } else if cover == 1, points[ids].segment != nil, newestTombstone[i] >= points[ids].rank {
                decision = .segment(ids)
            } else {
                decision = .scan
            }
            if open?.decision != decision {
                close(at: i)
                open = (decision, i)
            }
        }
        close(at: n)
        return out
    }

    /// The union of `spans` (of one rank) as sorted, disjoint spans.
    private static func union(_ spans: [Span]) -> [Span] {
        guard spans.count > 1 else { return spans }
        var merged: [Span] = []
        for t in spans.sorted(by: { ByteComparison.compare($0.start, $1.start) < 0 }) {
            if var last = merged.last, let lastEnd = last.end, ByteComparison.compare(t.start, lastEnd) <= 0 {
                if let e = t.end { if ByteComparison.compare(e, lastEnd) > 0 { last.end = e } } else { last.end = nil }
                merged[merged.count - 1] = last
            } else if let last = merged.last, last.end == nil {
                continue  // the last one reaches the range's end
            } else {
                merged.append(t)
            }
        }
        return merged
    }
}
