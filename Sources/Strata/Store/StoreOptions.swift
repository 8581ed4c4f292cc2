import Foundation
import Logging
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How a store is opened: durability, the author of its writes, tuning, and where it logs.
///
/// ```swift
/// var options = StoreOptions()
/// options.durability = .buffered
/// options.memtableSize = 128 << 20
/// let store = try Store.open(at: url, options: options)
/// ```
public struct StoreOptions: Sendable {
    /// When writes return, relative to stable storage. Default ``Durability/synchronous``.
    public var durability: Durability = .synchronous
    /// The author of what this store writes (time-series events, history messages). Default `""`.
    public var principal: String = ""
    /// Target size of a data block before compression, in bytes (1 KiB…4 MiB). Default 4 KiB.
    ///
    /// A block is the unit the cache holds and a read decodes: a point lookup whose block is not
    /// in the cache verifies and decompresses the whole block, so once the data outgrows
    /// ``cacheSize`` a get costs about in proportion to this size. Larger blocks compress a little
    /// better and make a long scan slightly cheaper (fewer blocks to step through); 4 KiB keeps
    /// gets on a store several times larger than the cache close to their in-cache cost.
    public var blockSize: Int = 4 * 1024
    /// Bytes of writes kept in memory before they are flushed to a segment (64 KiB…4 GiB).
    /// Default 64 MiB.
    public var memtableSize: Int = 64 << 20
    /// Target size of a segment file, in bytes (64 KiB…16 GiB). Default 64 MiB.
    public var segmentSize: Int = 64 << 20
    /// Bytes of decoded blocks kept in memory for reads (0 disables the cache). Default 256 MiB.
    public var cacheSize: Int = 256 << 20
    /// Bloom filter bits per key in each segment, for point lookups (0…32; 0 writes none). Default 10.
    public var bloomBitsPerKey: Int = 10
    /// With ``Durability/buffered``, how often the log is synced (1 ms…60 s). Default 100 ms.
    ///
    /// ```swift
    /// options.syncInterval = .milliseconds(50)
    /// ```
    public var syncInterval: Duration = .milliseconds(100)
    /// Makes the id of a document saved without one. Default: a new UUID string.
    public var documentIDFactory: @Sendable () -> String = { UUID().uuidString }
    /// The clock the store reads for default event timestamps and history timetokens. Default:
    /// the system clock. Timetokens stay strictly increasing even when it goes back.
    public var clock: @Sendable () -> Date = { Date() }
    /// Where the store reports what it decides on its own, as RocksDB writes its LOG file.
    /// Default nil: silent.
    ///
    /// - `.error`: a failure that stops writes (see ``StoreStatistics/writeError``), and damage
    ///   met by background work (a record a compaction copied through because it could not read
    ///   it, a release of waiting push updates that failed; counted in
    ///   ``StoreStatistics/damage``), the first of each ``DamageComponent`` and then at most one
    ///   message a minute per component, with the number met since.
    /// - `.warning`: a torn tail cut off a write-ahead log at open (also in ``Store/recovery``),
    ///   and a flush, compaction or file deletion that failed (retried; counted in
    ///   ``StoreStatistics/backgroundFailures``).
    /// - `.info`: each flush (memtable bytes to segment bytes) and compaction (its input and
    ///   output runs, segments and bytes, and the bytes it reclaimed), and each write stall once
    ///   it is over (writers waited for a flush or a compaction; counted in
    ///   ``StoreStatistics/writeStalls``).
    /// - `.debug`: the open, the start of a stall, the segment files each job read and wrote.
    ///
    /// Messages carry their data as metadata (`file`, `offset`, `input.bytes`, …) and the store's
    /// directory as `strata.store`. The store calls the logger on a queue of its own, in order,
    /// never while it holds a lock, and has handed over every message when ``Store/close()``
    /// returns. Set the logger's `logLevel` to `.notice` to hear of problems only.
    ///
    /// ```swift
    /// var options = StoreOptions()
    /// options.logger = Logger(label: "com.example.app.store")
    /// let store = try Store.open(at: url, options: options)
    /// ```
    public var logger: Logger? = nil
    /// The key that seals every file of the store with AES-256-GCM (``EncryptionKey``). Default
    /// nil: the store is written in clear.
    ///
    /// A store is created encrypted or not, and stays so (``Store/changeEncryptionKey(at:from:to:options:)``
    /// re-encrypts it). Opening an encrypted store without its key, with another key, or a store
    /// in clear with a key throws ``StrataError/encryptionKey(store:problem:)`` and changes nothing.
    ///
    /// ```swift
    /// var options = StoreOptions()
    /// options.encryptionKey = try EncryptionKey(bytes: keyBytes)
    /// let store = try Store.open(at: url, options: options)
    /// ```
    public var encryptionKey: EncryptionKey? = nil
    /// The store's file system and its I/O environment (IOEnvironment.swift): the operating
    /// system's alone unless a test gives the store faults to inject or an observer of its calls.
    package var fileSystem = FileSystem.real

