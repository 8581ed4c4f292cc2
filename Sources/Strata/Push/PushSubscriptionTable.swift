/// The subscriptions of a store in memory, by number: two parallel arrays in number order (the
/// numbers, and the entries with `nil` for a deleted one), found by binary search.
///
/// Subscription numbers only grow, so a new subscription is appended; reading a million at open
/// is appending them in the order the scan yields them, with no hashing and no table growth, and
/// each costs its 56-byte entry and 8-byte number. A deletion leaves a hole, and the arrays are
/// compacted when holes outnumber live entries.
struct PushSubscriptionTable: Sendable, Sequence {
    typealias Entry = PushModel.SubscriptionEntry

    /// Ascending. INVARIANT: `numbers.count == entries.count`.
    private var numbers: [UInt64] = []
    private var entries: [Entry?] = []
    private(set) var count = 0

    init() {}

    /// REQUIRES: `sorted` in strictly ascending number order.
    init(sorted: [Entry]) {
        numbers = sorted.map(\.number)
        entries = sorted.map { Optional($0) }
        count = sorted.count
    }

    var isEmpty: Bool { count == 0 }

    /// The index of `n` in `numbers`, or where it would go.
    private func index(of n: UInt64) -> (Int, found: Bool) {
        if let last = numbers.last, n > last { return (numbers.count, false) }
        var lo = 0, hi = numbers.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if numbers[mid] < n { lo = mid + 1 } else { hi = mid }
        }
        return (lo, lo < numbers.count && numbers[lo] == n)
    }

    subscript(n: UInt64) -> Entry? {
        get {
            let (i, found) = index(of: n)
            return found ? entries[i] : nil
        }
        set {
            let (i, found) = index(of: n)
            if found {
                switch (entries[i] != nil, newValue != nil) {
                case (false, true): count += 1
                case (true, false): count -= 1
                default: break
                }
                entries[i] = newValue
                if newValue == nil { compactIfSparse() }
            } else if let newValue {
                numbers.insert(n, at: i)
                entries.insert(newValue, at: i)
                count += 1
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey n: UInt64) -> Entry? {
        let old = self[n]
        if old != nil { self[n] = nil }
        return old
    }

    /// The live entries, in number order.
    var values: LazyMapSequence<LazyFilterSequence<LazySequence<[Entry?]>.Elements>, Entry> {
        entries.lazy.filter { $0 != nil }.map { $0! }
    }

    func makeIterator() -> some IteratorProtocol<(key: UInt64, value: Entry)> {
        entries.lazy.compactMap { $0 }.map { (key: $0.number, value: $0) }.makeIterator()
    }

    private mutating func compactIfSparse() {
        let holes = entries.count - count
        guard holes >= 1_024, holes > count else { return }
        let live = entries.compactMap { $0 }
        numbers = live.map(\.number)
        entries = live.map { Optional($0) }
    }
}
