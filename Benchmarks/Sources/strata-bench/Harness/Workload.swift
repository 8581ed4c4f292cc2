import Foundation

/// A named workload. Each lives in its own file under Workloads/ and runs itself on each engine;
/// the runner gives it a fresh, empty directory and a ``Recorder``, and measures the directory
/// after it returns (the workload must have closed its store cleanly by then).
protocol Workload: Sendable {
    /// The name on the command line and in the output (a contract: never rename one).
    var name: String { get }
    /// One line for `--list` and the README.
    var summary: String { get }
    /// Records stored by a default run, and by a `--quick` one.
    var defaultCount: Int { get }
    var quickCount: Int { get }
    /// Timed operations of a read workload (ignored by write workloads), default and `--quick`.
    var defaultOperations: Int { get }
    var quickOperations: Int { get }
    /// Row groups of the table, e.g. `open` after a clean close and after a kill. Default `[""]`.
    var variants: [String] { get }
    /// What one timed operation (one latency sample) is, for the table header.
    func operationUnit(_ run: RunContext) -> String
    /// nil when the workload runs on `engine`, else why not (printed instead of figures).
    func unavailability(on engine: EngineKind) -> String?
    /// nil when the workload runs on `engine` with `config`, else why not (default:
    /// ``unavailability(on:)``; the sync-* workloads need a gateway).
    func unavailability(on engine: EngineKind, config: BenchConfig) -> String?
    /// Runs the workload on `run.engine`, timing each operation with `recorder`.
    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome
    /// The row name of a reference measured after the engines in the same run (not a store,
    /// e.g. `lz4-decompress` for ts-scan), or nil (the default) for none.
    var referenceName: String? { get }
    /// Times the reference's operations with `recorder` (in `directory`, fresh and empty, if it
    /// writes files); returns its outcome and the bytes it holds (the divisor of its B/record, in
    /// place of bytes on disk).
    func reference(config: BenchConfig, count: Int, operations: Int, directory: URL, recorder: Recorder) throws -> (outcome: RunOutcome, bytes: Int)
    /// A line printed under the table's title (e.g. the ts-* `--values`), or nil.
    func tableNote(_ config: BenchConfig) -> String?
    /// Whether `--session` adds a row of this workload run on Strata through a `StoreSession`
    /// (every call checked against a security policy; ``RunContext/session``). Default false.
    var runsThroughSession: Bool { get }
    /// Whether `--threads` splits the timed operations over several threads (``ParallelReads``);
    /// the bench refuses `--threads` above 1 for a workload that cannot. Default false.
    var runsInThreads: Bool { get }
}

extension Workload {
    var variants: [String] { [""] }
    var defaultOperations: Int { 0 }
    var quickOperations: Int { 0 }
    func unavailability(on engine: EngineKind) -> String? { nil }
    func unavailability(on engine: EngineKind, config: BenchConfig) -> String? { unavailability(on: engine) }
    var referenceName: String? { nil }
    func reference(config: BenchConfig, count: Int, operations: Int, directory: URL, recorder: Recorder) throws -> (outcome: RunOutcome, bytes: Int) {
        throw BenchError("\(name) has no reference")
    }
    func tableNote(_ config: BenchConfig) -> String? { nil }
    var runsThroughSession: Bool { false }
    var runsInThreads: Bool { false }
}

/// What one run of a workload on one engine gets.
struct RunContext: Sendable {
    let engine: EngineKind
    let variant: String
    let config: BenchConfig
    /// Records (events, messages, documents) the run stores.
    let count: Int
    /// Timed operations of a read workload.
    let operations: Int
    /// A fresh, empty directory for the engine's files (the store directory itself).
    let directory: URL
    /// This executable, for workloads that run a child process.
    let executable: URL
    /// Whether the run goes through a Strata `StoreSession` (the `--session` row).
    var session = false
}

/// What a workload run reports besides its timings.
struct RunOutcome: Sendable {
    /// Records the store holds at the end (the divisor of bytes on disk per record).
    var records: Int
    /// Seconds the final clean close took (flushes and background work an engine waits for).
    var closeSeconds: Double = 0
    /// Lines printed under the table after the row's name (e.g. push-fanout's notifications/s).
    var notes: [String] = []
}

/// A workload failed: a wrong result, or an engine error.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
