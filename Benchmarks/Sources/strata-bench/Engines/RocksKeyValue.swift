import Foundation

/// RocksDB's default column family, through ``RocksDB``.
final class RocksKeyValue: KeyValueEngine {
    let db: RocksDB
    private let batch = RocksDB.Batch()

    init(directory: URL, config: BenchConfig) throws {
        db = try RocksDB(path: directory.path, sync: config.durability == .synchronous, cacheBytes: config.cacheBytes)
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func write(_ records: RecordBatch) throws {
        batch.clear()
        records.forEach { k, v in batch.put(k, v) }
        try db.write(batch)
    }

    func get(_ key: [UInt8]) throws -> [UInt8]? { try db.get(key) }

    func scanner() throws -> any KeyValueScanner {
        let it = db.iterator()
        it.seekToFirst()
        return Scanner(it)
    }

    func settle() throws { try db.compactAll() }

    func close() throws { db.close() }

    private final class Scanner: KeyValueScanner {
        let it: RocksDB.Iterator
        init(_ it: RocksDB.Iterator) { self.it = it }
        func next(_ limit: Int) throws -> (items: Int, bytes: Int) {
            var n = 0, bytes = 0
            while n < limit && it.isValid {
                bytes += it.key.count + it.value.count
                n += 1
                it.next()
            }
            try it.check()
            return (n, bytes)
        }
    }
}
