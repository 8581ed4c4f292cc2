@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A set of writes applied atomically: after a crash, either all of them are there or none.
///
/// ```swift
/// var batch = WriteBatch()
/// batch.put(Array("apple".utf8), Array("red".utf8))
/// batch.delete(Array("banana".utf8))
/// batch.deleteRange(from: Array("c".utf8), to: Array("d".utf8))
/// try store.write(batch)
/// ```
/// Operations apply in the order they were added: a later put of the same key wins.
/// The keys of the public methods live in the store's key-value keyspace, apart from the data of
/// time series, channels and documents.
public struct WriteBatch: Sendable {
    /// Operation codes as stored in the write-ahead log. Never change them.
    package enum Op: UInt8 {
        case put = 1
        case delete = 2
        case deleteRange = 3
    }

    /// The operations, encoded as in the log (FORMAT.md "Write-ahead log", batch payload).
    @usableFromInline package internal(set) var operations: [UInt8] = []
    /// The number of operations.
    public private(set) var count = 0

    /// An empty batch.
    public init() {}

    /// Whether the batch holds no operation.
    public var isEmpty: Bool { count == 0 }

    /// The bytes the batch will take in the log.
    public var byteSize: Int { operations.count + 12 }

    /// Sets `key` to `value`.
    public mutating func put(_ key: [UInt8], _ value: [UInt8]) {
        putRaw(Keyspace.keyValue.prefix, key, value)
    }

    /// Removes `key`.
    public mutating func delete(_ key: [UInt8]) {
        deleteRaw(Keyspace.keyValue.prefix, key)
    }

    /// Removes every key `k` with `start <= k < end`.
    public mutating func deleteRange(from start: [UInt8], to end: [UInt8]) {
        deleteRangeRaw(Keyspace.keyValue.prefix + start, Keyspace.keyValue.prefix + end)
    }

    // MARK: Engine keys (collections)

    /// Puts an engine key made of `prefix + key`.
    package mutating func putRaw(_ prefix: [UInt8], _ key: [UInt8], _ value: [UInt8]) {
        operations.append(Op.put.rawValue)
        Varint.append(UInt64(prefix.count + key.count), to: &operations)
        operations.append(contentsOf: prefix)
        operations.append(contentsOf: key)
        Varint.append(UInt64(value.count), to: &operations)
        operations.append(contentsOf: value)
        count += 1
    }

    package mutating func putRaw(_ key: [UInt8], _ value: [UInt8]) { putRaw([], key, value) }

    /// Puts an engine key made of `prefix` and the bytes `key` appends, with the value `value`
    /// appends: both closures write straight into the batch's buffer (no array of their own per
    /// operation). Returns where the value lies in ``operations``. If a closure throws, the batch
    /// is left as it was. Inlinable, so that a caller's closures inline into it.
    @inlinable @discardableResult
    package mutating func putRaw(_ prefix: [UInt8], key: (inout [UInt8]) throws -> Void,
                                 value: (inout [UInt8]) throws -> Void) rethrows -> Range<Int> {
        let start = operations.count
        do {
            operations.append(Self.putCode)
            _ = try appendLengthPrefixed { out in
                out.append(contentsOf: prefix)
                try key(&out)
            }
            let range = try appendLengthPrefixed(value)
            didAddOperation()
            return range
        } catch {
            operations.removeSubrange(start...)
            throw error
        }
    }

    /// Appends the varint length of the bytes `body` appends, then those bytes; returns where
    /// they lie. The length takes one byte unless they are 128 bytes or more, when they move up.
    @inlinable
    mutating func appendLengthPrefixed(_ body: (inout [UInt8]) throws -> Void) rethrows -> Range<Int> {
        let at = operations.count
        operations.append(0)
        try body(&operations)
        let length = operations.count - at - 1
        if length < 0x80 {
            operations[at] = UInt8(truncatingIfNeeded: length)
            return (at + 1)..<operations.count
        }
        return (at + widenLength(at: at, length))..<operations.count
    }

    /// Writes `length` as a varint in place of the one byte at `at`, moving what follows up;
    /// returns the varint's size.
    @usableFromInline mutating func widenLength(at: Int, _ length: Int) -> Int {
        var varint: [UInt8] = []
        Varint.append(UInt64(length), to: &varint)
        operations.replaceSubrange(at..<(at + 1), with: varint)
        return varint.count
    }

    /// ``Op/put``'s code, for the inlinable code above.
    @usableFromInline static let putCode = Op.put.rawValue

    /// Counts an operation the inlinable code above added.
    @usableFromInline mutating func didAddOperation() { count += 1 }

    /// Makes room for `bytes` more encoded bytes at least, growing the buffer geometrically (so
    /// that reserving before each of many small writes stays linear).
    package mutating func reserveCapacity(forAdditionalBytes bytes: Int) {
        let needed = operations.count + bytes
        if needed > operations.capacity { operations.reserveCapacity(max(needed, 2 * operations.capacity)) }
    }

    package mutating func deleteRaw(_ prefix: [UInt8], _ key: [UInt8]) {
        operations.append(Op.delete.rawValue)
        Varint.append(UInt64(prefix.count + key.count), to: &operations)
        operations.append(contentsOf: prefix)
        operations.append(contentsOf: key)
        count += 1
    }

    package mutating func deleteRaw(_ key: [UInt8]) { deleteRaw([], key) }

    package mutating func deleteRangeRaw(_ start: [UInt8], _ end: [UInt8]) {
        operations.append(Op.deleteRange.rawValue)
        Varint.append(UInt64(start.count), to: &operations)
        operations.append(contentsOf: start)
        Varint.append(UInt64(end.count), to: &operations)
        operations.append(contentsOf: end)
        count += 1
    }

    /// Removes the operations added after the batch held `count` operations in `byteCount`
    /// encoded bytes (a ``CommitBatch/Mark``).
    package mutating func truncate(count: Int, byteCount: Int) {
        operations.removeSubrange(byteCount...)
        self.count = count
    }

    /// Appends the operations of `other`.
    package mutating func append(_ other: WriteBatch) {
        operations.append(contentsOf: other.operations)
        count += other.count
    }

    /// Calls `body` for each operation of an encoded operation list; throws
    /// ``StrataError/corrupted(file:offset:reason:)`` naming `file` if it is malformed.
    package static func forEachOperation(
        in ops: UnsafeRawBufferPointer, count: Int, file: String, offset: Int,
        _ body: (Op, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var p = 0
        for i in 0..<count {
            func bad(_ why: String) -> StrataError {
                .corrupted(file: file, offset: offset, reason: "batch operation \(i): \(why)")
            }
            guard p < ops.count, let op = Op(rawValue: ops[p]) else { throw bad("unknown operation") }
            p += 1
            guard let kl = Varint.readLength(ops, at: &p, limit: ops.count), kl <= ops.count - p else { throw bad("bad key length") }
            let key = UnsafeRawBufferPointer(rebasing: ops[p..<(p + kl)])
            p += kl
            var second = UnsafeRawBufferPointer(start: nil, count: 0)
            if op != .delete {
                guard let vl = Varint.readLength(ops, at: &p, limit: ops.count), vl <= ops.count - p else { throw bad("bad value length") }
                second = UnsafeRawBufferPointer(rebasing: ops[p..<(p + vl)])
                p += vl
            }
            try body(op, key, second)
        }
        guard p == ops.count else {
            throw StrataError.corrupted(file: file, offset: offset, reason: "batch has \(ops.count - p) bytes after its \(count) operations")
        }
    }
}
