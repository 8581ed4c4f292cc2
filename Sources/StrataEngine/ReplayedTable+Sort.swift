import Dispatch
@_spi(Layers) import StrataFormat

extension ReplayedTable {
    /// Whether entry `x` comes before entry `y` in memtable order.
    @inline(__always)
    private static func precedes(_ x: Entry, _ y: Entry) -> Bool {
        KeyWindow.precedes(x.head, x.keyBytes, x.sequence, y.head, y.keyBytes, y.sequence)
    }

    /// Moves `source[0..<count]` to `target` in table order: a most-significant-digit radix sort,
    /// a byte at a time from the keys' first 8 bytes (`head`); a byte every entry of a range
    /// shares costs a count and no move; a range whose heads are all equal moves on to the keys'
    /// next 8 bytes (the heads are restored afterwards); small ranges are finished by insertion
    /// sort on whole keys. Random keys take one pass over all entries and a second within
    /// cache-sized ranges; a comparison sort cost several times more. The first pass takes its
    /// counts from `histograms` (for each of the 8 bytes of the heads, most significant first,
    /// 256 counts), made while `source` was filled, and moves the entries straight to `target`.
    /// REQUIRES: `target` has room for `count` entries; `source` is scratch afterwards.
    static func sort(moving source: UnsafeMutablePointer<Entry>, count: Int, into target: UnsafeMutablePointer<Entry>,
                     histograms: UnsafePointer<Int>) {
        // The first byte the heads do not all share.
        let split = count > 32 ? (0..<8).first { b in
            histograms[b << 8 | Int(truncatingIfNeeded: source[0].head >> UInt64(56 - 8 * b)) & 0xFF] != count
        } : nil
        guard let split else {
            target.update(from: source, count: count)
            if count > 1 { radixSort(target, count: count, scratch: source, shift: 56, window: 0) }
            return
        }
        let shift = 56 - 8 * split
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 256) { ends in
            for d in 0..<256 { ends[d] = histograms[split << 8 | d] }
            distribute(source, count: count, into: target, shift: shift, counts: ends.baseAddress!)
            // The buckets are sorted apart from one another: in two halves at once when there
            // are many entries (the rest of an open waits for this sort).
            var bounds: [(begin: Int, end: Int)] = []
            var begin = 0
            for d in 0..<256 where ends[d] > begin {
                bounds.append((begin, ends[d]))
                begin = ends[d]
            }
            let buckets = Buckets(target: target, source: source, bounds: bounds, shift: shift - 8)
            if count >= parallelSortMinimum, bounds.count > 1 {
                let middle = bounds.firstIndex { $0.end >= count / 2 }.map { max($0, 1) } ?? bounds.count - 1
                let halves = [0..<middle, middle..<bounds.count]
                DispatchQueue.concurrentPerform(iterations: 2) { half in buckets.sort(halves[half]) }
            } else {
                buckets.sort(bounds.indices)
            }
        }
    }

    /// Below this many entries, the buckets are sorted on the calling thread alone.
    package static var parallelSortMinimum: Int { 1 << 16 }

    /// The buckets of a sort's first pass, each sorted on its own. INVARIANT: the bounds are
    /// disjoint ranges of `target` and `source`, so that two threads sorting different buckets
    /// touch different memory (hence `@unchecked Sendable`).
    private struct Buckets: @unchecked Sendable {
        let target: UnsafeMutablePointer<Entry>
        let source: UnsafeMutablePointer<Entry>
        let bounds: [(begin: Int, end: Int)]
        let shift: Int

        func sort(_ range: Range<Int>) {
            for (begin, end) in bounds[range] {
                ReplayedTable.radixSort(target + begin, count: end - begin, scratch: source + begin, shift: shift, window: 0)
            }
        }
    }

    /// Moves `source[0..<count]` to `target` in order of the heads' byte at `shift` (stable).
    /// `counts` holds, for each value of that byte, how many entries have it; on return, the end
    /// of its bucket in `target`. REQUIRES: `target` has room for `count` entries.
    @inline(__always)
    private static func distribute(_ source: UnsafeMutablePointer<Entry>, count: Int, into target: UnsafeMutablePointer<Entry>,
                                   shift: Int, counts: UnsafeMutablePointer<Int>) {
        var at = 0
        for d in 0..<256 { (counts[d], at) = (at, at + counts[d]) }
        for i in 0..<count {
            let d = Int(truncatingIfNeeded: source[i].head >> UInt64(shift)) & 0xFF
            target[counts[d]] = source[i]
            counts[d] += 1
        }
    }

    /// Sorts `a[0..<count]`, whose windows at `window` (held in `head`) agree above bit
    /// `shift + 8`. REQUIRES: `scratch` has room for `count` entries. Leaves every `head` the
    /// key's first window.
    fileprivate static func radixSort(_ a: UnsafeMutablePointer<Entry>, count: Int, scratch: UnsafeMutablePointer<Entry>,
                                  shift: Int, window: Int) {
        if count <= 32 {
            if window > 0 { for i in 0..<count { a[i].head = KeyWindow.head(a[i].keyBytes) } }
            for i in 1..<max(count, 1) {
                let x = a[i]
                var j = i
                while j > 0 && precedes(x, a[j - 1]) {
                    a[j] = a[j - 1]
                    j -= 1
                }
                a[j] = x
            }
            return
        }
        var shift = shift
        var window = window
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 256) { counts in
            while true {
                if shift < 0 {
                    // Every window equal: compare the next 8 bytes of the keys, while some key
                    // reaches them (beyond a few windows, whole keys decide).
                    let next = window + 8
                    var longer = false
                    for i in 0..<count where Int(a[i].keyCount) > next { longer = true; break }
                    guard longer, next < 64 else {
                        for i in 0..<count { a[i].head = KeyWindow.head(a[i].keyBytes) }
                        var range = UnsafeMutableBufferPointer(start: a, count: count)
                        range.sort { precedes($0, $1) }
                        return
                    }
                    for i in 0..<count { a[i].head = KeyWindow.window(a[i].keyBytes, from: next) }
                    window = next
                    shift = 56
                }
                counts.initialize(repeating: 0)
                for i in 0..<count { counts[Int(truncatingIfNeeded: a[i].head >> UInt64(shift)) & 0xFF] += 1 }
                let digit = Int(truncatingIfNeeded: a[0].head >> UInt64(shift)) & 0xFF
                if counts[digit] == count {
                    shift -= 8  // a byte all share
                    continue
                }
                distribute(a, count: count, into: scratch, shift: shift, counts: counts.baseAddress!)
                a.update(from: scratch, count: count)
                var begin = 0
                for d in 0..<256 where counts[d] > begin {
                    radixSort(a + begin, count: counts[d] - begin, scratch: scratch + begin,
                              shift: shift - 8, window: window)
                    begin = counts[d]
                }
                return
            }
        }
    }
}
