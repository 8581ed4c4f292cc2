import ArgumentParser
import Foundation

extension DurabilityMode: ExpressibleByArgument {}
extension EngineKind: ExpressibleByArgument {}
extension ValueShape: ExpressibleByArgument {}

/// Every workload, in the order a full run takes them. Names are a contract.
enum WorkloadRegistry {
    static let all: [any Workload] = [
        KVFillSeq(), KVFillRandom(), KVGetRandom(), KVScan(),
        TSAppend(), TSRange(), TSScan(), TSScanColumns(), TSLatest(), PushFanout(), PushOpen(), PushDeliver(),
        HistoryPublish(), HistoryFetch(), HistoryFetchDeleted(), HistoryCount(),
        DocSave(), DocGet(), DocIndexRange(),
        SyncPush(), SyncPull(), SyncHistory(), SyncSeries(),
        Open(), Backup(),
        PushTriggerEvaluation(),
    ]
}

@main
struct StrataBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-bench",
        abstract: "Strata side by side with SQLite (GRDB) and RocksDB on named workloads.",
        discussion: "Workloads:\n" + WorkloadRegistry.all.map { "  \($0.name): \($0.summary)" }.joined(separator: "\n")
            + "\n\nEach table gives items/s (records, events, messages, documents or rows), payload MB/s, "
            + "p50/p99/p999 latency of one operation, bytes on disk per record after a clean close, "
            + "\"strata ×\" (Strata's items/s over the engine's) and the engine's bytes per record over Strata's. "
            + "With --session, ts-append and ts-range also run through a StoreSession (\"strata (session)\").")

    @Argument(help: "Workloads to run (default: all).")
    var workloads: [String] = []

    @Option(help: "Records (events, messages, documents) each workload stores (default: the workload's own).")
    var count: Int?

    @Option(help: "Timed operations of read workloads (default: the workload's own).")
    var operations: Int?

    @Option(help: "Records per write batch / transaction, and per timed scan operation.")
    var batch: Int = 1000

    @Option(help: "Seed of the random choices.")
    var seed: UInt64 = 42

    @Option(help: "synchronous (Strata .synchronous, SQLite FULL, RocksDB sync=true) or buffered (.buffered, NORMAL, sync=false).")
    var durability: DurabilityMode = .buffered

    @Option(help: "Comma-separated engines: strata, sqlite, rocksdb.")
    var engines: String = "strata,sqlite,rocksdb"

    @Option(help: "Time series the ts-* workloads spread events over.")
    var series: Int = 100

    @Option(help: "Values of the ts-* workloads' events: random (scattered, two decimals), walk (a random walk in cents, like a price) or sensor (a smooth signal with noise, two decimals).")
    var values: ValueShape = .random

    @Option(help: "Channels the history-* workloads spread messages over.")
    var channels: Int = 100

    @Option(help: "Opens timed per variant of the open workload (default 3, 2 with --quick).")
    var openTrials: Int?

    @Option(help: "Threads the read workloads (kv-get-random, ts-range, ts-latest, history-fetch, history-count, doc-get, doc-index-range) split their timed operations over, reading one store at once (SQLite through a DatabasePool); 1...64. Other workloads run on one thread and are refused with --threads above 1.")
    var threads: Int = 1

    @Option(help: "Cache bytes every engine gets (Strata block cache, RocksDB block cache, SQLite page cache).")
    var cache: Int = 256 << 20

    @Option(help: "Where the stores are written (default: a new directory in the temporary directory). Use a real disk.")
    var directory: String?

    @Option(help: "Also write every figure, with machine facts, as JSON to this file.")
    var json: String?

    @Flag(help: "Small counts: every workload in about a minute.")
    var quick = false

    @Flag(help: "Also run ts-append and ts-range on Strata through a StoreSession, each call checked against a security policy: a \"strata (session)\" row beside \"strata\", and the ratio checked/unchecked.")
    var session = false

    @Flag(help: "Also run every workload on Strata with an encryption key (AES-256-GCM): a \"strata (encrypted)\" row beside \"strata\", and the ratio encrypted/clear.")
    var encrypted = false

    @Option(help: "The strata-gateway database URL the sync-* workloads replicate with, e.g. http://127.0.0.1:4984/bench (default: $STRATA_BENCH_GATEWAY_URL; without one they are skipped).")
    var gatewayURL: String?

    @Option(help: "The gateway user of the sync-* workloads, who may read and write every channel (default: $STRATA_BENCH_GATEWAY_USER).")
    var gatewayUser: String?

    @Option(help: "That user's password (default: $STRATA_BENCH_GATEWAY_PASSWORD).")
    var gatewayPassword: String?

    @Flag(help: "List the workloads and exit.")
    var list = false

    @Option(help: .hidden)
    var childFill: EngineKind?

    @Option(help: .hidden)
    var childDirectory: String?

    mutating func run() throws {
        var config = BenchConfig(count: count, operations: operations, batch: batch, seed: seed, durability: durability,
                                 series: series, values: values, channels: channels, quick: quick, openTrials: openTrials,
                                 cacheBytes: cache, session: session)
        config.encrypted = encrypted
        config.threads = threads
        let environment = ProcessInfo.processInfo.environment
        config.gatewayURL = gatewayURL ?? environment["STRATA_BENCH_GATEWAY_URL"].flatMap { $0.isEmpty ? nil : $0 }
        config.gatewayUser = gatewayUser ?? environment["STRATA_BENCH_GATEWAY_USER"]
        config.gatewayPassword = gatewayPassword ?? environment["STRATA_BENCH_GATEWAY_PASSWORD"]
        if let childFill {
            guard let childDirectory, let count else { throw ValidationError("--child-fill needs --child-directory and --count") }
            // The child fills the store of the row it serves: with the key when it is the encrypted row.
            config.sealed = encrypted
            try ChildFill.run(engine: childFill, directory: URL(fileURLWithPath: childDirectory), count: count, config: config)
        }
        if list {
            for w in WorkloadRegistry.all { print("\(w.name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(w.summary)") }
            return
        }
        guard batch > 0, count.map({ $0 > 0 }) ?? true, operations.map({ $0 > 0 }) ?? true, series > 0, channels > 0,
              openTrials.map({ $0 > 0 }) ?? true else {
            throw ValidationError("--batch, --count, --operations, --series, --channels and --open-trials must be positive")
        }
        var chosenEngines: [EngineKind] = []
        for name in engines.split(separator: ",") {
            guard let e = EngineKind(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("unknown engine '\(name)' (strata, sqlite, rocksdb)")
            }
            if !chosenEngines.contains(e) { chosenEngines.append(e) }
        }
        guard !chosenEngines.isEmpty else { throw ValidationError("--engines names no engine") }
        var chosen: [any Workload] = []
        for name in workloads {
            guard let w = WorkloadRegistry.all.first(where: { $0.name == name }) else {
                throw ValidationError("unknown workload '\(name)'; --list shows them")
            }
            chosen.append(w)
        }
        if chosen.isEmpty { chosen = WorkloadRegistry.all }
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be 1...64, not \(threads)") }
        let singleThreaded = chosen.filter { !$0.runsInThreads }.map(\.name)
        if threads > 1 && !singleThreaded.isEmpty {
            throw ValidationError("--threads \(threads): \(singleThreaded.joined(separator: ", ")) run on one thread only "
                                  + "(--threads is for " + WorkloadRegistry.all.filter(\.runsInThreads).map(\.name).joined(separator: ", ")
                                  + "; name those)")
        }

        let base: URL
        let ownsBase = directory == nil
        if let directory {
            base = URL(fileURLWithPath: directory).appendingPathComponent("strata-bench-\(getpid())")
        } else {
            base = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(getpid())")
        }
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { if ownsBase { try? FileManager.default.removeItem(at: base) } else { try? FileManager.default.removeItem(at: base) } }

        let startedAt = ISO8601DateFormatter().string(from: Date())
        var machine = MachineFacts.collect(storeDirectory: base)
        print("strata-bench: \(chosenEngines.map(\.rawValue).joined(separator: ", ")); durability \(durability.rawValue); "
              + "\(machine.cores) cores, \(machine.memoryBytes >> 30) GiB, load \(machine.loadAverageAtStart); "
              + "stores on \(machine.storeFileSystem) at \(base.path); ts-* values \(values.rawValue)"
              + "; \(threads) thread\(threads == 1 ? "" : "s")\(quick ? "; --quick" : "")")
        let runner = Runner(config: config, engines: chosenEngines, baseDirectory: base, executable: Self.executable())
        var failures: [String] = []
        var tables: [WorkloadResult] = []
        for w in chosen { tables += runner.run(w, failures: &failures) }
        machine = MachineFacts.collect(storeDirectory: base, startLoad: machine.loadAverageAtStart)
        print("\nload average at the end: \(machine.loadAverageAtEnd); SQLite \(machine.sqliteVersion), "
              + "GRDB \(machine.grdbVersion), RocksDB \(machine.rocksdbVersion), Strata \(machine.strataCommit)")
        if let json {
            let report = BenchReport(command: CommandLine.arguments, startedAt: startedAt, values: values.rawValue, threads: threads, machine: machine, workloads: tables)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
            print("wrote \(json)")
        }
        if !failures.isEmpty {
            FileHandle.standardError.write(Data(("strata-bench: \(failures.count) run(s) failed:\n"
                                                 + failures.map { "  " + $0 }.joined(separator: "\n") + "\n").utf8))
            throw ExitCode.failure
        }
    }

    /// This executable (for the child processes of `open`).
    static func executable() -> URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    }
}
