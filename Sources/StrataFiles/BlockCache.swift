import Synchronization
@_spi(Layers) import StrataFormat

/// A bounded cache of decoded blocks, shared by every segment reader of a store.
///
/// Sharded by key; each shard evicts with the CLOCK algorithm (a second chance for blocks used
/// since the hand last passed), which costs O(1) per hit with no list to maintain.
package final class BlockCache: Sendable {
    package struct Key: Hashable, Sendable {
        package var file: UInt64
        package var offset: UInt64

    package init(file: UInt64, offset: UInt64) {
        self.file = file
        self.offset = offset
    }
}

    private struct Slot {
        var key: Key
        var block: Block
        var referenced: Bool
    }

    private struct Shard {
        var index: [Key: Int] = [:]
        var slots: [Slot] = []
        var hand = 0
        var bytes = 0
    }

    private final class LockedShard: Sendable {
        let mutex = Mutex(Shard())
        func withLock<R>(_ body: (inout Shard) -> R) -> R { mutex.withLock { body(&$0) } }
    }

    private let shards: [LockedShard]
    private let shardCapacity: Int

    /// A cache holding at most `capacity` bytes of decoded blocks, plus at most one block per
    /// shard when a single block is larger than a shard's share. Shards are at least 1 MiB each
    /// (up to 16 of them), so small caches are not split into shards smaller than a block.
    package init(capacity: Int) {
        let n = max(1, min(16, capacity / (1 << 20)))
        shards = (0..<n).map { _ in LockedShard() }
        shardCapacity = max(capacity / n, 1)
    }

    @inline(__always)
    private func shard(_ key: Key) -> Int {
        Int(truncatingIfNeeded: ((key.file &* 0x9E37_79B9_7F4A_7C15 ^ key.offset &* 0xC2B2_AE3D_27D4_EB4F) >> 32)
            % UInt64(shards.count))
    }

    package func lookup(_ key: Key) -> Block? {
        shards[shard(key)].withLock { s in
            guard let i = s.index[key] else { return nil }
            s.slots[i].referenced = true
            return s.slots[i].block
        }
    }

    package func insert(_ key: Key, _ block: Block) {
        let size = block.memoryFootprint
        shards[shard(key)].withLock { s in
            if s.index[key] != nil { return }
            // Evict until the new block fits (a block larger than the shard still gets in alone).
            while s.bytes + size > shardCapacity && !s.slots.isEmpty {
                if s.hand >= s.slots.count { s.hand = 0 }
                if s.slots[s.hand].referenced {
                    s.slots[s.hand].referenced = false
                    s.hand += 1
                    continue
                }
                let victim = s.slots[s.hand]
                s.bytes -= victim.block.memoryFootprint
                s.index[victim.key] = nil
                let last = s.slots.count - 1
                if s.hand != last {
                    s.slots[s.hand] = s.slots[last]
                    s.index[s.slots[s.hand].key] = s.hand
                }
                s.slots.removeLast()
            }
            s.index[key] = s.slots.count
            s.slots.append(Slot(key: key, block: block, referenced: false))
            s.bytes += size
        }
    }

    /// Drops every block of `file` (when the file is deleted).
    package func evict(file: UInt64) {
        for shard in shards {
            shard.withLock { s in
                var i = 0
                while i < s.slots.count {
                    if s.slots[i].key.file == file {
                        s.bytes -= s.slots[i].block.memoryFootprint
                        s.index[s.slots[i].key] = nil
                        let last = s.slots.count - 1
                        if i != last {
                            s.slots[i] = s.slots[last]
                            s.index[s.slots[i].key] = i
                        }
                        s.slots.removeLast()
                    } else {
                        i += 1
                    }
                }
            }
        }
    }

    /// Bytes of blocks held now.
    package var size: Int { shards.reduce(0) { $0 + $1.withLock { $0.bytes } } }
}
