@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Reads one series in a snapshot: its records, timestamps, the views of ``RangeQuery`` and their
/// evaluation (FORMAT.md §14.5). Used by ``TimeSeries`` and by ``SeriesInspector``.
///
/// Sequences are handled as `Int64` here: a series never reaches 2^63 events.
package struct SeriesReader {
    let snapshot: Snapshot
    let id: UInt64
    let head: SeriesHead
    let baseTimestamp: Int64
    let path: String
    /// `(2, id)`.
    let prefix: [UInt8]
    /// `(8, id)`.
    let indexPrefix: [UInt8]
    /// The value column kind of the series' type (§14.6): a chunk of another kind is corruption.
    let valueKind: UInt8?

    package init(snapshot: Snapshot, id: UInt64, head: SeriesHead, baseTimestamp: Int64, path: String,
                 valueKind: UInt8? = nil) {
        self.valueKind = valueKind
        self.snapshot = snapshot
        self.id = id
        self.head = head
        self.baseTimestamp = baseTimestamp
        self.path = path
        self.prefix = EventRecord.seriesPrefix(id)
        self.indexPrefix = EventRecord.editIndexPrefix(id)
    }

    private var cutoff: Int64 { Int64(head.cutoff) }
    private var next: Int64 { Int64(head.next) }

    package func corrupted(_ reason: String, sequence: Int64) -> StrataError {
        .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): \(reason)")
    }

    package func key(_ sequence: Int64) -> [UInt8] {
        var k = prefix
        EventRecord.appendUInt(UInt64(sequence), to: &k)
        return k
    }

    /// The record of a retained event (§14.2, or cut from its chunk, §14.6); throws if it is
    /// missing.
    func record(_ sequence: Int64) throws -> [UInt8] {
        guard let bytes = try SeriesEventCursor.record(sequence, snapshot: snapshot, prefix: prefix, path: path, valueKind: valueKind) else {
            throw corrupted("missing", sequence: sequence)
        }
        return bytes
    }

    /// A walk of the stored events `from…through`.
    func events(from: Int64, through: Int64, reverse: Bool = false) throws -> SeriesEventCursor {
        try SeriesEventCursor(snapshot: snapshot, prefix: prefix, from: from, through: through, reverse: reverse, path: path,
                              valueKind: valueKind)
    }

    /// The first sequence and the absolute timestamps of the stored entry holding event
    /// `sequence`: one event of a record, or all of a chunk's.
    func timestamps(around sequence: Int64) throws -> (first: Int64, times: [Int64]) {
        let c = snapshot.cursor(lower: key(sequence), upper: TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF])
        guard try c.next() else { throw corrupted("missing", sequence: sequence) }
        guard let k = c.withKey({ EventRecord.sequence(ofKey: $0, prefixLength: prefix.count) }) else {
            throw corrupted("malformed key", sequence: sequence)
        }
        if SeriesChunk.isChunk(c.value) {
            var times: [Int64] = []
            let header: SeriesChunk.Header
            do {
                header = try SeriesChunk.decodeTimestamps(c.value, base: baseTimestamp, into: &times)
            } catch let e as StrataError {
                throw corrupted("chunk ending at \(k): \(e)", sequence: sequence)
            }
            guard header.firstSequence <= UInt64(sequence), header.lastSequence == k else {
                throw corrupted("missing (the chunk ending at \(k) holds \(header.firstSequence)…\(header.lastSequence))", sequence: sequence)
            }
            if let valueKind { try SeriesChunk.checkValueKind(header.kind, expected: valueKind, chunkEnd: k, path: path) }
            return (Int64(header.firstSequence), times)
        }
        guard k == UInt64(sequence) else { throw corrupted("missing", sequence: sequence) }
        let h = try header(Array(c.value), sequence: sequence)
        return (sequence, [baseTimestamp &+ Int64(truncatingIfNeeded: h.timestampDelta)])
    }

    func header(_ bytes: [UInt8], sequence: Int64) throws -> EventRecord {
        guard let r = bytes.withUnsafeBytes({ EventRecord.decode($0) }) else {
            throw corrupted("malformed record", sequence: sequence)
        }
        return r
    }

    /// The absolute timestamp of a retained event.
    func timestamp(_ sequence: Int64) throws -> Int64 {
        let (first, times) = try timestamps(around: sequence)
        return times[Int(sequence - first)]
    }

    /// The first retained sequence whose timestamp is at least `t` (`next` if none), by binary
    /// search: timestamps never decrease along sequences. A probe that lands in a chunk reads
    /// the chunk's timestamps and narrows the search to one side of it, or ends inside it.
    func firstSequence(atLeast t: Int64) throws -> Int64 {
        var lo = cutoff, hi = next
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            let (first, times) = try timestamps(around: mid)
            let a = max(first, lo), b = min(first + Int64(times.count) - 1, hi - 1)
            if times[Int(b - first)] < t {
                lo = b + 1
            } else if times[Int(a - first)] >= t {
                hi = a
            } else {
                // times[a] < t <= times[b]: the answer is in (a, b].
                var l = a + 1, h = b
                while l < h {
                    let m = l + (h - l) / 2
                    if times[Int(m - first)] >= t { h = m } else { l = m + 1 }
                }
                return l
            }
        }
        return lo
    }

    // MARK: Views

    /// Whether the retained event `sequence`, whose record is `bytes`, belongs to `view`.
    func belongs(_ sequence: Int64, _ bytes: UnsafeRawBufferPointer, to view: RangeQuery.View) throws -> Bool {
        switch view {
        case .allEdits: return true
        case .values: return !EventRecord.isEdit(bytes)
        case .latestEdits:
            guard EventRecord.isEdit(bytes) else { return true }
            guard let r = EventRecord.decode(bytes), let original = r.original else {
                throw corrupted("malformed record", sequence: sequence)
            }
            return try latestEdit(of: original.sequence) == UInt64(sequence)
        }
    }

    /// The sequence of the latest edit of `original`, if it has one (edits are always retained
    /// when their original is; an edit of a discarded original may be).
    func latestEdit(of original: UInt64) throws -> UInt64? {
        var lower = indexPrefix
        EventRecord.appendUInt(original, to: &lower)
        // Only edits the head covers: a later one may be written but not yet published.
        var upper = lower
        EventRecord.appendUInt(head.next, to: &upper)
        let c = snapshot.cursor(lower: lower, upper: upper, reverse: true)
        guard try c.next() else { return nil }
        return try c.withKey { k -> UInt64 in
            var p = lower.count
            guard let e = EventRecord.readUInt(k, at: &p), p == k.count else {
                throw corrupted("malformed edit index key", sequence: Int64(original))
            }
            return e
        }
    }

    /// Walks the view from `start` (inclusive) in one direction within the retained events,
    /// calling `body` with each element's sequence until it returns false.
    func walk(_ view: RangeQuery.View, from start: Int64, forward: Bool, _ body: (Int64) throws -> Bool) throws {
        if !head.hasRetainedEdits {
            var s = start
            if forward {
                s = max(s, cutoff)
                while s < next { if try !body(s) { return }; s += 1 }
            } else {
                s = min(s, next - 1)
                while s >= cutoff { if try !body(s) { return }; s -= 1 }
            }
            return
        }
        if forward ? start >= next : start < cutoff { return }
        var c = forward ? try events(from: max(start, cutoff), through: next - 1)
                        : try events(from: cutoff, through: min(start, next - 1), reverse: true)
        while try c.next() {
            let s = c.sequence
            if try c.withRecord({ try belongs(s, $0, to: view) }) {
                if try !body(s) { return }
            }
        }
    }

    /// The `n`-th (1-based) element of the view at or after `start` (forward) or at or before it
    /// (backward); nil if there are fewer.
    ///
    /// `n` may be as large as `Int.max` (a caller's count): it is compared with the number of
    /// elements there are, never added to a sequence.
    func nth(_ view: RangeQuery.View, _ n: Int, from start: Int64, forward: Bool) throws -> Int64? {
        guard n >= 1 else { return nil }
        if !head.hasRetainedEdits {
            // `available` elements lie in the walk's direction: `first` and those beyond it.
            let first = forward ? max(start, cutoff) : min(start, next - 1)
            let available = forward ? next - first : first - cutoff + 1
            guard available > 0, Int64(n) <= available else { return nil }
            return forward ? first + Int64(n) - 1 : first - Int64(n) + 1
        }
        var seen = 0
        var found: Int64?
        try walk(view, from: start, forward: forward) { s in
            seen += 1
            if seen == n { found = s; return false }
            return true
        }
        return found
    }

    /// Whether `sequence` is an element of the view.
    func contains(_ view: RangeQuery.View, _ sequence: Int64) throws -> Bool {
        guard sequence >= cutoff, sequence < next else { return false }
        if !head.hasRetainedEdits { return true }
        let bytes = try record(sequence)
        return try bytes.withUnsafeBytes { try belongs(sequence, $0, to: view) }
    }

    // MARK: Positions

    /// A point of the view (RangeQuery "Positions"): a gap before sequence `x` (between the
    /// elements below `x` and those at or above it), or the elements `first…last` themselves.
    enum Point {
        case gap(Int64)
        case on(Int64, Int64)

        /// The first element a forward span from here includes.
        var forwardStart: Int64 {
            switch self { case .gap(let x): return x; case .on(let a, _): return a }
        }

        /// The last element a backward span to here includes.
        var backwardEnd: Int64 {
            switch self { case .gap(let x): return x - 1; case .on(_, let b): return b }
        }

        /// Order of the point's start: a gap before `x` sorts before the element `x`.
        var lowKey: (Int64, Int) {
            switch self { case .gap(let x): return (x, 0); case .on(let a, _): return (a, 1) }
        }

        /// Order of the point's end (its last element; a gap is its own end).
        var highKey: (Int64, Int) {
            switch self { case .gap(let x): return (x, 0); case .on(_, let b): return (b, 1) }
        }
    }

    func sequencePoint(_ view: RangeQuery.View, _ s: UInt64) throws -> Point {
        let clamped = Int64(min(max(s, head.cutoff), head.next))
        if UInt64(clamped) == s, try contains(view, clamped) { return .on(clamped, clamped) }
        return .gap(clamped)
    }

    func datePoint(_ view: RangeQuery.View, _ t: Int64) throws -> Point {
        let s1 = try firstSequence(atLeast: t)
        let s2 = t == Int64.max ? next - 1 : try firstSequence(atLeast: t + 1) - 1
        if s1 <= s2, let v1 = try nth(view, 1, from: s1, forward: true),
           let v2 = try nth(view, 1, from: s2, forward: false), v1 <= v2 {
            return .on(v1, v2)
        }
        return .gap(s1)
    }

    /// The point on the `n`-th element from the end (0: the end; more than there are: the start).
    func fromEndPoint(_ view: RangeQuery.View, _ n: Int) throws -> Point {
        if n <= 0 { return .gap(next) }
        if let v = try nth(view, n, from: next - 1, forward: false) { return .on(v, v) }
        return .gap(cutoff)
    }

    /// The time of a point (ms), or nil if the view has no element at or after it.
    func time(of point: Point, _ view: RangeQuery.View) throws -> Int64? {
        switch point {
        case .on(let a, _): return try timestamp(a)
        case .gap(let x):
            if let v = try nth(view, 1, from: x, forward: true) { return try timestamp(v) }
            return head.latestTimestamp
        }
    }

    // MARK: Evaluation

    /// The inclusive sequence bounds `A…B` of what `query` selects: the view's elements within.
    func select(_ query: RangeQuery) throws -> (Int64, Int64)? {
        guard head.next > head.cutoff, let latest = head.latestTimestamp else { return nil }
        let view = query.view
        var anchorTime: Int64?
        let anchor: Point
        switch query.anchor {
        case .start: anchor = .gap(cutoff)
        case .sequence(let s): anchor = try sequencePoint(view, s)
        case .date(let d):
            let t = RangeQuery.milliseconds(d) ?? 0
            anchor = try datePoint(view, t)
            anchorTime = t
        case .last(let n): anchor = try fromEndPoint(view, n)
        case .lastDuration(let d):
            let t = SeriesTime.minus(latest, RangeQuery.milliseconds(d) ?? 0)
            anchor = try datePoint(view, t)
            anchorTime = t
        }
        // The span runs forward when its end reaches the anchor's start or beyond. An end on a
        // date falls on that date's whole run of events: when the run also holds the anchor's
        // first element (the date is the anchor's time), the span runs forward from the anchor
        // to the run's last event, so `fromLast(2).untilLast(.zero)` equals `fromLast(2)` when
        // all events share one timestamp.
        func to(_ end: Point) -> (Int64, Int64) {
            if end.highKey >= anchor.lowKey { return (anchor.forwardStart, end.backwardEnd) }
            return (end.forwardStart, anchor.backwardEnd)
        }
        func timeOfAnchor() throws -> Int64? {
            if let anchorTime { return anchorTime }
            return try time(of: anchor, view)
        }
        switch query.span {
        case .untilLast(let n):
            if n == 0 { return to(.gap(next)) }
            // All but the last n: to the (n + 1)-th element from the end; Int.max means before all.
            let (k, overflow) = n.addingReportingOverflow(1)
            return to(overflow ? .gap(cutoff) : try fromEndPoint(view, k))
        case .untilLastDuration(let d):
            return to(try datePoint(view, SeriesTime.minus(latest, RangeQuery.milliseconds(d) ?? 0)))
        case .toSequence(let s): return to(try sequencePoint(view, s))
        case .toDate(let d): return to(try datePoint(view, RangeQuery.milliseconds(d) ?? 0))
        case .toStart: return to(.gap(cutoff))
        case .next(let n):
            let a = anchor.forwardStart
            if n == 0 { return (a, anchor.backwardEnd) }
            let after: Int64
            switch anchor { case .gap(let x): after = x; case .on(_, let b): after = b + 1 }
            return (a, try nth(view, n, from: after, forward: true) ?? next - 1)
        case .previous(let n):
            let b = anchor.backwardEnd
            if n == 0 { return (anchor.forwardStart, b) }
            let before: Int64
            switch anchor { case .gap(let x): before = x - 1; case .on(let a, _): before = a - 1 }
            return (try nth(view, n, from: before, forward: false) ?? cutoff, b)
        case .nextDuration(let d):
            guard let t = try timeOfAnchor() else { return nil }
            let (end, overflow) = t.addingReportingOverflow(RangeQuery.milliseconds(d) ?? 0)
            let last = overflow || end == Int64.max ? next - 1 : try firstSequence(atLeast: end + 1) - 1
            return (anchor.forwardStart, last)
        case .previousDuration(let d):
            guard let t = try timeOfAnchor() else { return nil }
            return (try firstSequence(atLeast: SeriesTime.minus(t, RangeQuery.milliseconds(d) ?? 0)), anchor.backwardEnd)
        }
    }

    /// Evaluates `query`: calls `body` with the sequence and record of each returned event, in
    /// order, and returns how many events the range selected (before the limit).
    ///
    /// For the values view, an edited original is returned as its latest edit's record.
    /// With `chunks`, runs of returned events stored in a chunk (FORMAT.md §14.6) go to it
    /// instead, as the chunk and the indexes of the events in it, in order with the others.
    package func evaluate(_ query: RangeQuery, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        try evaluate(query, chunks: nil, body)
    }

    /// ``evaluate(_:_:)``, with runs of returned events stored in a chunk going to `chunks`.
    func evaluate(_ query: RangeQuery, chunks: ChunkBody?,
                  _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        guard let (a0, b0) = try select(query) else { return 0 }
        let a = max(a0, cutoff), b = min(b0, next - 1)
        guard a <= b else { return 0 }
        let limit = query.limitCount ?? Int.max
        if !head.hasRetainedEdits {
            let selected = Int(b - a + 1)
            let first = selected > limit ? b - Int64(limit) + 1 : a
            if first <= b { try scan(from: first, through: b, chunks: chunks, body) }
            return selected
        }
        // General path: walk backwards from b, keep the first `limit` elements, count the rest.
        var kept: [Int64] = []
        var selected = 0
        try walk(query.view, from: b, forward: false) { s in
            if s < a { return false }
            selected += 1
            if kept.count < limit { kept.append(s) }
            return true
        }
        kept.reverse()
        var replacements: [UInt64: UInt64] = [:]
        if query.view == .values, let lo = kept.first, let hi = kept.last {
            replacements = try latestEdits(originalsFrom: UInt64(lo), through: UInt64(hi))
        }
        // The kept events' records in one walk; replacements outside it one by one.
        var records: [Int64: [UInt8]] = [:]
        if let lo = kept.first, let hi = kept.last {
            let wanted = Set(kept.map { s in replacements[UInt64(s)].map { Int64($0) } ?? s })
            var c = try events(from: lo, through: hi)
            while try c.next() {
                if wanted.contains(c.sequence) { records[c.sequence] = c.withRecord { Array($0) } }
            }
        }
        for s in kept {
            let shown = replacements[UInt64(s)].map { Int64($0) } ?? s
            let bytes = try records[shown] ?? record(shown)
            try bytes.withUnsafeBytes { try body(UInt64(shown), $0) }
        }
        return selected
    }

    /// Receives a run of events stored in a chunk: the chunk and the indexes of the events.
    typealias ChunkBody = (SeriesChunkColumns, Range<Int>) throws -> Void

    /// Calls `body` for each retained event `first…last` in order, straight from a cursor (and
    /// `chunks`, if given, for runs of them in a chunk).
    func scan(from first: Int64, through last: Int64, chunks: ChunkBody? = nil,
              _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        var c = try events(from: first, through: last)
        var expected = first
        while try c.next() {
            guard c.sequence == expected else { throw corrupted("missing", sequence: expected) }
            if let chunks, let run = try c.withChunkRun(chunks) {
                expected += Int64(run.count)
                continue
            }
            try c.withRecord { try body(UInt64(expected), $0) }
            expected += 1
        }
        guard expected == last + 1 else { throw corrupted("missing", sequence: expected) }
    }

    /// The latest edit of each original in `lo…hi` that has one, from the edit index.
    func latestEdits(originalsFrom lo: UInt64, through hi: UInt64) throws -> [UInt64: UInt64] {
        var lower = indexPrefix
        EventRecord.appendUInt(lo, to: &lower)
        var upper = indexPrefix
        EventRecord.appendUInt(hi + 1, to: &upper)
        let c = snapshot.cursor(lower: lower, upper: upper)
        var result: [UInt64: UInt64] = [:]
        while try c.next() {
            let pair = c.withKey { k -> (UInt64, UInt64)? in
                var p = indexPrefix.count
                guard let o = EventRecord.readUInt(k, at: &p), let e = EventRecord.readUInt(k, at: &p), p == k.count
                else { return nil }
                return (o, e)
            }
            guard let (o, e) = pair else { throw corrupted("malformed edit index key", sequence: -1) }
            if e >= head.cutoff && e < head.next { result[o] = max(result[o] ?? 0, e) }
        }
        return result
    }
}
