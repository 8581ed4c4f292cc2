@_spi(Layers) import StrataFormat

extension SegmentReader {
    /// The number of values (point records of kind 0, not tombstones) this segment holds with
    /// `lower <= key < upper` (nil `upper`: no upper bound), or nil when only a scan can tell: a
    /// version-1 segment whose point keys the range does not cover whole.
    ///
    /// A range covering every point key is the properties' `records − tombstones`. Otherwise
    /// (version 2) it descends the index once per bound (FORMAT.md 5.5): an entry whose subtree
    /// lies wholly inside the range adds its stored counts; only the entries the two bounds fall
    /// in are opened, down to at most two data blocks (``Block/countValues(lower:upper:)``),
    /// whose leaf entries must give the counts the blocks found when they were loaded. No sum may
    /// exceed the properties' count: a count that cannot be right is
    /// ``StrataError/corrupted(file:offset:reason:)``; an entry of a block summed whole that is
    /// wrong but possible is found by `strata-dump verify`.
    package func countValues(lower: UnsafeRawBufferPointer, upper: UnsafeRawBufferPointer?) throws -> Int? {
        let props = properties
        guard props.records > 0 else { return 0 }
        if let upper, ByteComparison.compare(lower, upper) >= 0 { return 0 }
        // Every record takes at least 4 bytes of a data block (three varints and a kind), and an
        // LZ4 block decodes to less than 256 times its size: a file of n bytes holds fewer than
        // 64n records. A count beyond that is a damaged or forged properties block.
        let most = UInt64(fileSize).multipliedReportingOverflow(by: 64)
        guard props.tombstones <= props.records, most.overflow || props.records <= most.partialValue,
              props.records <= UInt64(Int.max)
        else {
            throw StrataError.corrupted(file: path, offset: Int(clamping: footer.properties.offset),
                                        reason: "properties count \(props.tombstones) tombstones of \(props.records) records, impossible in \(fileSize) bytes")
        }
        let total = Int(props.records - props.tombstones)
        let coversFirst = ByteComparison.compare(props.smallestKey, lower) >= 0
        let coversLast = upper.map { ByteComparison.compare(props.largestKey, $0) < 0 } ?? true
        if coversFirst && coversLast { return total }
        guard footer.formatVersion >= 2 else { return nil }
        return try countValues(in: rootBlock, depth: 0, lower: coversFirst ? nil : lower,
                               upper: coversLast ? nil : upper, claim: nil, budget: total)
    }

    /// The values of the subtree of `block` (at index level `depth`; a data block at the footer's
    /// height) within the bounds, at most `budget`. `claim` is the counts of the entry naming
    /// `block`, with the index block holding that entry.
    private func countValues(in block: Block, depth: Int, lower: UnsafeRawBufferPointer?, upper: UnsafeRawBufferPointer?,
                             claim: (counts: RecordCounts, in: Block)?, budget: Int) throws -> Int {
        if depth == Int(footer.indexHeight) {
            // The block counted its records when it was loaded: its entry must say the same.
            if let claim, claim.counts != RecordCounts(records: UInt64(block.recordCount), tombstones: UInt64(block.tombstoneCount)) {
                throw StrataError.corrupted(file: path, offset: claim.in.fileOffset, reason:
                    "index entry counts \(claim.counts.records) records, \(claim.counts.tombstones) tombstones; its data block at \(block.fileOffset) holds \(block.recordCount), \(block.tombstoneCount)")
            }
            return try block.countValues(lower: lower, upper: upper)
        }
        var cursor = BlockCursor(block)
        if let lower { try cursor.seek(lower) } else { try cursor.seekToFirst() }
        var sum = 0
        var first = true
        while cursor.isValid {
            let entry = try indexEntry(kind: cursor.kind, value: cursor.value, in: block)
            guard let counts = entry.counts else {
                throw StrataError.corrupted(file: path, offset: block.fileOffset, reason: "index entry without counts")
            }
            // The first entry >= lower leads to the only subtree that can straddle lower; the
            // first entry >= upper to the only one that can straddle upper, and ends the walk.
            let straddlesLower = first && lower != nil
            let straddlesUpper = upper.map { u in cursor.withKey { ByteComparison.compare($0, u) >= 0 } } ?? false
            let n: Int
            if straddlesLower || straddlesUpper {
                n = try countValues(in: try self.block(entry.handle), depth: depth + 1,
                                    lower: straddlesLower ? lower : nil, upper: straddlesUpper ? upper : nil,
                                    claim: (counts, block), budget: budget - sum)
            } else {
                // indexEntry checked tombstones <= records <= properties.records <= Int.max.
                n = Int(counts.values)
            }
            guard n <= budget - sum else {
                throw StrataError.corrupted(file: path, offset: block.fileOffset, reason:
                    "index entries count more values than the properties' \(properties.records) records allow")
            }
            sum += n
            if straddlesUpper { break }
            first = false
            try cursor.next()
        }
        return sum
    }
}
