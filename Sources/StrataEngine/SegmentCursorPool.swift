import Synchronization
@_spi(Layers) import StrataFiles

/// The segment cursors of a sorted run that finished their walks, kept for the next cursors over
/// the run (``RunCursor``): a read takes one with its buffers (index levels, key, the entries
/// remembered for backward steps) instead of allocating them again. Keeps at most ``capacity``;
/// thread-safe.
package final class SegmentCursorPool: Sendable {
    /// The most cursors kept: enough for the threads reading one run at once.
    package static let capacity = 8

    /// A cursor in the pool. REQUIRES: nothing else refers to it while it is in the pool (a
    /// ``RunCursor`` gives its cursor back from deinit and a taker owns it alone), so moving it
    /// between threads shares no state.
    private struct Parked: @unchecked Sendable {
        let cursor: SegmentCursor
    }

    private let parked = Mutex<[Parked]>([])

    package init() {}

    /// A kept cursor, pointed at `reader`, or nil when none is kept.
    package func take(for reader: SegmentReader, fillCache: Bool) -> SegmentCursor? {
        guard let p = parked.withLock({ $0.popLast() }) else { return nil }
        p.cursor.retarget(reader, fillCache: fillCache)
        return p.cursor
    }

    /// Keeps `cursor` (which its owner no longer uses) unless the pool is full. Its blocks are
    /// let go first, so a kept cursor holds only its buffers.
    package func give(_ cursor: SegmentCursor) {
        cursor.releaseBlocks()
        let p = Parked(cursor: cursor)
        parked.withLock { if $0.count < Self.capacity { $0.append(p) } }
    }

    /// The number of cursors kept (tests).
    package var count: Int { parked.withLock { $0.count } }
}
