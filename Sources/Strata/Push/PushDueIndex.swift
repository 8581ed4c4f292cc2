/// The items whose updates wait for a frequency limit, by the instant their oldest waiting update
/// is due: a binary min-heap, so that finding what is due costs O(log n) and a poll or timer tick
/// with nothing due costs nothing, however many subscriptions the store holds.
///
/// Entries are not removed when an item's due time changes: a new entry is added, and the old one
/// is dropped as stale when it reaches the top (``PushModel/validDue(_:)``). The heap is rebuilt
/// from the model when stale entries outnumber live ones (``PushModel/compactDueIndex()``).
struct PushDueIndex: Sendable {
    struct Entry: Sendable, Comparable {
        let due: Int64
        let subscription: UInt64
        let item: Int

        static func < (a: Entry, b: Entry) -> Bool {
            (a.due, a.subscription, a.item) < (b.due, b.subscription, b.item)
        }
    }

    private(set) var heap: [Entry] = []

    var count: Int { heap.count }
    var min: Entry? { heap.first }

    mutating func insert(_ e: Entry) {
        heap.append(e)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i] < heap[parent] else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    @discardableResult
    mutating func popMin() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count, heap[l] < heap[smallest] { smallest = l }
            if r < heap.count, heap[r] < heap[smallest] { smallest = r }
            guard smallest != i else { break }
            heap.swapAt(i, smallest)
            i = smallest
        }
        return top
    }
}
