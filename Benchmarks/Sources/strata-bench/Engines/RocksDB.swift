import CRocksDB
import Foundation
import Synchronization

/// A thin Swift wrapper over the RocksDB C API, configured as in Strata.docc/Performance.md ("Benchmarks"):
///
/// - `increase_parallelism(2)` (two background jobs, the machine's cores), `create_if_missing`;
/// - LZ4 compression on every level (as Strata's blocks); default 64 MiB write buffer (Strata's
///   memtable is 64 MiB too);
/// - block-based tables: an LRU block cache of `--cache` bytes (the budget every engine gets),
///   a full-key bloom filter of 10 bits per key (Strata's default), default 4 KiB blocks;
/// - WAL on; `sync = true` for `--durability synchronous`, `false` for `buffered`;
/// - default read options (checksums verified, blocks cached).
final class RocksDB {
    /// The version the RocksDB LOG of the first opened database names.
    static let loggedVersion = Mutex<String?>(nil)

    private let db: OpaquePointer
    private let options: OpaquePointer
    private let tableOptions: OpaquePointer
    private let cache: OpaquePointer
    private let writeOptions: OpaquePointer
    let readOptions: OpaquePointer
    let path: String
    private var closed = false

    init(path: String, sync: Bool, cacheBytes: Int) throws {
        self.path = path
        options = rocksdb_options_create()
        rocksdb_options_increase_parallelism(options, 2)
        rocksdb_options_set_create_if_missing(options, 1)
        rocksdb_options_set_compression(options, Int32(rocksdb_lz4_compression))
        tableOptions = rocksdb_block_based_options_create()
        cache = rocksdb_cache_create_lru(cacheBytes)
        rocksdb_block_based_options_set_block_cache(tableOptions, cache)
        rocksdb_block_based_options_set_filter_policy(tableOptions, rocksdb_filterpolicy_create_bloom_full(10))
        rocksdb_options_set_block_based_table_factory(options, tableOptions)
        var error: UnsafeMutablePointer<CChar>?
        guard let handle = rocksdb_open(options, path, &error) else {
            let message = RocksDB.take(error) ?? "unknown error"
            rocksdb_options_destroy(options)
            rocksdb_block_based_options_destroy(tableOptions)
            rocksdb_cache_destroy(cache)
            throw BenchError("rocksdb open \(path): \(message)")
        }
        db = handle
        writeOptions = rocksdb_writeoptions_create()
        rocksdb_writeoptions_set_sync(writeOptions, sync ? 1 : 0)
        readOptions = rocksdb_readoptions_create()
        Self.noteVersion(path: path)
    }

    deinit {
        if !closed { close() }
    }

    func close() {
        guard !closed else { return }
        closed = true
        rocksdb_readoptions_destroy(readOptions)
        rocksdb_writeoptions_destroy(writeOptions)
        rocksdb_close(db)
        rocksdb_options_destroy(options)
        rocksdb_block_based_options_destroy(tableOptions)
        rocksdb_cache_destroy(cache)
    }

    /// Applies `batch` (one atomic write).
    func write(_ batch: Batch) throws {
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_write(db, writeOptions, batch.handle, &error)
        if let message = RocksDB.take(error) { throw BenchError("rocksdb write: \(message)") }
    }

