/// A cursor over one layer of a snapshot — a memtable or a sorted run — that shows, for each key,
/// only the newest version visible to the snapshot (tombstones included; the merge drops them).
enum RecordCursor {
    case memtable(MemtableCursor)
    case run(RunCursor)

    var isValid: Bool {
        switch self {
        case .memtable(let c): return c.node != nil
        case .run(let c): return c.isValid
        }
    }

    @inline(__always)
    func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self {
        case .memtable(let c): return try body(ArenaSkipList.key(c.node!))
        case .run(let c): return try c.withKey(body)
        }
    }

    var kind: RecordKind {
        switch self {
        case .memtable(let c): return ArenaSkipList.kind(c.node!) == RecordKind.tombstone.rawValue ? .tombstone : .value
        case .run(let c): return c.cursor!.kind
        }
    }

    /// Valid until the cursor moves.
    var value: UnsafeRawBufferPointer {
        switch self {
        case .memtable(let c): return ArenaSkipList.value(c.node!)
        case .run(let c): return c.cursor!.value
        }
    }

    /// The memtable sequence of the current record (0 for runs).
    var sequence: UInt64 {
        if case .memtable(let c) = self { return ArenaSkipList.sequence(c.node!) }
        return 0
    }

    func seek(_ target: UnsafeRawBufferPointer) throws {
        switch self {
        case .memtable(let c): c.seek(target)
        case .run(let c): try c.seek(target)
        }
    }

    func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        switch self {
        case .memtable(let c): c.seekForPrevious(target)
        case .run(let c): try c.seekForPrevious(target)
        }
    }

    func seekToFirst() throws {
        switch self {
        case .memtable(let c): c.seekToFirst()
        case .run(let c): try c.seekToFirst()
        }
    }

    func seekToLast() throws {
        switch self {
        case .memtable(let c): c.seekToLast()
        case .run(let c): try c.seekToLast()
        }
    }

    func next() throws {
        switch self {
        case .memtable(let c): c.next()
        case .run(let c): try c.next()
        }
    }

    func previous() throws {
        switch self {
        case .memtable(let c): c.previous()
        case .run(let c): try c.previous()
        }
    }
}

/// Newest-visible-version cursor over a memtable at a snapshot sequence.
final class MemtableCursor {
    let memtable: Memtable
    let sequence: UInt64
    @exclusivity(unchecked) private(set) var node: ArenaSkipList.Node?

    init(_ memtable: Memtable, sequence: UInt64) {
        self.memtable = memtable
        self.sequence = sequence
    }

    private var list: ArenaSkipList { memtable.list }

    /// From any node, moves forward to the newest visible version of the next key that has one.
    private func settleForward() {
        while let n = node, ArenaSkipList.sequence(n) > sequence { node = ArenaSkipList.next(n, 0) }
    }

    func seek(_ target: UnsafeRawBufferPointer) {
        node = list.seek(target, sequence: sequence)
        settleForward()
    }

    func seekToFirst() {
        node = list.first
        settleForward()
    }

    func next() {
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

    func seekForPrevious(_ target: UnsafeRawBufferPointer) {
        if let v = list.seek(target, sequence: sequence), ByteComparison.compare(ArenaSkipList.key(v), target) == 0 {
            node = v
            return
        }
        settleBackward(before: target)
    }

    func seekToLast() { settleBackward(before: nil) }

    func previous() {
        guard let n = node else { return }
        settleBackward(before: ArenaSkipList.key(n))
    }
}

/// A cursor over the segments of a sorted run, one after another.
final class RunCursor {
    let run: SortedRun
    @exclusivity(unchecked) private var index = 0
    @exclusivity(unchecked) private(set) var cursor: SegmentCursor?

    init(_ run: SortedRun) {
        self.run = run
    }

    var isValid: Bool { cursor?.isValid ?? false }

    @inline(__always)
    func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try cursor!.withKey(body)
    }

    private func open(_ i: Int) -> Bool {
        guard i >= 0 && i < run.segments.count else { cursor = nil; return false }
        index = i
        cursor = SegmentCursor(run.segments[i])
        return true
    }

    func seek(_ target: UnsafeRawBufferPointer) throws {
        guard open(run.segmentIndex(atOrAfter: target)) else { return }
        try cursor!.seek(target)
        try forwardIfExhausted()
    }

    func seekToFirst() throws {
        guard open(0) else { return }
        try cursor!.seekToFirst()
        try forwardIfExhausted()
    }

    func seekToLast() throws {
        guard open(run.segments.count - 1) else { return }
        try cursor!.seekToLast()
        try backwardIfExhausted()
    }

    func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        let i = min(run.segmentIndex(atOrAfter: target), run.segments.count - 1)
        guard open(i) else { return }
        try cursor!.seekForPrevious(target)
        try backwardIfExhausted()
    }

    func next() throws {
        try cursor?.next()
        try forwardIfExhausted()
    }

    func previous() throws {
        try cursor?.previous()
        try backwardIfExhausted()
    }

    private func forwardIfExhausted() throws {
        while cursor != nil && !cursor!.isValid {
            guard open(index + 1) else { return }
            try cursor!.seekToFirst()
        }
    }

    private func backwardIfExhausted() throws {
        while cursor != nil && !cursor!.isValid {
            guard open(index - 1) else { return }
            try cursor!.seekToLast()
        }
    }
}
