import Foundation
import Strata

/// Strata's options for the bench (Strata.docc/Performance.md, "Benchmarks"): defaults (4 KiB blocks, LZ4, 64 MiB
/// memtable, bloom filters of 10 bits per key) with `--durability` and the shared cache budget.
enum StrataSettings {
    static func options(_ config: BenchConfig) -> StoreOptions {
        var options = StoreOptions(durability: config.durability == .synchronous ? .synchronous : .buffered)
        options.cacheSize = config.cacheBytes
        if config.sealed { options.encryptionKey = key }
        return options
    }

    /// The key of the encrypted rows (`--encrypted`): any key costs the same.
    static let key = try! EncryptionKey(bytes: (0..<32).map { UInt8($0) })
}

/// The raw key-value API of Strata: `Store.write(WriteBatch)`, `get`, `cursor`.
final class StrataKeyValue: KeyValueEngine {
    let store: Store

    init(directory: URL, config: BenchConfig) throws {
        store = try Store.open(at: directory, options: StrataSettings.options(config))
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func write(_ batch: RecordBatch) throws {
        var b = WriteBatch()
        batch.forEach { k, v in b.put(Array(k), Array(v)) }
        try store.write(b)
    }

    func get(_ key: [UInt8]) throws -> [UInt8]? { try store.get(key) }

    func scanner() throws -> any KeyValueScanner { Scanner(try store.cursor()) }

    func settle() throws { try store.compact() }

    func close() throws { try store.close() }

    private final class Scanner: KeyValueScanner {
        let cursor: KeyValueCursor
        init(_ cursor: KeyValueCursor) { self.cursor = cursor }
        func next(_ limit: Int) throws -> (items: Int, bytes: Int) {
            var n = 0, bytes = 0
            while n < limit, let size = try cursor.nextUnsafe({ k, v in k.count + v.count }) {
                bytes += size
                n += 1
            }
            return (n, bytes)
        }
    }
}
