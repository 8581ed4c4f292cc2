@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// One ordered view of a snapshot: the layers (memtables newest first, then sorted runs newest
/// first) merged so that for each key the newest layer wins, tombstones hide the key, and range
/// tombstones hide older layers' records. Forward or reverse, within `[lower, upper)`.
@_spi(Layers) public final class MergedCursor {
    @exclusivity(unchecked) private var sources: [RecordCursor]
    /// The layer of each source, the rank its range tombstones are compared by: a memtable's
    /// index (for its skip list and its replayed table alike), or the memtable count plus a run's.
    private let layerOfSource: [Int]
    /// Keeps the cursors that `sources` refers to unretained alive.
    private let owners: [AnyObject]
    /// Lookups in the range tombstones of each memtable that has some, with its rank (layer).
    @exclusivity(unchecked) private var memtableTombstones: [(rank: Int, probe: RangeTombstoneIndex.Probe)]
    /// Runs with range tombstones, with their rank (layer).
    private let runsWithTombstones: [(rank: Int, run: SortedRun)]
    package let reverse: Bool
    /// Whether point tombstones are shown (flush and compaction keep them for older layers).
    private let keepTombstones: Bool
    private let lower: [UInt8]?
    private let upper: [UInt8]?
    @exclusivity(unchecked) private var current = -1
    /// `sources[current]` while ``isValid``: reading the record through it costs no array access
    /// (no bounds check, no retain of the array) on the per-record path.
    @exclusivity(unchecked) @usableFromInline var currentSource: RecordCursor?
    @exclusivity(unchecked) private var started = false
    /// Whether some memtable or run of the snapshot has range tombstones.
    private let hasRangeTombstones: Bool
    /// Set once the sources are positioned: exactly one source had a record and no range
    /// tombstones apply. A source exhausted in the cursor's direction stays so, so the merge then
    /// has one source for good and ``next()`` steps it alone (``settleSole(_:)``).
    @exclusivity(unchecked) private var sole = false
    /// A copy of the bound that ends the cursor's walk (`lower` in reverse, else `upper`), `stopCount`
    /// bytes at `stopBytes` (nil: no bound), so that ``settleSole(_:)`` compares with it without
    /// retaining an array per record. Allocated in init, freed in deinit.
    /// REQUIRES: read only by the cursor's own methods (never handed out), so never after deinit.
    private let stopBytes: UnsafeMutableRawPointer?
    private let stopCount: Int
    #if STRATA_INVARIANTS
    /// The key returned last: each next one must sort strictly after it (before it in reverse).
    private var previousKey: [UInt8]?
    #endif

    /// The current source; only while ``isValid`` (a programmer error otherwise).
    @usableFromInline var here: RecordCursor {
        @inlinable @inline(__always) get {
            guard let s = currentSource else { preconditionFailure("MergedCursor read while not on a record") }
            return s
        }
    }

    /// A copy of the current key; only while ``isValid``.
    package var key: [UInt8] { here.withKey { Array($0) } }