    /// Options with every default: synchronous durability, no principal, no logger.
    public init() {}

    /// Options with every default but `durability`.
    public init(durability: Durability) {
        self.durability = durability
    }

    /// Options with every default but the key that seals the store's files.
    public init(encryptionKey: EncryptionKey?) {
        self.encryptionKey = encryptionKey
    }

    func engineOptions() throws -> EngineOptions {
        func check(_ ok: Bool, _ what: String) throws {
            // Each message starts with the option's name.
            if !ok { throw StrataError.invalidArgument(argument: String(what.prefix { $0 != " " }), reason: what) }
        }
        try check((1 << 10...4 << 20).contains(blockSize), "blockSize \(blockSize) is outside 1 KiB…4 MiB")
        try check((64 << 10...4 << 30).contains(memtableSize), "memtableSize \(memtableSize) is outside 64 KiB…4 GiB")
        try check((64 << 10...16 << 30).contains(segmentSize), "segmentSize \(segmentSize) is outside 64 KiB…16 GiB")
        try check(cacheSize >= 0, "cacheSize \(cacheSize) is negative")
        try check((0...32).contains(bloomBitsPerKey), "bloomBitsPerKey \(bloomBitsPerKey) is outside 0…32")
        try check(syncInterval >= .milliseconds(1) && syncInterval <= .seconds(60),
                  "syncInterval \(syncInterval) is outside 1 ms…60 s")
        var e = EngineOptions()
        e.durability = durability
        e.memtableSize = memtableSize
        e.segment.blockSize = blockSize
        e.segment.bloomBitsPerKey = bloomBitsPerKey
        e.targetSegmentSize = segmentSize
        e.cacheSize = cacheSize
        e.syncInterval = Double(syncInterval.components.seconds) + Double(syncInterval.components.attoseconds) / 1e18
        e.logger = logger
        e.fileSystem = fileSystem
        e.encryptionKey = encryptionKey
        return e
    }
}

extension StoreOptions {
    /// The comparable settings in which `other` differs from these, as `name: mine ≠ theirs`
    /// (the closures and the logger cannot be compared and are left out).
    func differences(from other: StoreOptions) -> [String] {
        var out: [String] = []
        func check<T: Equatable>(_ name: String, _ a: T, _ b: T) { if a != b { out.append("\(name): \(a) ≠ \(b)") } }
        check("durability", durability, other.durability)
        check("principal", principal, other.principal)
        check("blockSize", blockSize, other.blockSize)
        check("memtableSize", memtableSize, other.memtableSize)
        check("segmentSize", segmentSize, other.segmentSize)
        check("cacheSize", cacheSize, other.cacheSize)
        check("bloomBitsPerKey", bloomBitsPerKey, other.bloomBitsPerKey)
        check("syncInterval", syncInterval, other.syncInterval)
        check("encryptionKey", encryptionKey.map(\.description) ?? "nil", other.encryptionKey.map(\.description) ?? "nil")
        return out
    }
}