    /// Calls `body` with the value of `key` in place (no copy), or nil if absent.
    func withValue<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        var error: UnsafeMutablePointer<CChar>?
        let slice = rocksdb_get_pinned(db, readOptions, key.baseAddress?.assumingMemoryBound(to: CChar.self), key.count, &error)
        if let message = RocksDB.take(error) { throw BenchError("rocksdb get: \(message)") }
        guard let slice else { return try body(nil) }
        defer { rocksdb_pinnableslice_destroy(slice) }
        var length = 0
        let value = rocksdb_pinnableslice_value(slice, &length)
        return try body(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// The value of `key`, copied into an array (as Strata's `get` returns it), or nil.
    func get(_ key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { k in try withValue(k) { $0.map { Array($0) } } }
    }

    /// Flushes the memtable and compacts the whole key range (the settled state read workloads start from).
    func compactAll() throws {
        let flush = rocksdb_flushoptions_create()
        defer { rocksdb_flushoptions_destroy(flush) }
        rocksdb_flushoptions_set_wait(flush, 1)
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_flush(db, flush, &error)
        if let message = RocksDB.take(error) { throw BenchError("rocksdb flush: \(message)") }
        rocksdb_compact_range(db, nil, 0, nil, 0)
    }

    /// An iterator; with `upperBound`, it stops before that key.
    func iterator(upperBound: [UInt8]? = nil) -> Iterator {
        Iterator(db: db, upperBound: upperBound)
    }

    /// A write batch, reused across writes with ``clear()``.
    final class Batch {
        let handle = rocksdb_writebatch_create()!
        deinit { rocksdb_writebatch_destroy(handle) }
        func clear() { rocksdb_writebatch_clear(handle) }
        func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            rocksdb_writebatch_put(handle, key.baseAddress?.assumingMemoryBound(to: CChar.self), key.count,
                                   value.baseAddress?.assumingMemoryBound(to: CChar.self), value.count)
        }
        func put(_ key: [UInt8], _ value: [UInt8]) {
            key.withUnsafeBytes { k in value.withUnsafeBytes { v in put(k, v) } }
        }
        func delete(_ key: [UInt8]) {
            key.withUnsafeBytes { k in
                rocksdb_writebatch_delete(handle, k.baseAddress?.assumingMemoryBound(to: CChar.self), k.count)
            }
        }
    }

    /// A RocksDB iterator with its own read options (so that it can carry an upper bound).
    final class Iterator {
        private let readOptions: OpaquePointer
        private let handle: OpaquePointer
        private let bound: UnsafeMutableRawBufferPointer?

        fileprivate init(db: OpaquePointer, upperBound: [UInt8]?) {
            readOptions = rocksdb_readoptions_create()
            if let upperBound {
                let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(upperBound.count, 1), alignment: 1)
                b.copyBytes(from: upperBound)
                rocksdb_readoptions_set_iterate_upper_bound(readOptions, b.baseAddress?.assumingMemoryBound(to: CChar.self), upperBound.count)
                bound = b
            } else {
                bound = nil
            }
            handle = rocksdb_create_iterator(db, readOptions)
        }

        deinit {
            rocksdb_iter_destroy(handle)
            rocksdb_readoptions_destroy(readOptions)
            bound?.deallocate()
        }

        func seekToFirst() { rocksdb_iter_seek_to_first(handle) }
        func seekToLast() { rocksdb_iter_seek_to_last(handle) }
        func seek(_ key: [UInt8]) {
            key.withUnsafeBytes { rocksdb_iter_seek(handle, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count) }
        }
        func seekForPrevious(_ key: [UInt8]) {
            key.withUnsafeBytes { rocksdb_iter_seek_for_prev(handle, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count) }
        }
        var isValid: Bool { rocksdb_iter_valid(handle) != 0 }
        func next() { rocksdb_iter_next(handle) }
        func previous() { rocksdb_iter_prev(handle) }
        var key: UnsafeRawBufferPointer {
            var n = 0
            let p = rocksdb_iter_key(handle, &n)
            return UnsafeRawBufferPointer(start: p, count: n)
        }
        var value: UnsafeRawBufferPointer {
            var n = 0
            let p = rocksdb_iter_value(handle, &n)
            return UnsafeRawBufferPointer(start: p, count: n)
        }
        func check() throws {
            var error: UnsafeMutablePointer<CChar>?
            rocksdb_iter_get_error(handle, &error)
            if let message = RocksDB.take(error) { throw BenchError("rocksdb iterator: \(message)") }
        }
    }

    private static func take(_ error: UnsafeMutablePointer<CChar>?) -> String? {
        guard let error else { return nil }
        defer { rocksdb_free(error) }
        return String(cString: error)
    }

    /// Reads "RocksDB version: X" from the LOG of a database (once).
    private static func noteVersion(path: String) {
        guard loggedVersion.withLock({ $0 == nil }) else { return }
        guard let log = try? String(contentsOfFile: path + "/LOG", encoding: .utf8) else { return }
        for line in log.split(separator: "\n") {
            if let r = line.range(of: "RocksDB version: ") {
                let v = String(line[r.upperBound...]).trimmingCharacters(in: .whitespaces)
                loggedVersion.withLock { $0 = v }
                return
            }
        }
    }
}
