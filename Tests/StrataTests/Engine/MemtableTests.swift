import Testing
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataEngine

// Tests of Memtable.apply(operations:...): a batch in list order (inserted without a sort) and
// batches out of order or with one key written twice (sorted first) give the list in order.

@Suite struct MemtableTests {
    /// The memtable's entries in list order, as (key, sequence, value).
    private func entries(_ m: Memtable) -> [([UInt8], UInt64, [UInt8])] {
        var out: [([UInt8], UInt64, [UInt8])] = []
        var n = m.list.first
        while let x = n {
            out.append((Array(ArenaSkipList.key(x)), ArenaSkipList.sequence(x), Array(ArenaSkipList.value(x))))
            n = ArenaSkipList.next(x, 0)
        }
        return out
    }

    private func apply(_ batch: WriteBatch, to m: Memtable, first: UInt64) throws {
        try batch.operations.withUnsafeBytes {
            try m.apply(operations: $0, count: batch.count, firstSequence: first, file: "test")
        }
    }

    @Test("batches in order, out of order and with a key written twice all land in list order")
    func batchesLandInListOrder() throws {
        var rng = SplitMix64(seed: 0x3E37)
        let m = Memtable(logNumber: 1)
        var model: [([UInt8], UInt64, [UInt8])] = []
        var sequence: UInt64 = 1
        for round in 0..<60 {
            var keys = (0..<(1 + rng.below(50))).map { _ in [UInt8(rng.below(4)), UInt8(rng.below(256)), UInt8(rng.below(256))] }
            switch round % 3 {
            case 0: keys = Array(Set(keys)).sorted { $0.lexicographicallyPrecedes($1) }  // in list order
            case 1: keys.append(keys[0])  // one key twice: the later write is newer
            default: break  // random order
            }
            var batch = WriteBatch()
            for (i, k) in keys.enumerated() {
                let value = [UInt8(truncatingIfNeeded: round), UInt8(truncatingIfNeeded: i)]
                batch.putRaw(k, value)
                model.append((k, sequence + UInt64(i), value))
            }
            try apply(batch, to: m, first: sequence)
            sequence += UInt64(keys.count)
        }
        model.sort { $0.0 != $1.0 ? $0.0.lexicographicallyPrecedes($1.0) : $0.1 > $1.1 }
        let got = entries(m)
        #expect(got.map(\.0) == model.map(\.0))
        #expect(got.map(\.1) == model.map(\.1))
        #expect(got.map(\.2) == model.map(\.2))
    }
}
