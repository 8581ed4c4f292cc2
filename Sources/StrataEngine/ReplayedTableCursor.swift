@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// Newest-visible-version cursor over a memtable's ``ReplayedTable`` at a snapshot sequence: the
/// table's counterpart of ``MemtableCursor``.
@_spi(Layers) public final class ReplayedTableCursor {
    package let table: ReplayedTable
    package let sequence: UInt64
    /// The current entry; `table.entries.count` when not on one. INVARIANT: otherwise the newest
    /// entry of its key visible at `sequence`.
    @exclusivity(unchecked) @usableFromInline package private(set) var index: Int
    @usableFromInline let entries: UnsafeBufferPointer<ReplayedTable.Entry>

    package init(_ table: ReplayedTable, sequence: UInt64) {
        self.table = table
        self.sequence = sequence
        self.entries = table.entries
        self.index = table.entries.count
    }

    @inlinable @inline(__always) package var isValid: Bool { index < entries.count }

    // The accessors below only while `isValid`.
    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(entries[index].keyBytes)
    }

    @inlinable @inline(__always) package var kind: RecordKind { entries[index].isTombstone ? .tombstone : .value }

    @inlinable @inline(__always) package var value: UnsafeRawBufferPointer { entries[index].value }

    package var recordSequence: UInt64 { entries[index].sequence }

    /// From entry `i` on, the first entry visible at the snapshot (the newest visible version of
    /// the first key from `i` that has one).
    private func settleForward(from i: Int) {
        var i = i
        while i < entries.count, entries[i].sequence > sequence { i += 1 }
        index = i
    }

    /// From entry `i` back, the newest visible version of the last key at or before entry `i`'s
    /// that has one.
    private func settleBackward(from i: Int) {
        var i = i
        while i >= 0 {
            // The first entry of i's key, then its newest visible version.
            var start = i
            while start > 0, table.sameKey(start - 1, i) { start -= 1 }
            var j = start
            while j <= i, entries[j].sequence > sequence { j += 1 }
            if j <= i {
                index = j
                return
            }
            i = start - 1
        }
        index = entries.count
    }

    package func seek(_ target: UnsafeRawBufferPointer) { settleForward(from: table.lowerBound(target)) }

    package func seekToFirst() { settleForward(from: 0) }

    package func next() {
        guard isValid else { return }
        var i = index + 1
        while i < entries.count, table.sameKey(i, index) { i += 1 }
        settleForward(from: i)
    }

    package func seekForPrevious(_ target: UnsafeRawBufferPointer) { settleBackward(from: table.upperBound(target) - 1) }

    package func seekToLast() { settleBackward(from: entries.count - 1) }

    package func previous() {
        guard isValid else { return }
        var start = index
        while start > 0, table.sameKey(start - 1, index) { start -= 1 }
        settleBackward(from: start - 1)
    }
}
