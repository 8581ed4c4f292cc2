import Foundation

/// The engines the bench compares, by their `--engines` names.
enum EngineKind: String, CaseIterable, Codable, Sendable {
    case strata, sqlite, rocksdb
}

/// `--durability`: when a write returns relative to stable storage, mapped per engine
/// (Strata `.synchronous`/`.buffered`, SQLite `synchronous=FULL`/`NORMAL`, RocksDB `sync=true`/`false`).
enum DurabilityMode: String, CaseIterable, Codable, Sendable {
    case synchronous, buffered
}

/// `--values`: the `Double` values the ts-* workloads append (the same for every engine of a run,
/// derived from `--seed`): `random` (scattered over 100.00…1099.99), `walk` (a random walk in cents,
/// like a price) or `sensor` (a smooth signal with gaussian noise, like a thermometer).
enum ValueShape: String, CaseIterable, Codable, Sendable {
    case random, walk, sensor
}

/// Everything a workload run needs to know, resolved from the command line.
struct BenchConfig: Sendable {
    /// `--count`, overriding each workload's own default when given.
    var count: Int?
    /// `--operations`, overriding each read workload's own default when given.
    var operations: Int?
    var batch: Int
    var seed: UInt64
    var durability: DurabilityMode
    var series: Int
    /// `--values`: the shape of the ts-* workloads' values.
    var values: ValueShape = .random
    var channels: Int
    var quick: Bool
    /// `--open-trials`: opens timed per variant of the `open` workload.
    var openTrials: Int?
    /// Bytes of cache each engine gets (Strata block cache, RocksDB LRU block cache, SQLite page cache).
    var cacheBytes: Int
    /// `--session`: the workloads that can (``Workload/runsThroughSession``) also run on Strata
    /// through a `StoreSession`, in a row of their own beside the unchecked one.
    var session = false
    /// `--encrypted`: every workload also runs on Strata with an encryption key, in a row of its
    /// own ("strata (encrypted)") beside the one in clear.
    var encrypted = false
    /// Whether this run's Strata stores are opened with the bench's key (the encrypted row).
    var sealed = false
    /// `--gateway-url` (or `STRATA_BENCH_GATEWAY_URL`): the strata-gateway database the sync-*
    /// workloads replicate with; nil skips them.
    var gatewayURL: String? = nil
    /// `--gateway-user` / `--gateway-password` (or `STRATA_BENCH_GATEWAY_USER` /
    /// `STRATA_BENCH_GATEWAY_PASSWORD`): a user of that database who may read and write every
    /// channel (`*`).
    var gatewayUser: String? = nil
    var gatewayPassword: String? = nil
    /// `--threads`: the threads the read workloads (``Workload/runsInThreads``) split their timed
    /// operations over, reading one store at once (``ParallelReads``).
    var threads = 1

    /// The number of records (events, messages, documents) a workload stores.
    func count(for workload: any Workload) -> Int {
        count ?? (quick ? workload.quickCount : workload.defaultCount)
    }

    /// The number of timed operations of a read workload.
    func operations(for workload: any Workload) -> Int {
        operations ?? (quick ? workload.quickOperations : workload.defaultOperations)
    }
}
