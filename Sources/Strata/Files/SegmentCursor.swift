/// Walks the records of one segment in key order, forward or backward, through its B-tree index.
///
/// `levels[0]` is a cursor in the root index block and `levels[height - 1]` in a leaf index block;
/// `data` is in the data block the leaf cursor points at. Each index entry's key is the last key of
/// the block (subtree) it points to, so the first entry `>= target` leads to the subtree holding
/// the first record `>= target`.
struct SegmentCursor {
    let reader: SegmentReader
    private var levels: [BlockCursor] = []
    private var data: BlockCursor?

    init(_ reader: SegmentReader) {
        self.reader = reader
    }

    var isValid: Bool { data?.isValid ?? false }
    /// The current key; only while ``isValid``.
    var key: [UInt8] { data!.key }

    @inline(__always)
    func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try data!.withKey(body)
    }
    var kind: RecordKind { data!.kind }
    var value: UnsafeRawBufferPointer { data!.value }

    private enum Position { case first, last, atOrAfter, atOrBefore }

    private func child(of cursor: BlockCursor) throws -> Block {
        guard let h = BlockHandle.decode(cursor.value) else {
            throw StrataError.corrupted(file: reader.path, offset: cursor.block.fileOffset, reason: "malformed index entry")
        }
        return try reader.block(h)
    }

    /// Positions every level below `level` (whose cursor is valid) per `position`.
    private mutating func descend(from level: Int, _ position: Position, _ target: UnsafeRawBufferPointer) throws {
        var i = level
        while true {
            let block = try child(of: levels[i])
            var c = BlockCursor(block)
            switch position {
            case .first: try c.seekToFirst()
            case .last: try c.seekToLast()
            case .atOrAfter: try c.seek(target)
            case .atOrBefore:
                if i + 1 < levels.count {
                    try c.seek(target)
                    if !c.isValid { try c.seekToLast() }
                } else {
                    try c.seekForPrevious(target)
                }
            }
            if i + 1 < levels.count {
                levels[i + 1] = c
                if !c.isValid { data = nil; return }
                i += 1
            } else {
                data = c
                return
            }
        }
    }

    private mutating func reset() {
        let height = Int(reader.footer.indexHeight)
        let root = BlockCursor(reader.rootBlock)
        levels = [BlockCursor](repeating: root, count: height)
        data = nil
    }

    mutating func seekToFirst() throws {
        reset()
        try levels[0].seekToFirst()
        guard levels[0].isValid else { return }
        try descend(from: 0, .first, UnsafeRawBufferPointer(start: nil, count: 0))
        try skipForward()
    }

    mutating func seekToLast() throws {
        reset()
        try levels[0].seekToLast()
        guard levels[0].isValid else { return }
        try descend(from: 0, .last, UnsafeRawBufferPointer(start: nil, count: 0))
        try skipBackward()
    }

    /// The first record `>= target`.
    mutating func seek(_ target: UnsafeRawBufferPointer) throws {
        reset()
        try levels[0].seek(target)
        guard levels[0].isValid else { return }
        try descend(from: 0, .atOrAfter, target)
        try skipForward()
    }

    /// The last record `<= target`.
    mutating func seekForPrevious(_ target: UnsafeRawBufferPointer) throws {
        reset()
        try levels[0].seek(target)
        if !levels[0].isValid { try levels[0].seekToLast() }
        guard levels[0].isValid else { return }
        try descend(from: 0, .atOrBefore, target)
        try skipBackward()
    }

    mutating func next() throws {
        guard data != nil else { return }
        try data!.next()
        try skipForward()
    }

    mutating func previous() throws {
        guard data != nil else { return }
        try data!.previous()
        try skipBackward()
    }

    /// While the data cursor is exhausted, moves to the first record of the next data block.
    private mutating func skipForward() throws {
        while data != nil && !data!.isValid {
            var i = levels.count - 1
            while i >= 0 {
                try levels[i].next()
                if levels[i].isValid { break }
                i -= 1
            }
            if i < 0 { data = nil; return }
            try descend(from: i, .first, UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// While the data cursor is exhausted, moves to the last record of the previous data block.
    private mutating func skipBackward() throws {
        while data != nil && !data!.isValid {
            var i = levels.count - 1
            while i >= 0 {
                try levels[i].previous()
                if levels[i].isValid { break }
                i -= 1
            }
            if i < 0 { data = nil; return }
            try descend(from: i, .last, UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }
}
