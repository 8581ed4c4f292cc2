import Foundation

/// `open`: the time to open a store holding `--count` records and read one of them (every engine
/// opens lazily somewhere: SQLite reads its schema on first use), in two variants:
/// - `clean close`: filled (random order, untimed), closed cleanly, then opened and closed
///   `trials` times;
/// - `after kill`: a child process (this executable, hidden `--child-fill` mode) fills a fresh
///   store and is SIGKILLed right after its last write returned; then the store is opened
///   (recovering the log / WAL). Repeated `trials` times, each on a fresh store.
///
/// The kv-* records are the "events" stored. Bytes on disk are those after the last clean close.
struct Open: Workload {
    let name = "open"
    let summary = "open a store holding --count records and read one, after a clean close and after a kill -9"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    /// Trials per variant (the latency samples): `--open-trials`, else 3, or 2 with `--quick`.
    static func trials(_ config: BenchConfig) -> Int {
        config.openTrials ?? (config.quick ? 2 : 3)
    }
    let variants = ["clean close", "after kill"]

    func operationUnit(_ run: RunContext) -> String { "open + one get" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let trials = Self.trials(run.config)
        recorder.expect(trials)
        var rng = XorShift64Star(seed: run.config.seed)
        var closeSeconds = 0.0
        func timedOpen() throws {
            let i = rng.below(run.count)
            let key = Records.key(i, sequential: false)
            let kv = try recorder.measure(items: 1, bytes: 0) { () throws -> any KeyValueEngine in
                let kv = try KeyValueEngines.open(run.engine, directory: run.directory, config: run.config)
                var value: [UInt8]?
                try kv.session { value = try kv.get(key) }
                guard let value, value.withUnsafeBytes({ Records.isValue($0, of: i) }) else {
                    throw BenchError("\(run.engine) lost record \(i) (open \(run.variant))")
                }
                return kv
            }
            closeSeconds = try Clock.seconds { try kv.close() }
        }
        if run.variant == "clean close" {
            let kv = try KeyValueEngines.open(run.engine, directory: run.directory, config: run.config)
            try KeyValueEngines.load(kv, count: run.count, sequential: false, config: run.config) {
                recorder.preparing(done: $0, of: run.count)
            }
            try kv.close()
            for _ in 0..<trials { try timedOpen() }
        } else {
            for trial in 0..<trials {
                try FileManager.default.removeItem(at: run.directory)
                try FileManager.default.createDirectory(at: run.directory, withIntermediateDirectories: true)
                try fillInChildAndKill(run)
                recorder.preparing(done: trial + 1, of: trials)
                try timedOpen()
            }
        }
        return RunOutcome(records: run.count, closeSeconds: closeSeconds)
    }

    /// Runs `strata-bench --child-fill` on `run.directory` and SIGKILLs it once it reports that
    /// every write returned.
    private func fillInChildAndKill(_ run: RunContext) throws {
        let process = Process()
        process.executableURL = run.executable
        process.arguments = ["--child-fill", run.engine.rawValue, "--child-directory", run.directory.path,
                             "--count", String(run.count), "--batch", String(run.config.batch),
                             "--durability", run.config.durability.rawValue, "--cache", String(run.config.cacheBytes)]
            + (run.config.sealed ? ["--encrypted"] : [])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var seen = Data()
        let ready = Data("ready\n".utf8)
        while !seen.contains(ready) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        guard seen.range(of: ready) != nil else {
            throw BenchError("the --child-fill process for \(run.engine) exited before it was ready")
        }
    }
}

/// The hidden `--child-fill` mode: fills a store with records in random order, prints "ready",
/// and waits to be killed (it never closes the store).
enum ChildFill {
    static func run(engine: EngineKind, directory: URL, count: Int, config: BenchConfig) throws -> Never {
        let kv = try KeyValueEngines.open(engine, directory: directory, config: config)
        try KeyValueEngines.load(kv, count: count, sequential: false, config: config)
        let parent = getppid()
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        // Wait to be killed; should the parent die first, go too (without closing the store).
        while getppid() == parent { sleep(1) }
        exit(1)
    }
}
