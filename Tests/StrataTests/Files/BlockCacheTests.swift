import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

/// A valid block of about `size` bytes (one entry whose value fills it).
private func makeBlock(size: Int) throws -> Block {
    var b = BlockBuilder(restartInterval: 16)
    b.add(key: [0x61], kind: .value, value: [UInt8](repeating: 0x5A, count: max(0, size - 16)))
    return try Block(copying: b.finish())
}

private func key(_ file: UInt64, _ offset: UInt64) -> BlockCache.Key { BlockCache.Key(file: file, offset: offset) }

@Suite struct BlockCacheTests {
    @Test func hitsReturnTheSameBlock() throws {
        let cache = BlockCache(capacity: 1 << 20)
        let a = try makeBlock(size: 100), b = try makeBlock(size: 100)
        #expect(cache.lookup(key(1, 0)) == nil)
        cache.insert(key(1, 0), a)
        cache.insert(key(1, 4096), b)
        #expect(cache.lookup(key(1, 0)) === a)
        #expect(cache.lookup(key(1, 4096)) === b)
        #expect(cache.lookup(key(2, 0)) == nil, "another file, same offset")
        #expect(cache.size == a.memoryFootprint + b.memoryFootprint)
        // Inserting a key again keeps the first block and the size.
        cache.insert(key(1, 0), try makeBlock(size: 100))
        #expect(cache.lookup(key(1, 0)) === a)
        #expect(cache.size == a.memoryFootprint + b.memoryFootprint)
    }

    @Test func capacityIsRespected() throws {
        var rng = SplitMix64(seed: 0xCAC_0001)
        let capacity = 256 << 10
        let cache = BlockCache(capacity: capacity)
        var largest = 0
        for i in 0..<5000 {
            let block = try makeBlock(size: 200 + Int(rng.next() % 2000))
            largest = max(largest, block.memoryFootprint)
            cache.insert(key(rng.next() % 8, UInt64(i) * 4096), block)
            if i % 10 == 0 { _ = cache.lookup(key(rng.next() % 8, (rng.next() % UInt64(i + 1)) * 4096)) }
            #expect(cache.size <= capacity + largest, "after \(i + 1) inserts: \(cache.size) bytes")
        }
        #expect(cache.size > capacity / 2, "the cache is used: \(cache.size) bytes")
    }

    /// The budget holds even when a block is larger than a shard's share of it: a cache of
    /// 64 KiB given 32 KiB blocks must not hold sixteen of them.
    @Test func capacityIsRespectedWithLargeBlocks() throws {
        let capacity = 64 << 10
        let cache = BlockCache(capacity: capacity)
        let block = try makeBlock(size: 32 << 10)
        var worst = 0
        for i in 0..<200 {
            cache.insert(key(1, UInt64(i) * 40_000), block)
            worst = max(worst, cache.size)
        }
        #expect(worst <= capacity + block.memoryFootprint,
                "a \(capacity)-byte cache held \(worst) bytes (\(worst / block.memoryFootprint) blocks of \(block.memoryFootprint))")
    }

    /// CLOCK gives a block used since the hand last passed a second chance: a block looked up
    /// between every insertion survives a stream of blocks used once, which a FIFO would evict.
    @Test func frequentlyUsedBlockSurvivesOneTimeBlocks() throws {
        let cache = BlockCache(capacity: 16 * 4 * 1200)  // about four blocks a shard
        let hot = try makeBlock(size: 1000), cold = try makeBlock(size: 1000)
        cache.insert(key(9, 0), hot)
        cache.insert(key(9, 1 << 20), cold)
        var evicted = 0
        for i in 1...2000 {
            cache.insert(key(1, UInt64(i) * 4096), try makeBlock(size: 1000))
            #expect(cache.lookup(key(9, 0)) === hot, "the hot block was evicted after \(i) inserts")
            if cache.lookup(key(9, 0)) == nil { break }
        }
        for i in 1...2000 where cache.lookup(key(1, UInt64(i) * 4096)) == nil { evicted += 1 }
        #expect(evicted > 1500, "one-time blocks were evicted: \(evicted)")
        #expect(cache.lookup(key(9, 1 << 20)) == nil, "the block used once was evicted")
    }

    @Test func evictFileDropsOnlyThatFile() throws {
        let cache = BlockCache(capacity: 1 << 20)
        var footprints: [UInt64: Int] = [:]
        for file: UInt64 in 1...3 {
            for i in 0..<50 {
                let b = try makeBlock(size: 100 + i)
                footprints[file, default: 0] += b.memoryFootprint
                cache.insert(key(file, UInt64(i) * 512), b)
            }
        }
        #expect(cache.size == footprints.values.reduce(0, +))
        cache.evict(file: 2)
        #expect(cache.size == footprints[1]! + footprints[3]!)
        for i in 0..<50 {
            #expect(cache.lookup(key(2, UInt64(i) * 512)) == nil)
            #expect(cache.lookup(key(1, UInt64(i) * 512)) != nil)
            #expect(cache.lookup(key(3, UInt64(i) * 512)) != nil)
        }
        cache.evict(file: 2)  // nothing left to drop
        cache.evict(file: 1)
        cache.evict(file: 3)
        #expect(cache.size == 0)
        // Still usable afterwards.
        let b = try makeBlock(size: 100)
        cache.insert(key(2, 0), b)
        #expect(cache.lookup(key(2, 0)) === b)
    }

    @Test func concurrentUse() async throws {
        let capacity = 128 << 10
        let cache = BlockCache(capacity: capacity)
        let blocks = try (0..<64).map { try makeBlock(size: 500 + $0 * 10) }
        let largest = blocks.map(\.memoryFootprint).max()!
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    var rng = SplitMix64(seed: 0xCAC_0100 + UInt64(t))
                    for _ in 0..<5000 {
                        let i = Int(rng.next() % 64)
                        let k = key(UInt64(i % 4), UInt64(i) * 4096)
                        if let hit = cache.lookup(k) {
                            #expect(hit === blocks[i])
                        } else {
                            cache.insert(k, blocks[i])
                        }
                        if rng.next() % 500 == 0 { cache.evict(file: rng.next() % 4) }
                    }
                }
            }
        }
        #expect(cache.size <= capacity + largest)
    }
}
