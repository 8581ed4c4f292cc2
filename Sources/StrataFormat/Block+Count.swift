extension Block {
    /// The values (records of kind 0) with `lower <= key < upper` (a nil bound: none on that
    /// side), reading as few entries as it can.
    ///
    /// Restart interval `j` is the entries from restart `j` up to restart `j + 1`. With `rl` the
    /// last restart whose key is `< lower` (-1 if none), every entry of an interval before `rl` is
    /// `< lower` and every entry of an interval after it `>= lower`, since keys increase; the same
    /// holds for `upper` with `ru`. So only the entries of intervals `rl` and `ru` need their keys
    /// rebuilt and compared. A block of values only whose restarts are evenly spaced
    /// (``restartStride``) has `j × R` values before restart `j`: one interval is read per bound.
    /// Otherwise the entries are read from interval `rl` to the first key `>= upper`; or, for one
    /// bound nearer the end of the block than its start, from that bound to the end, subtracted
    /// from the block's values. Keys that do not increase — a damaged block, which `strata-dump
    /// verify` reports — give a wrong count (at most the block's values), never a fault.
    package func countValues(lower: UnsafeRawBufferPointer?, upper: UnsafeRawBufferPointer?) throws -> Int {
        if restartsOffset == 0 { return 0 }
        let rl = try lower.map { try lastRestart(below: $0) } ?? -1
        let ru = try upper.map { try lastRestart(below: $0) } ?? Int.max
        if tombstoneCount == 0 && (restartStride > 0 || restartCount == 1) {
            // Every entry a value, and `j × R` of them before restart `j` (both counted when the
            // block was loaded): the values below a bound are the entries before its restart
            // interval plus those of the interval below it — one interval read per bound.
            func below(_ bound: UnsafeRawBufferPointer, _ r: Int) throws -> Int {
                guard r >= 0 else { return 0 }
                return r * restartStride + (try walk(from: r, lower: nil, upper: bound, rl: -1, ru: r, stopAtUpper: true))
            }
            let high = try upper.map { try below($0, ru) } ?? recordCount
            let low = try lower.map { try below($0, rl) } ?? 0
            return max(high - low, 0)
        }
        let total = recordCount - tombstoneCount
        switch (lower, upper) {
        case (let l?, nil) where rl < restartCount - rl:
            // Nearer the start: the total less the values below `lower`.
            return max(total - (try walk(from: 0, lower: nil, upper: l, rl: -1, ru: rl, stopAtUpper: true)), 0)
        case (nil, let u?) where ru >= restartCount - ru:
            // Nearer the end: the total less the values from `upper` on.
            return max(total - (try walk(from: max(ru, 0), lower: u, upper: nil, rl: ru, ru: Int.max, stopAtUpper: false)), 0)
        default:
            return try walk(from: max(rl, 0), lower: lower, upper: upper, rl: rl, ru: ru, stopAtUpper: true)
        }
    }

    /// The values with `lower <= key < upper` among the entries from restart `start` on, `rl` and
    /// `ru` being the last restarts below the bounds (as in ``countValues(lower:upper:)``);
    /// with `stopAtUpper`, the walk ends at the first key `>= upper`.
    private func walk(from start: Int, lower: UnsafeRawBufferPointer?, upper: UnsafeRawBufferPointer?,
                      rl: Int, ru: Int, stopAtUpper: Bool) throws -> Int {
        let b = bytes
        let limit = restartsOffset
        var key: [UInt8] = []
        var values = 0
        var interval = start
        var p = restart(start)
        var nextRestart = interval + 1 < restartCount ? restart(interval + 1) : Int.max
        while p < limit {
            if p == nextRestart {
                interval += 1
                nextRestart = interval + 1 < restartCount ? restart(interval + 1) : Int.max
            }
            if stopAtUpper && interval > ru { break }
            let entry = p
            guard let shared = Varint.readLength(b, at: &p, limit: limit),
                  let unshared = Varint.readLength(b, at: &p, limit: limit),
                  let vlen = Varint.readLength(b, at: &p, limit: limit),
                  p < limit, let kind = RecordKind(rawValue: b[p]),
                  unshared <= limit - p - 1, vlen <= limit - p - 1 - unshared
            else {
                throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(entry): malformed")
            }
            let suffix = p + 1
            p = suffix + unshared + vlen
            var atOrAboveLower = interval > rl
            var belowUpper = interval < ru
            if interval == rl || interval == ru {
                guard shared <= key.count else {
                    throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(entry): shares \(shared) bytes of a \(key.count)-byte key")
                }
                key.removeSubrange(shared...)
                key.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[suffix..<(suffix + unshared)]))
                if interval == rl { atOrAboveLower = lower.map { ByteComparison.compare(key, $0) >= 0 } ?? true }
                if interval == ru { belowUpper = upper.map { ByteComparison.compare(key, $0) < 0 } ?? true }
            }
            if !belowUpper && stopAtUpper { break }
            if kind == .value && atOrAboveLower && belowUpper { values += 1 }
        }
        return values
    }

    /// The last restart whose key (stored whole) is `< target`; -1 if there is none.
    private func lastRestart(below target: UnsafeRawBufferPointer) throws -> Int {
        var lo = -1, hi = restartCount - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if ByteComparison.compare(try restartKey(mid), target) < 0 { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    /// The key at restart `i`, read in place; its entry MUST store it whole.
    private func restartKey(_ i: Int) throws -> UnsafeRawBufferPointer {
        let offset = restart(i)
        var p = offset
        let limit = restartsOffset
        guard let shared = Varint.readLength(bytes, at: &p, limit: limit),
              let unshared = Varint.readLength(bytes, at: &p, limit: limit),
              Varint.readLength(bytes, at: &p, limit: limit) != nil,
              shared == 0, p < limit, unshared <= limit - p - 1
        else {
            throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(offset): malformed restart entry")
        }
        return UnsafeRawBufferPointer(rebasing: bytes[(p + 1)..<(p + 1 + unshared)])
    }
}
