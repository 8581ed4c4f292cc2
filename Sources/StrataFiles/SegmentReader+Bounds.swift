@_spi(Layers) import StrataFormat

extension SegmentReader {
    /// Checks the properties' key bounds against the index (FORMAT.md 5.11, item 7): readers pick
    /// the segments a key can be in by these bounds, so a wrong bound would hide keys from point
    /// reads and counts while scans show them. The largest key is the last key of the root index
    /// (the last key of the last data block); the smallest is the first key of the first data
    /// block, reached down the index's first entries (one block per level). A segment without
    /// data blocks has empty bounds. The keyspace summaries start and end at the same keys.
    /// A fault names the properties block.
    package func checkKeyBounds() throws {
        let p = properties
        func bad(_ why: String) -> StrataError {
            .corrupted(file: path, offset: Int(footer.properties.offset), reason: why)
        }
        var root = BlockCursor(rootBlock)
        try root.seekToLast()
        guard root.isValid else {
            guard p.records == 0, p.smallestKey.isEmpty, p.largestKey.isEmpty, p.keyspaces.isEmpty else {
                throw bad("properties give \(p.records) records and the key range \(TupleKey.describe(p.smallestKey))…\(TupleKey.describe(p.largestKey)), but the index is empty")
            }
            return
        }
        let largest = root.key
        guard p.records > 0, p.largestKey == largest, ByteComparison.compare(p.smallestKey, largest) <= 0,
              p.keyspaces.last?.largestKey == largest else {
            throw bad("properties give \(p.records) records and the key range \(TupleKey.describe(p.smallestKey))…\(TupleKey.describe(p.largestKey)); the index ends at \(TupleKey.describe(largest))")
        }
        // The first key is in the first data block. A block that does not read is not this check's
        // fault to report: the read that needs it reports it (an open does not fail for a damaged
        // data block, FORMAT.md 5.11).
        let smallest: [UInt8]
        do {
            var block = rootBlock
            for _ in 0..<footer.indexHeight {
                var c = BlockCursor(block)
                try c.seekToFirst()
                guard c.isValid else { return }
                block = try self.block(try childHandle(kind: c.kind, value: c.value, in: block))
            }
            var first = BlockCursor(block)
            try first.seekToFirst()
            guard first.isValid else { return }
            smallest = first.key
        } catch StrataError.corrupted {
            return
        }
        guard p.smallestKey == smallest, p.keyspaces.first?.smallestKey == smallest else {
            throw bad("properties and their keyspace summaries give the smallest key \(TupleKey.describe(p.smallestKey)); the first data block starts at \(TupleKey.describe(smallest))")
        }
    }
}
