@_spi(Layers) import StrataFormat

/// Walks the records of one segment in key order, forward or backward, through its B-tree index.
///
/// `levels[0]` is a cursor in the root index block and `levels[height - 1]` in a leaf index block;
/// `data` is in the data block the leaf cursor points at. Each index entry's key is the last key of
/// the block (subtree) it points to, so the first entry `>= target` leads to the subtree holding
/// the first record `>= target`.
///
/// A class, so that the merge reads the current record in place: reading through an optional
/// struct copied the cursor (and retained its blocks) on every access.
@_spi(Layers) public final class SegmentCursor {
    package private(set) var reader: SegmentReader
    @exclusivity(unchecked) private var levels: [BlockCursor] = []
    /// The data block cursor; meaningful only while `positioned`.
    @exclusivity(unchecked) @usableFromInline var data: BlockCursor
    @exclusivity(unchecked) @usableFromInline var positioned = false
    /// Whether the blocks it decodes go into the block cache (LevelDB's `fill_cache`).
    private(set) var fillCache: Bool

    package init(_ reader: SegmentReader, fillCache: Bool = true) {
        self.reader = reader
        self.data = BlockCursor(reader.rootBlock)
        self.fillCache = fillCache
    }

    /// Points the cursor at another segment; it must be positioned again before use.
    package func retarget(_ reader: SegmentReader) {
        self.reader = reader
        positioned = false
    }

    /// Points the cursor at another segment, with another `fillCache` (a cursor reused for another
    /// read); it must be positioned again before use.
    package func retarget(_ reader: SegmentReader, fillCache: Bool) {
        retarget(reader)
        self.fillCache = fillCache
    }

    /// Lets go of the blocks below the root that the cursor holds, keeping its buffers; it must be
    /// positioned again before use.
    package func releaseBlocks() {
        positioned = false
        let root = reader.rootBlock
        data.reset(root)
        for i in levels.indices { levels[i].reset(root) }
    }

    @inlinable @inline(__always) package var isValid: Bool { positioned && data.current != nil }
    /// The current key; only while ``isValid``.
    package var key: [UInt8] { data.key }

    @inlinable @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try data.key.withUnsafeBytes(body)  // the stored key alone, not a copy of `data`
    }
    @inlinable @inline(__always) package var kind: RecordKind { data.kind }
    @inlinable @inline(__always) package var value: UnsafeRawBufferPointer { data.value }

    private enum Position { case first, last, atOrAfter, atOrBefore }

    private func child(of cursor: BlockCursor) throws -> Block {
        try reader.block(try reader.childHandle(kind: cursor.kind, value: cursor.value, in: cursor.block), fillCache: fillCache)
    }

    /// Positions every level below `level` (whose cursor is valid) per `position`. The cursors
    /// below are reset onto their new blocks in place, keeping their buffers.
    private func descend(from level: Int, _ position: Position, _ target: UnsafeRawBufferPointer) throws {
        positioned = false  // until the data level is positioned (not after a throw)
        var i = level
        while true {
            let block = try child(of: levels[i])
            if i + 1 < levels.count {
                levels[i + 1].reset(block)
                switch position {
                case .first: try levels[i + 1].seekToFirst()
                case .last: try levels[i + 1].seekToLast()
                case .atOrAfter: try levels[i + 1].seek(target)
                case .atOrBefore:
                    try levels[i + 1].seek(target)
                    if !levels[i + 1].isValid { try levels[i + 1].seekToLast() }
                }
                if !levels[i + 1].isValid { positioned = false; return }
                i += 1
            } else {
                data.reset(block)
                switch position {
                case .first: try data.seekToFirst()
                case .last: try data.seekToLast()
                case .atOrAfter: try data.seek(target)
                case .atOrBefore: try data.seekForPrevious(target)
                }
                positioned = true
                return
            }
        }
    }

    /// Puts the root level on the reader's root block, keeping the cursors' buffers when the
    /// index height is unchanged (the levels below are reset as `descend` reaches them).
    private func reset() {
        let height = Int(reader.footer.indexHeight)
        if levels.count == height {
            levels[0].reset(reader.rootBlock)
        } else {
            levels = [BlockCursor](repeating: BlockCursor(reader.rootBlock), count: height)
        }
        positioned = false
    }

    package func seekToFirst() throws {
        reset()
        try levels[0].seekToFirst()
        guard levels[0].isValid else { return }
        try descend(from: 0, .first, UnsafeRawBufferPointer(start: nil, count: 0))
        try skipForward()
    }

    package func seekToLast() throws {
        reset()
        try levels[0].seekToLast()
        guard levels[0].isValid else { return }
        try descend(from: 0, .last, UnsafeRawBufferPointer(start: nil, count: 0))
        try skipBackward()
    }

    /// The first record `>= target`.
    package func seek(_ target: UnsafeRawBufferPointer) throws {
        reset()
        try levels[0].seek(target)
        guard levels[0].isValid else { return }
        try descend(from: 0, .atOrAfter, target)
        try skipForward()
    }

    /// The last record `<= target`.
    package func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        reset()
        try levels[0].seek(target)
        if !levels[0].isValid { try levels[0].seekToLast() }
        guard levels[0].isValid else { return }
        try descend(from: 0, .atOrBefore, target)
        try skipBackward()
    }

    @inlinable @inline(__always)
    package func next() throws {
        guard positioned else { return }
        try data.next()
        if !data.isValid { try skipForward() }
    }

    package func previous() throws {
        guard positioned else { return }
        try data.previous()
        try skipBackward()
    }

    /// While the data cursor is exhausted, moves to the first record of the next data block.
    @usableFromInline func skipForward() throws {
        while positioned && !data.isValid {
            var i = levels.count - 1
            while i >= 0 {
                try levels[i].next()
                if levels[i].isValid { break }
                i -= 1
            }
            if i < 0 { positioned = false; return }
            try descend(from: i, .first, UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// While the data cursor is exhausted, moves to the last record of the previous data block.
    private func skipBackward() throws {
        while positioned && !data.isValid {
            var i = levels.count - 1
            while i >= 0 {
                try levels[i].previous()
                if levels[i].isValid { break }
                i -= 1
            }
            if i < 0 { positioned = false; return }
            try descend(from: i, .last, UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }
}
