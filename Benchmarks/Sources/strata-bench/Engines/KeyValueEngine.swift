import Foundation

/// The raw key-value interface the kv-* and `open` workloads drive, one implementation per engine.
protocol KeyValueEngine: AnyObject {
    /// Runs `body` with the engine ready for calls (SQLite: inside one access to the connection,
    /// with its statements prepared once). Calls outside a session are not allowed.
    func session(_ body: () throws -> Void) throws
    /// Writes the records of `batch` as one atomic batch (one transaction).
    func write(_ batch: RecordBatch) throws
    /// The value of `key`, as a new array (what Strata's `get` returns), or nil.
    func get(_ key: [UInt8]) throws -> [UInt8]?
    /// A cursor over every record in key order.
    func scanner() throws -> any KeyValueScanner
    /// Flushes and compacts (SQLite: checkpoints the WAL): the settled state read workloads start from.
    func settle() throws
    /// Closes cleanly.
    func close() throws
    /// The handle one thread of a `--threads` run reads through (``ParallelReads``): the engine
    /// itself where it is thread-safe (Strata, RocksDB; the default); SQLite's with a
    /// `DatabasePool`, a handle with its own session on one of the pool's reader connections.
    func reader() throws -> any KeyValueEngine
}

extension KeyValueEngine {
    func reader() throws -> any KeyValueEngine { self }
}

/// Walks records in key order, a chunk at a time.
protocol KeyValueScanner: AnyObject {
    /// Visits up to `limit` more records; returns how many and their key + value bytes.
    func next(_ limit: Int) throws -> (items: Int, bytes: Int)
}

/// Records to write, laid out flat (16-byte keys, 24-byte values) so that making them costs the
/// same for every engine.
struct RecordBatch {
    var keys: [UInt8] = []
    var values: [UInt8] = []
    private(set) var count = 0

    var payloadBytes: Int { keys.count + values.count }

    mutating func removeAll() {
        keys.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
        count = 0
    }

    /// Appends record `i` (its key in sequential or hashed order).
    mutating func append(_ i: Int, sequential: Bool, scratchKey: inout [UInt8], scratchValue: inout [UInt8]) {
        Records.key(i, sequential: sequential, into: &scratchKey)
        Records.value(i, into: &scratchValue)
        keys.append(contentsOf: scratchKey)
        values.append(contentsOf: scratchValue)
        count += 1
    }

    /// Calls `body` with the key and value of each record, in place.
    @inline(__always)
    func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try keys.withUnsafeBytes { k in
            try values.withUnsafeBytes { v in
                for r in 0..<count {
                    try body(UnsafeRawBufferPointer(rebasing: k[r * Records.keySize ..< (r + 1) * Records.keySize]),
                             UnsafeRawBufferPointer(rebasing: v[r * Records.valueSize ..< (r + 1) * Records.valueSize]))
                }
            }
        }
    }
}

enum KeyValueEngines {
    /// Opens (creating) the key-value store of `engine` in `directory`.
    static func open(_ engine: EngineKind, directory: URL, config: BenchConfig) throws -> any KeyValueEngine {
        switch engine {
        case .strata: return try StrataKeyValue(directory: directory, config: config)
        case .sqlite: return try SQLiteKeyValue(directory: directory, config: config)
        case .rocksdb: return try RocksKeyValue(directory: directory, config: config)
        }
    }

    /// Fills `engine` with records 0..<count in hashed order, in batches of `config.batch`,
    /// reporting progress, outside any timing.
    static func load(_ kv: any KeyValueEngine, count: Int, sequential: Bool, config: BenchConfig,
                     progress: ((Int) -> Void)? = nil) throws {
        var batch = RecordBatch()
        var k: [UInt8] = [], v: [UInt8] = []
        let size = max(config.batch, 1)
        try kv.session {
            var i = 0
            while i < count {
                batch.removeAll()
                let end = min(i + size, count)
                for j in i..<end { batch.append(j, sequential: sequential, scratchKey: &k, scratchValue: &v) }
                try kv.write(batch)
                i = end
                progress?(i)
            }
        }
    }
}
