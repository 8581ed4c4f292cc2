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
    /// The writes recovery replayed into this memtable, sorted over the logs' bytes; older than
    /// every write in `list` (FORMAT.md 4.5). Nil for a memtable that only took writes of this run.
    package let replayed: ReplayedTable?
    /// The log that new writes to this memtable go to (for a memtable recovery sealed, the newest
    /// log it replayed).
    package let logNumber: UInt64
    /// Older logs whose records recovery replayed into this memtable, oldest first; empty for a
    /// memtable that only took writes of this run.
    package let replayedLogs: [UInt64]
    /// Every range tombstone in arrival order, and their index for lookups.
    private let tombstones = Mutex<(all: [SequencedRangeTombstone], index: RangeTombstoneIndex)>(([], RangeTombstoneIndex()))
    private let tombstoneBytes = Atomic<Int>(0)

    /// A memtable for `logNumber`'s writes; recovery hands in the older logs it replayed into it
    /// and their records, `replayed`, whose range deletions join the memtable's.
    package init(logNumber: UInt64, replayedLogs: [UInt64] = [], replayed: ReplayedTable? = nil) {
        self.logNumber = logNumber
        self.replayedLogs = replayedLogs
        self.replayed = replayed.flatMap { $0.isEmpty ? nil : $0 }
        if let replayed, !replayed.tombstones.isEmpty { add(replayed.tombstones) }
    }

    /// The oldest log holding writes of this memtable: what the manifest's `logNumber` must not
    /// pass until the memtable is flushed.
    package var oldestLogNumber: UInt64 { replayedLogs.first ?? logNumber }

    /// Every log holding writes of this memtable, oldest first: deleted once it is flushed.
    package var logNumbers: [UInt64] { replayedLogs + [logNumber] }

    package var approximateSize: Int {
        list.memoryUsage + tombstoneBytes.load(ordering: .relaxed) + (replayed?.byteCount ?? 0)
    }

    package var isEmpty: Bool {
        list.first == nil && (replayed?.isEmpty ?? true) && tombstones.withLock { $0.all.isEmpty }
    }

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

    private struct Point {
        var key: UnsafeRawBufferPointer
        var value: UnsafeRawBufferPointer
        var sequence: UInt64
        var kind: RecordKind
        /// The key's first 8 bytes big-endian (zero-padded, ``KeyWindow``): orders most pairs
        /// without a memcmp.
        var head: UInt64

        init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sequence: UInt64, kind: RecordKind) {
            self.key = key
            self.value = value
            self.sequence = sequence
            self.kind = kind
            self.head = KeyWindow.head(key)
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
                if ByteComparison.compare(key, second) < 0 {
                    add([SequencedRangeTombstone(start: Array(key), end: Array(second), sequence: seq)])
                }
            }
            seq += 1
        }
    }

    /// Records range deletions (each with `start < end`), in arrival order.
    private func add(_ added: [SequencedRangeTombstone]) {
        let indexGrowth = tombstones.withLock { state in
            let before = state.index.approximateBytes
            for t in added {
                state.all.append(t)
                let all = state.all
                state.index.add(t, all: all)
            }
            return state.index.approximateBytes - before
        }
        // The tombstones themselves, and what the index allocated for them (O(log n) nodes each).
        let own = added.reduce(0) { $0 + $1.start.count + $1.end.count + 64 }
        tombstoneBytes.add(own + indexGrowth, ordering: .relaxed)
    }

    /// Inserts `points` in (key, newest first) order, each insert starting after the previous.
    private func insertInKeyOrder(_ points: inout [Point]) {
        func precedes(_ a: Point, _ b: Point) -> Bool {
            KeyWindow.precedes(a.head, a.key, a.sequence, b.head, b.key, b.sequence)
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
        } else if let table = replayed, let i = table.find(key, sequence: sequence) {
            // Every write of `list` is newer than the replayed ones: only a miss there looks here.
            let e = table.entries[i]
            pointSequence = e.sequence
            result = e.isTombstone ? .deleted : .value(Array(e.value))
        }
        guard tombstoneBytes.load(ordering: .relaxed) > 0 else { return result }
        let deletedAt = tombstones.withLock { $0.index.newest(covering: key, at: sequence).sequence }
        if let d = deletedAt, d > (pointSequence ?? 0) || pointSequence == nil { return .deleted }
        return result
    }
}
