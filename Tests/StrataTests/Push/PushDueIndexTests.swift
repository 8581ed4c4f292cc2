import Testing
@testable import Strata

/// The due-time heap of waiting updates.
@Suite struct PushDueIndexTests {
    @Test("pops in (due, subscription, item) order, whatever the order of inserts", arguments: [1, 2, 3])
    func order(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var heap = PushDueIndex()
        var reference: [PushDueIndex.Entry] = []
        for _ in 0..<5_000 {
            if rng.below(3) == 0, let top = heap.popMin() {
                reference.sort()
                #expect(top == reference.removeFirst())
            } else {
                let e = PushDueIndex.Entry(due: Int64(rng.below(1_000)) - 500, subscription: UInt64(rng.below(50)), item: rng.below(3))
                heap.insert(e)
                reference.append(e)
            }
            #expect(heap.count == reference.count)
            #expect(heap.min == reference.min())
        }
        var rest: [PushDueIndex.Entry] = []
        while let e = heap.popMin() { rest.append(e) }
        #expect(rest == reference.sorted())
    }
}
