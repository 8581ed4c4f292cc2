@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A cursor over one layer of a snapshot — a memtable's skip list or replayed table, or a sorted
/// run — that shows, for each key,
/// only the newest version visible to the snapshot (tombstones included; the merge drops them).
///
/// The payloads are **unowned**: whoever makes a `RecordCursor` keeps its cursor object alive for
/// as long as the `RecordCursor` is used (`MergedCursor.owners`). That makes a `RecordCursor` a
/// trivial value: reading one out of an array costs no retain and release, which on the merge's
/// per-record path was most of its cost.
@_spi(Layers) public enum RecordCursor {
    /// A memtable's versions visible to the snapshot.
    case memtable(Unmanaged<MemtableCursor>)
    /// A sorted run's segments, one after another.
    case run(Unmanaged<RunCursor>)
    /// The writes recovery replayed into a memtable, older than the memtable's own.
    case replayed(Unmanaged<ReplayedTableCursor>)

    @inlinable @inline(__always) package var isValid: Bool {
        switch self {
        case .memtable(let c): return c._withUnsafeGuaranteedRef { $0.node != nil }
        case .run(let c): return c._withUnsafeGuaranteedRef { $0.isValid }
        case .replayed(let c): return c._withUnsafeGuaranteedRef { $0.isValid }
        }
    }

    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self {
        case .memtable(let c): return try c._withUnsafeGuaranteedRef { try $0.withKey(body) }
        case .run(let c): return try c._withUnsafeGuaranteedRef { try $0.withKey(body) }
        case .replayed(let c): return try c._withUnsafeGuaranteedRef { try $0.withKey(body) }
        }
    }

    @inlinable @inline(__always) package var kind: RecordKind {
        switch self {
        case .memtable(let c): return c._withUnsafeGuaranteedRef { $0.kind }
        case .run(let c): return c._withUnsafeGuaranteedRef { $0.kind }
        case .replayed(let c): return c._withUnsafeGuaranteedRef { $0.kind }
        }
    }

    /// Valid until the cursor moves.
    @inlinable @inline(__always) package var value: UnsafeRawBufferPointer {
        switch self {
        case .memtable(let c): return c._withUnsafeGuaranteedRef { $0.value }
        case .run(let c): return c._withUnsafeGuaranteedRef { $0.value }
        case .replayed(let c): return c._withUnsafeGuaranteedRef { $0.value }
        }
    }

    /// The memtable sequence of the current record (0 for runs).
    package var sequence: UInt64 {
        switch self {
        case .memtable(let c): return c._withUnsafeGuaranteedRef { $0.recordSequence }
        case .replayed(let c): return c._withUnsafeGuaranteedRef { $0.recordSequence }
        case .run: return 0
        }
    }

    package func seek(_ target: UnsafeRawBufferPointer) throws {
        switch self {
        case .memtable(let c): c._withUnsafeGuaranteedRef { $0.seek(target) }
        case .run(let c): try c._withUnsafeGuaranteedRef { try $0.seek(target) }
        case .replayed(let c): c._withUnsafeGuaranteedRef { $0.seek(target) }
        }
    }

    package func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        switch self {
        case .memtable(let c): c._withUnsafeGuaranteedRef { $0.seekForPrevious(target) }
        case .run(let c): try c._withUnsafeGuaranteedRef { try $0.seekForPrevious(target) }
        case .replayed(let c): c._withUnsafeGuaranteedRef { $0.seekForPrevious(target) }
        }
    }

    package func seekToFirst() throws {
        switch self {
        case .memtable(let c): c._withUnsafeGuaranteedRef { $0.seekToFirst() }
        case .run(let c): try c._withUnsafeGuaranteedRef { try $0.seekToFirst() }
        case .replayed(let c): c._withUnsafeGuaranteedRef { $0.seekToFirst() }
        }
    }

    package func seekToLast() throws {
        switch self {
        case .memtable(let c): c._withUnsafeGuaranteedRef { $0.seekToLast() }
        case .run(let c): try c._withUnsafeGuaranteedRef { try $0.seekToLast() }
        case .replayed(let c): c._withUnsafeGuaranteedRef { $0.seekToLast() }
        }
    }

    package func next() throws {
        switch self {
        case .memtable(let c): c._withUnsafeGuaranteedRef { $0.next() }
        case .run(let c): try c._withUnsafeGuaranteedRef { try $0.next() }
        case .replayed(let c): c._withUnsafeGuaranteedRef { $0.next() }
        }
    }

    package func previous() throws {
        switch self {
        case .memtable(let c): c._withUnsafeGuaranteedRef { $0.previous() }
        case .run(let c): try c._withUnsafeGuaranteedRef { try $0.previous() }
        case .replayed(let c): c._withUnsafeGuaranteedRef { $0.previous() }
        }
    }
}

/// Newest-visible-version cursor over a memtable at a snapshot sequence.
@_spi(Layers) public final class MemtableCursor {
    package let memtable: Memtable
    package let sequence: UInt64
    @exclusivity(unchecked) @usableFromInline package private(set) var node: ArenaSkipList.Node?

    package init(_ memtable: Memtable, sequence: UInt64) {
        self.memtable = memtable
        self.sequence = sequence
    }

    private var list: ArenaSkipList { memtable.list }

