/// The kind of a record in a block. Stored as one byte: never change the raw values.
@_spi(Layers) public enum RecordKind: UInt8, Sendable {
    /// A key with its value.
    case value = 0
    /// A point deletion: the key has no value from here on (older files may still hold one).
    case tombstone = 1
}

/// Builds one block of sorted records with prefix-compressed keys (FORMAT.md, "Blocks").
///
/// ```
/// block   := entry* restart* restartCount
/// entry   := shared:varint unshared:varint valueLength:varint kind:u8 keySuffix value
/// restart := u32 LE, the offset of an entry whose key is stored whole (shared = 0)
/// ```
/// Keys must be added in strictly increasing byte order.
package struct BlockBuilder {
    package private(set) var buffer: [UInt8] = []
    private var restarts: [UInt32] = [0]
    private var sinceRestart = 0
    private var lastKey: [UInt8] = []
    package private(set) var count = 0
    package let restartInterval: Int

    package init(restartInterval: Int) {
        precondition(restartInterval >= 1)
        self.restartInterval = restartInterval
    }

    package var isEmpty: Bool { count == 0 }

    /// The size of the block if it were finished now.
    package var estimatedSize: Int { buffer.count + restarts.count * 4 + 4 }

    /// The last key added.
    package var lastAddedKey: [UInt8] { lastKey }

    package mutating func add(key: UnsafeRawBufferPointer, kind: RecordKind, value: UnsafeRawBufferPointer) {
        var shared = 0
        if sinceRestart >= restartInterval {
            restarts.append(UInt32(buffer.count))
            sinceRestart = 0
        } else {
            shared = lastKey.withUnsafeBytes { ByteComparison.sharedPrefixLength($0, key) }
        }
        assert(count == 0 || lastKey.withUnsafeBytes { ByteComparison.compare($0, key) } < 0,
               "keys must be added in increasing order")
        Varint.append(UInt64(shared), to: &buffer)
        Varint.append(UInt64(key.count - shared), to: &buffer)
        Varint.append(UInt64(value.count), to: &buffer)
        buffer.append(kind.rawValue)
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: key[shared...]))
        buffer.append(contentsOf: value)
        lastKey.removeLast(lastKey.count - shared)
        lastKey.append(contentsOf: UnsafeRawBufferPointer(rebasing: key[shared...]))
        sinceRestart += 1
        count += 1
    }

    package mutating func add(key: [UInt8], kind: RecordKind, value: [UInt8]) {
        key.withUnsafeBytes { k in value.withUnsafeBytes { v in add(key: k, kind: kind, value: v) } }
    }

    /// Appends the restart array and returns the block's bytes; the builder is reset.
    package mutating func finish() -> [UInt8] {
        for r in restarts { LittleEndian.append(r, to: &buffer) }
        LittleEndian.append(UInt32(restarts.count), to: &buffer)
        let out = buffer
        reset()
        return out
    }

    package mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        restarts = [0]
        sinceRestart = 0
        lastKey.removeAll(keepingCapacity: true)
        count = 0
    }
}
