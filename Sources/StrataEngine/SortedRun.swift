@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A sorted run: segments whose point keys do not overlap, in key order, written together by one
/// flush or compaction. Its range tombstones apply to older runs only, never to its own records.
package final class SortedRun: Sendable {
    package let segments: [SegmentReader]
    /// The union of the segments' range tombstones: sorted by start, disjoint.
    package let rangeTombstones: [RangeTombstone]
    package let fileSize: UInt64
    package let records: UInt64
    /// Per segment, in order: the smallest and largest point key, and whether it has any record.
    private let smallestKeys: [[UInt8]]
    private let largestKeys: [[UInt8]]
    private let hasRecords: [Bool]
    /// Segment cursors of earlier reads of the run, for the next ones (``RunCursor``).
    package let cursorPool = SegmentCursorPool()

    package init(segments: [SegmentReader]) {
        // Order by first point key; segments holding only range tombstones sort first.
        let sorted = segments.sorted { ByteComparison.compare($0.properties.smallestKey, $1.properties.smallestKey) < 0 }
        self.segments = sorted
        smallestKeys = sorted.map(\.properties.smallestKey)
        largestKeys = sorted.map(\.properties.largestKey)
        hasRecords = sorted.map { $0.properties.records > 0 }
        rangeTombstones = Self.mergedRangeTombstones(of: segments)
        fileSize = segments.reduce(0) { $0 + UInt64($1.fileSize) }
        records = segments.reduce(0) { $0 + $1.properties.records }
    }

    package var numbers: [UInt64] { segments.map(\.number) }

    #if STRATA_INVARIANTS
    /// What a run the engine made (a flush's or a compaction's) holds: a point lookup picks one
    /// segment by its key range, so the ranges of the segments with records are disjoint. (Runs
    /// read from files are input, not invariants: refusing a crafted one is recovery's job.)
    package func checkInvariants() {
        let withRecords = segments.filter { $0.properties.records > 0 }
        for (a, b) in zip(withRecords, withRecords.dropFirst()) {
            Invariants.require(ByteComparison.compare(a.properties.largestKey, b.properties.smallestKey) < 0,
                               "segments \(a.number) and \(b.number) of one run hold overlapping keys")
        }
    }
    #endif

    /// The range tombstones of `segments` (of one run or of several), sorted, with overlapping
    /// and touching ranges merged.
    package static func mergedRangeTombstones(of segments: [SegmentReader]) -> [RangeTombstone] {
        var all = segments.flatMap(\.rangeTombstones)
        all.sort { ByteComparison.compare($0.start, $1.start) < 0 }
        var merged: [RangeTombstone] = []
        for t in all {
            if let last = merged.last, ByteComparison.compare(t.start, last.end) <= 0 {
                if ByteComparison.compare(t.end, last.end) > 0 { merged[merged.count - 1].end = t.end }
            } else {
                merged.append(t)
            }
        }
        return merged
    }

    /// Whether a range tombstone of this run covers `key`.
    package func deletes(_ key: UnsafeRawBufferPointer) -> Bool {
        guard !rangeTombstones.isEmpty else { return false }
        // The last tombstone starting at or before key.
        var lo = 0, hi = rangeTombstones.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ByteComparison.compare(rangeTombstones[mid].start, key) <= 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo > 0 && ByteComparison.compare(rangeTombstones[lo - 1].end, key) > 0
    }

    /// The index of the first segment whose largest point key is `>= key`.
    package func segmentIndex(atOrAfter key: UnsafeRawBufferPointer) -> Int {
        var lo = 0, hi = segments.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if !hasRecords[mid] || ByteComparison.compare(largestKeys[mid], key) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The record this run holds for `key`, ignoring its own range tombstones.
    package func get(_ key: UnsafeRawBufferPointer, hash: UInt64) throws -> Lookup {
        let i = segmentIndex(atOrAfter: key)
        if i < segments.count, hasRecords[i], ByteComparison.compare(smallestKeys[i], key) <= 0,
           let (kind, value) = try segments[i].get(key, hash: hash) {
            return kind == .tombstone ? .deleted : .value(value)
        }
        return .notFound
    }
}

/// One consistent set of sorted runs, newest first. Immutable: a flush or compaction installs a
/// new version; readers keep the one they started with (and its files) alive.
package final class Version: Sendable {
    package let runs: [SortedRun]

    package init(runs: [SortedRun]) {
        self.runs = runs
    }

    package var fileSize: UInt64 { runs.reduce(0) { $0 + $1.fileSize } }
}