    // Only while `node` is not nil.
    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(ArenaSkipList.key(node.unsafelyUnwrapped))
    }

    @inlinable @inline(__always) package var kind: RecordKind {
        ArenaSkipList.kind(node.unsafelyUnwrapped) == RecordKind.tombstone.rawValue ? .tombstone : .value
    }

    @inlinable @inline(__always) package var value: UnsafeRawBufferPointer { ArenaSkipList.value(node.unsafelyUnwrapped) }

    package var recordSequence: UInt64 { ArenaSkipList.sequence(node.unsafelyUnwrapped) }

    package var isValid: Bool { node != nil }

    /// From any node, moves forward to the newest visible version of the next key that has one.
    private func settleForward() {
        while let n = node, ArenaSkipList.sequence(n) > sequence { node = ArenaSkipList.next(n, 0) }
    }

    package func seek(_ target: UnsafeRawBufferPointer) {
        node = list.seek(target, sequence: sequence)
        settleForward()
    }

    package func seekToFirst() {
        node = list.first
        settleForward()
    }

    package func next() {
        guard let n = node else { return }
        let key = ArenaSkipList.key(n)
        var x = ArenaSkipList.next(n, 0)
        while let y = x, ByteComparison.compare(ArenaSkipList.key(y), key) == 0 { x = ArenaSkipList.next(y, 0) }
        node = x
        settleForward()
    }

    /// Positions at the newest visible version of the last key `< bound` that has one.
    private func settleBackward(before bound: UnsafeRawBufferPointer?) {
        var candidate: ArenaSkipList.Node? = bound.map { list.lastBefore($0) } ?? list.last
        while let c = candidate {
            let key = ArenaSkipList.key(c)
            if let v = list.seek(key, sequence: sequence), ByteComparison.compare(ArenaSkipList.key(v), key) == 0 {
                node = v
                return
            }
            candidate = list.lastBefore(key)
        }
        node = nil
    }

    package func seekForPrevious(_ target: UnsafeRawBufferPointer) {
        if let v = list.seek(target, sequence: sequence), ByteComparison.compare(ArenaSkipList.key(v), target) == 0 {
            node = v
            return
        }
        settleBackward(before: target)
    }

    package func seekToLast() { settleBackward(before: nil) }

    package func previous() {
        guard let n = node else { return }
        settleBackward(before: ArenaSkipList.key(n))
    }
}

/// A cursor over the segments of a sorted run, one after another. One `SegmentCursor` is
/// retargeted from segment to segment.
@_spi(Layers) public final class RunCursor {
    package let run: SortedRun
    @exclusivity(unchecked) private var index = 0
    /// Nil only for a run without segments.
    @usableFromInline let segmentCursor: SegmentCursor?
    /// `segmentCursor`, unretained: it lives as long as `self`.
    @usableFromInline let segmentReference: Unmanaged<SegmentCursor>?
    @exclusivity(unchecked) @usableFromInline var open = false

    /// A cursor over `run`, taking a segment cursor from the run's pool when one is kept.
    package init(_ run: SortedRun, fillCache: Bool = true) {
        self.run = run
        self.segmentCursor = run.segments.first.map {
            run.cursorPool.take(for: $0, fillCache: fillCache) ?? SegmentCursor($0, fillCache: fillCache)
        }
        self.segmentReference = segmentCursor.map { Unmanaged.passUnretained($0) }
    }

    /// Gives the segment cursor back to the run's pool: nothing else refers to it.
    deinit {
        if let segmentCursor { run.cursorPool.give(segmentCursor) }
    }

    /// Calls `body` with the segment cursor; only while a segment is open (`open`).
    @inlinable @inline(__always)
    func withCursor<R>(_ body: (SegmentCursor) throws -> R) rethrows -> R {
        try segmentReference.unsafelyUnwrapped._withUnsafeGuaranteedRef(body)
    }

    @inlinable @inline(__always) package var isValid: Bool { open && withCursor { $0.isValid } }

    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withCursor { try $0.withKey(body) }
    }

    @inlinable @inline(__always) package var kind: RecordKind { withCursor { $0.kind } }
    @inlinable @inline(__always) package var value: UnsafeRawBufferPointer { withCursor { $0.value } }

    private func open(_ i: Int) -> Bool {
        guard i >= 0 && i < run.segments.count, let c = segmentCursor else { open = false; return false }
        index = i
        c.retarget(run.segments[i])
        open = true
        return true
    }

    package func seek(_ target: UnsafeRawBufferPointer) throws {
        guard open(run.segmentIndex(atOrAfter: target)) else { return }
        try withCursor { try $0.seek(target) }
        try forwardIfExhausted()
    }

    package func seekToFirst() throws {
        guard open(0) else { return }
        try withCursor { try $0.seekToFirst() }
        try forwardIfExhausted()
    }

    package func seekToLast() throws {
        guard open(run.segments.count - 1) else { return }
        try withCursor { try $0.seekToLast() }
        try backwardIfExhausted()
    }

    package func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        let i = min(run.segmentIndex(atOrAfter: target), run.segments.count - 1)
        guard open(i) else { return }
        try withCursor { try $0.seekForPrevious(target) }
        try backwardIfExhausted()
    }

    package func next() throws {
        guard open else { return }
        try withCursor { try $0.next() }
        try forwardIfExhausted()
    }

    package func previous() throws {
        guard open else { return }
        try withCursor { try $0.previous() }
        try backwardIfExhausted()
    }

    private func forwardIfExhausted() throws {
        while open && !withCursor({ $0.isValid }) {
            guard open(index + 1) else { return }
            try withCursor { try $0.seekToFirst() }
        }
    }

    private func backwardIfExhausted() throws {
        while open && !withCursor({ $0.isValid }) {
            guard open(index - 1) else { return }
            try withCursor { try $0.seekToLast() }
        }
    }
}
