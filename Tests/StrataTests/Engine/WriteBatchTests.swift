import Testing
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataEngine

// Tests of WriteBatch's in-place put (key and value written by closures straight into the
// batch's buffer): the same bytes as a put of arrays, at every length around the one-byte varint
// limit, and a closure that throws leaves the batch as it was.

private struct Failure: Error {}

@Suite struct WriteBatchTests {
    @Test("an in-place put encodes exactly what putRaw of arrays does, lengths 0 to 300 around the varint byte limit")
    func inPlacePutMatchesArrayPut() {
        var rng = SplitMix64(seed: 0xB47C)
        let prefix: [UInt8] = [2, 0x15, 7]
        var inPlace = WriteBatch()
        var arrays = WriteBatch()
        let lengths = Array(0..<4) + Array(120..<136) + [255, 256, 300]
        for keyLength in lengths {
            for valueLength in lengths where rng.chance(300) || keyLength < 4 {
                let key = (0..<keyLength).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let value = (0..<valueLength).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                arrays.putRaw(prefix, key, value)
                let at = inPlace.putRaw(prefix, key: { $0.append(contentsOf: key) }, value: { $0.append(contentsOf: value) })
                #expect(Array(inPlace.operations[at]) == value, "value range, key \(keyLength) value \(valueLength)")
                if rng.chance(200) { arrays.deleteRaw(key); inPlace.deleteRaw(key) }
            }
        }
        #expect(inPlace.count == arrays.count)
        #expect(inPlace.operations == arrays.operations)
    }

    @Test("a closure that throws (key or value, before or after a long write) leaves the batch as it was")
    func throwingClosureLeavesTheBatch() {
        var batch = WriteBatch()
        batch.putRaw([1], [2, 3], [4])
        let before = batch.operations
        for long in [false, true] {
            let filler = [UInt8](repeating: 9, count: long ? 200 : 3)
            #expect(throws: Failure.self) {
                try batch.putRaw([1], key: { $0.append(contentsOf: filler); throw Failure() }, value: { $0.append(1) })
            }
            #expect(throws: Failure.self) {
                try batch.putRaw([1], key: { $0.append(contentsOf: filler) }, value: { $0.append(contentsOf: filler); throw Failure() })
            }
            #expect(batch.operations == before)
            #expect(batch.count == 1)
        }
        // And the batch takes writes after that as if nothing happened.
        batch.putRaw([1], key: { $0.append(5) }, value: { $0.append(6) })
        var expected = WriteBatch()
        expected.putRaw([1], [2, 3], [4])
        expected.putRaw([1], [5], [6])
        #expect(batch.operations == expected.operations)
        #expect(batch.count == 2)
    }

    @Test("reserving room changes no byte and keeps growth geometric")
    func reserveCapacity() {
        var batch = WriteBatch()
        for i in 0..<1_000 {
            batch.reserveCapacity(forAdditionalBytes: 8)
            batch.putRaw([], [UInt8(truncatingIfNeeded: i)], [1, 2])
        }
        var plain = WriteBatch()
        for i in 0..<1_000 { plain.putRaw([], [UInt8(truncatingIfNeeded: i)], [1, 2]) }
        #expect(batch.operations == plain.operations)
        #expect(batch.operations.capacity < 4 * batch.operations.count)
    }
}
