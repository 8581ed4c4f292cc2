/// The figures of one workload (one variant) on one engine; what the table prints and
/// `--json` writes.
struct EngineResult: Codable, Sendable {
    var engine: String
    /// nil when the engine ran the workload; else why it did not.
    var unavailable: String?
    var operations: Int = 0
    var items: Int = 0
    var payloadBytes: Int = 0
    /// Sum of the timed operations' durations.
    var seconds: Double = 0
    /// With `--threads` above 1, the wall time of the parallel phase (first operation's start to
    /// the last one's end, over every thread), the divisor of the rates; nil on one thread, where
    /// the rates divide by ``seconds``.
    var wallSeconds: Double?
    /// Items per second (records, events, messages, documents, rows — see the workload's unit).
    var itemsPerSecond: Double = 0
    /// Timed operations per second.
    var operationsPerSecond: Double = 0
    /// Payload megabytes (10^6 bytes of keys and values) per second.
    var megabytesPerSecond: Double = 0
    var latencyNanoseconds = Latency()
    /// Bytes of every file in the store directory after the workload and a clean close.
    var bytesOnDisk: Int = 0
    var records: Int = 0
    var bytesPerRecord: Double = 0
    var closeSeconds: Double = 0
    /// Strata's items per second divided by this engine's (how many times faster Strata is).
    var strataSpeedup: Double?
    /// This engine's bytes per record divided by Strata's.
    var diskRatioToStrata: Double?
    /// Figures of the run beyond the table's (e.g. push-fanout's notifications/s).
    var notes: [String]?

    struct Latency: Codable, Sendable {
        var p50: UInt64 = 0
        var p99: UInt64 = 0
        var p999: UInt64 = 0
        var max: UInt64 = 0
        var mean: Double = 0
    }
}

/// One table: a workload (and variant) with a row per engine.
struct WorkloadResult: Codable, Sendable {
    var workload: String
    var variant: String
    var operationUnit: String
    var count: Int
    var operations: Int
    var batch: Int
    var durability: String
    /// The threads that read at once (`--threads`), for a workload that runs in threads; nil for
    /// the others (always one thread).
    var threads: Int?
    /// What else the figures depend on (e.g. the ts-* `--values`), printed under the title.
    var note: String?
    var results: [EngineResult]
}

/// Everything `--json` writes.
struct BenchReport: Codable, Sendable {
    var command: [String]
    var startedAt: String
    /// `--values`: the shape of the ts-* workloads' values.
    var values: String?
    /// `--threads`: the threads of the read workloads.
    var threads: Int
    var machine: MachineFacts
    var workloads: [WorkloadResult]
}
