import Testing
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// Tests of the memtables' arena memory from the system: zeroed, writable, populated mappings, and a
// skiplist on them (with a node larger than a chunk) that reads back what it was given.

@Suite struct ArenaMemoryPagesTests {
    @Test("mapped memory is page-aligned, zeroed and writable, and goes back")
    func mappedMemoryIsZeroedAndWritable() throws {
        for count in [1, 4096, 1 << 20, (1 << 20) + 100] {
            let memory = try #require(SystemCalls.mapMemory(count: count))
            #expect(Int(bitPattern: memory) % 4096 == 0)
            let bytes = UnsafeMutableRawBufferPointer(start: memory, count: count)
            #expect(bytes.allSatisfy { $0 == 0 })
            for i in stride(from: 0, to: count, by: 4096) { bytes[i] = UInt8(truncatingIfNeeded: i >> 12 | 1) }
            bytes[count - 1] = 0xAB
            #expect(bytes[count - 1] == 0xAB && bytes[0] == (count == 1 ? 0xAB : 1))
            SystemCalls.unmapMemory(memory, count: count)
        }
    }

    @Test("a skiplist on system pages, with a node larger than a chunk, reads back every entry")
    func skipListOnPages() {
        let list = ArenaSkipList(memory: .pages)
        var expected: [([UInt8], [UInt8])] = []
        for i in 0..<20_000 {
            let key = Array("k\(100_000 + i)".utf8)
            let value = i == 777 ? [UInt8](repeating: 0x5A, count: 3 << 20) : Array("v\(i)".utf8)
            key.withUnsafeBytes { k in value.withUnsafeBytes { v in
                list.insert(key: k, sequence: UInt64(i + 1), kind: 1, value: v)
            } }
            expected.append((key, value))
        }
        var keys: [[UInt8]] = [], values: [[UInt8]] = []
        var n = list.first
        while let node = n {
            keys.append(Array(ArenaSkipList.key(node)))
            values.append(Array(ArenaSkipList.value(node)))
            n = ArenaSkipList.next(node, 0)
        }
        #expect(keys == expected.map(\.0))
        #expect(values == expected.map(\.1))
        #expect(list.memoryUsage > 3 << 20)
    }
}