    /// Calls `body` with a view of the current key, valid only inside `body`.
    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try here.withKey { try body($0) }
    }

    /// Calls `body` with views of the current key and value, valid only inside `body`.
    @inlinable @inline(__always)
    package func withCurrent<R>(_ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let s = here
        return try s.withKey { try body($0, s.value) }
    }

    package init(memtables: [Memtable], runs: [SortedRun], sequence: UInt64,
         lower: [UInt8]?, upper: [UInt8]?, reverse: Bool, keepTombstones: Bool = false, fillCache: Bool = true) {
        self.keepTombstones = keepTombstones
        var owned: [AnyObject] = []
        var s: [RecordCursor] = []
        var layers: [Int] = []
        for (i, m) in memtables.enumerated() {
            let c = MemtableCursor(m, sequence: sequence)
            owned.append(c)
            s.append(.memtable(Unmanaged.passUnretained(c)))
            layers.append(i)
            if let table = m.replayed {
                // After the memtable's own writes, all newer: one layer, ordered by sequence.
                let r = ReplayedTableCursor(table, sequence: sequence)
                owned.append(r)
                s.append(.replayed(Unmanaged.passUnretained(r)))
                layers.append(i)
            }
        }
        var mt: [(Int, RangeTombstoneIndex.Probe)] = []
        for (i, m) in memtables.enumerated() {
            let index = m.rangeTombstoneIndex
            if !index.isEmpty { mt.append((i, RangeTombstoneIndex.Probe(index: index, sequence: sequence))) }
        }
        var rt: [(Int, SortedRun)] = []
        for (i, r) in runs.enumerated() {
            let c = RunCursor(r, fillCache: fillCache)
            owned.append(c)
            s.append(.run(Unmanaged.passUnretained(c)))
            layers.append(memtables.count + i)
            if !r.rangeTombstones.isEmpty { rt.append((memtables.count + i, r)) }
        }
        sources = s
        layerOfSource = layers
        owners = owned
        memtableTombstones = mt
        runsWithTombstones = rt
        hasRangeTombstones = !mt.isEmpty || !rt.isEmpty
        if let stop = reverse ? lower : upper {
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: max(stop.count, 1), alignment: 1)
            stop.withUnsafeBytes { if let b = $0.baseAddress { bytes.copyMemory(from: b, byteCount: $0.count) } }
            stopBytes = bytes
            stopCount = stop.count
        } else {
            stopBytes = nil
            stopCount = 0
        }
        self.lower = lower
        self.upper = upper
        self.reverse = reverse
    }

    deinit { stopBytes?.deallocate() }

    package var isValid: Bool { current >= 0 }

    /// The current value; valid until the cursor moves.
    package var value: UnsafeRawBufferPointer { here.value }

    /// The kind of the current record (always `.value` unless `keepTombstones`).
    package var kind: RecordKind { here.kind }

    /// Moves to the next record (the first one on the first call). Returns false at the end.
    package func next() throws -> Bool {
        if !started {
            started = true
            for i in sources.indices {
                if reverse {
                    if let upper {
                        try upper.withUnsafeBytes { try sources[i].seekForPrevious($0) }
                        // seekForPrevious is inclusive; the upper bound is not.
                        if sources[i].isValid, sources[i].withKey({ ByteComparison.compare(upper, $0) }) == 0 {
                            try sources[i].previous()
                        }
                    } else {
                        try sources[i].seekToLast()
                    }
                } else if let lower {
                    try lower.withUnsafeBytes { try sources[i].seek($0) }
                } else {
                    try sources[i].seekToFirst()
                }
            }
            sole = !hasRangeTombstones && sources.lazy.filter(\.isValid).count == 1
        } else if let s = currentSource {
            if reverse { try s.previous() } else { try s.next() }
            if sole {
                try settleSole(s)
                return current >= 0
            }
        } else {
            return false
        }
        try settle()
        return current >= 0
    }

    private func hidden(_ k: UnsafeRawBufferPointer, rank: Int, sequence: UInt64) -> Bool {
        // A memtable's tombstone hides the records of older layers, and of its own memtable the
        // versions older than itself.
        for i in memtableTombstones.indices where memtableTombstones[i].rank <= rank {
            if let t = memtableTombstones[i].probe.newest(covering: k), memtableTombstones[i].rank < rank || t > sequence {
                return true
            }
        }
        for (r, run) in runsWithTombstones {
            if r >= rank { break }
            if run.deletes(k) { return true }
        }
        return false
    }

    /// ``settle()`` when `source` is the only source left and no range tombstones apply: the
    /// next record of `source` in the cursor's direction that is in bounds and not a hidden
    /// tombstone, without comparing sources.
    private func settleSole(_ source: RecordCursor) throws {
        let stop = stopBytes.map { UnsafeRawBufferPointer(start: $0, count: stopCount) }
        while source.isValid {
            if let stop {
                let c = source.withKey { ByteComparison.compare(stop, $0) }
                if reverse ? c > 0 : c <= 0 { break }
            }
            if source.kind == .tombstone && !keepTombstones {
                if reverse { try source.previous() } else { try source.next() }
                continue
            }
            #if STRATA_INVARIANTS
            let key = source.withKey { Array($0) }
            if let previousKey {
                let c = ByteComparison.compare(previousKey, key)
                Invariants.require(reverse ? c > 0 : c < 0, "merged cursor returned keys out of order")
            }
            previousKey = key
            #endif
            return  // `current` and `currentSource` still name `source`
        }
        current = -1
        currentSource = nil
    }

    /// From the sources' positions, finds the next visible record in the cursor's direction.
    private func settle() throws {
        while true {
            var best = -1
            var others = false
            for i in sources.indices where sources[i].isValid {
                if best < 0 {
                    best = i
                    continue
                }
                others = true
                let c = sources[i].withKey { k in sources[best].withKey { ByteComparison.compare(k, $0) } }
                if reverse ? c > 0 : c < 0 { best = i }
            }
            guard best >= 0 else { current = -1; currentSource = nil; return }
            let outOfBounds = sources[best].withKey { k -> Bool in
                if !reverse, let upper { return ByteComparison.compare(upper, k) <= 0 }
                if reverse, let lower { return ByteComparison.compare(lower, k) > 0 }
                return false
            }
            if outOfBounds { current = -1; currentSource = nil; return }
            // Older versions of the same key in other layers are shadowed: step past them.
            if others {
                for i in sources.indices where i != best && sources[i].isValid {
                    let same = sources[i].withKey { k in sources[best].withKey { ByteComparison.compare(k, $0) } } == 0
                    if same {
                        if reverse { try sources[i].previous() } else { try sources[i].next() }
                    }
                }
            }
            let isHidden = (sources[best].kind == .tombstone && !keepTombstones)
                || (hasRangeTombstones
                    && sources[best].withKey { hidden($0, rank: layerOfSource[best], sequence: sources[best].sequence) })
            if !isHidden {
                current = best
                currentSource = sources[best]
                #if STRATA_INVARIANTS
                let key = sources[best].withKey { Array($0) }
                if let previousKey {
                    let c = ByteComparison.compare(previousKey, key)
                    Invariants.require(reverse ? c > 0 : c < 0, "merged cursor returned keys out of order")
                }
                previousKey = key
                #endif
                return
            }
            if reverse { try sources[best].previous() } else { try sources[best].next() }
        }
    }
}
