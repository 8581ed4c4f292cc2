/// The point records of one data block, counted by ``Block/tally(lower:upper:)``: all of them,
/// and the values (records of kind 0) whose keys lie in a range.
struct BlockTally: Equatable {
    var records = 0
    var tombstones = 0
    /// Values with `lower <= key < upper`.
    var valuesInRange = 0
}

extension Block {
    /// Counts the block's records, and its values with `lower <= key < upper` (a nil bound: no
    /// bound on that side), without materializing a value or most keys.
    ///
    /// Restart interval `j` is the entries from restart `j` up to restart `j + 1`. With `rl` the
    /// last restart whose key is `< lower` (-1 if none), every entry of an interval before `rl` is
    /// `< lower` and every entry of an interval after it `>= lower`, since keys increase; the same
    /// holds for `upper` with `ru`. So only the entries of intervals `rl` and `ru` need their keys
    /// rebuilt and compared; the others are classified by their interval alone. (Keys that do not
    /// increase — a damaged block, which `strata-dump verify` reports — give a wrong count,
    /// never a fault.)
    func tally(lower: UnsafeRawBufferPointer?, upper: UnsafeRawBufferPointer?) throws -> BlockTally {
        var t = BlockTally()
        if restartsOffset == 0 { return t }
        let rl = try lower.map { try lastRestart(below: $0) } ?? -1
        let ru = try upper.map { try lastRestart(below: $0) } ?? Int.max
        let b = bytes
        let limit = restartsOffset
        var key: [UInt8] = []
        var p = 0
        var interval = 0
        var nextRestart = restartCount > 1 ? restart(1) : Int.max
        while p < limit {
            if p == nextRestart {
                interval += 1
                nextRestart = interval + 1 < restartCount ? restart(interval + 1) : Int.max
            }
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
            t.records += 1
            let inRange: Bool
            if interval == rl || interval == ru {
                // An interval starts at a restart (shared = 0), so the key is rebuilt from there.
                guard shared <= key.count else {
                    throw StrataError.corrupted(file: file, offset: fileOffset, reason: "block entry at \(entry): shares \(shared) bytes of a \(key.count)-byte key")
                }
                key.removeSubrange(shared...)
                key.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[suffix..<(suffix + unshared)]))
                let atOrAboveLower = interval > rl || (lower.map { ByteComparison.compare(key, $0) >= 0 } ?? true)
                let belowUpper = interval < ru || (upper.map { ByteComparison.compare(key, $0) < 0 } ?? true)
                inRange = atOrAboveLower && belowUpper
            } else {
                inRange = interval > rl && interval < ru
            }
            if kind == .tombstone {
                t.tombstones += 1
            } else if inRange {
                t.valuesInRange += 1
            }
        }
        return t
    }

    /// The values with `lower <= key < upper` (a nil bound: none on that side), reading as few
    /// entries as it can: from the restart interval of `lower` to the first key `>= upper`; or,
    /// given `totalValues` (the block's values, from its index entry) and a bound nearer the end
    /// of the block than its start, the values on the near side subtracted from the total (so the
    /// result may be below 0 or above `totalValues` when that total is wrong: the caller checks).
    /// Keys that do not increase give a wrong count, never a fault (see ``tally(lower:upper:)``).
    func countValues(lower: UnsafeRawBufferPointer?, upper: UnsafeRawBufferPointer?, totalValues: Int?) throws -> Int {
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
        switch (lower, upper, totalValues) {
        case (let l?, nil, let total?) where rl < restartCount - rl:
            // Nearer the start: the total less the values below `lower`.
            return total - (try walk(from: 0, lower: nil, upper: l, rl: -1, ru: rl, stopAtUpper: true))
        case (nil, let u?, let total?) where ru >= restartCount - ru:
            // Nearer the end: the total less the values from `upper` on.
            return total - (try walk(from: max(ru, 0), lower: u, upper: nil, rl: ru, ru: Int.max, stopAtUpper: false))
        default:
            return try walk(from: max(rl, 0), lower: lower, upper: upper, rl: rl, ru: ru, stopAtUpper: true)
        }
    }

    /// The values with `lower <= key < upper` among the entries from restart `start` on, `rl` and
    /// `ru` being the last restarts below the bounds (as in ``tally(lower:upper:)``); with
    /// `stopAtUpper`, the walk ends at the first key `>= upper`.
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
