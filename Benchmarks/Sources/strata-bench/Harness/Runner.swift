import Foundation

/// Runs workloads on engines, one after the other, each in a fresh directory, and turns the
/// recordings into ``WorkloadResult``s (printing each table as soon as it is complete).
struct Runner {
    let config: BenchConfig
    let engines: [EngineKind]
    let baseDirectory: URL
    let executable: URL
    let progress = ProgressBar()

    /// Runs `workload`; a failing engine is reported in its row and in `failures`.
    func run(_ workload: any Workload, failures: inout [String]) -> [WorkloadResult] {
        var tables: [WorkloadResult] = []
        for variant in workload.variants {
            var results: [EngineResult] = []
            var unit = ""
            let count = config.count(for: workload)
            let operations = config.operations(for: workload)
            for (engine, session, sealed) in rows(workload) {
                let row = session ? Self.sessionRow : sealed ? Self.encryptedRow : engine.rawValue
                let label = workload.name + (variant.isEmpty ? "" : " (\(variant))") + " " + row
                let directory = baseDirectory.appendingPathComponent(
                    "\(workload.name)\(variant.isEmpty ? "" : "-" + variant.replacingOccurrences(of: " ", with: "-"))-\(engine.rawValue)"
                    + (session ? "-session" : "") + (sealed ? "-encrypted" : ""))
                var config = self.config
                config.sealed = sealed
                let context = RunContext(engine: engine, variant: variant, config: config, count: count,
                                         operations: operations, directory: directory, executable: executable, session: session)
                unit = workload.operationUnit(context)
                if let why = workload.unavailability(on: engine, config: config) {
                    results.append(EngineResult(engine: row, unavailable: why))
                    continue
                }
                progress.start(label)
                do {
                    try? FileManager.default.removeItem(at: directory)
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    defer { try? FileManager.default.removeItem(at: directory) }
                    let recorder = Recorder(progress: progress, expectedOperations: max(operations, 1))
                    let outcome = try workload.run(context, recorder: recorder)
                    let disk = Self.directorySize(directory)
                    results.append(Self.result(row, recorder, outcome, disk: disk))
                } catch {
                    progress.finish()
                    let message = "\(workload.name)\(variant.isEmpty ? "" : " (\(variant))") on \(row) failed: \(error)"
                    FileHandle.standardError.write(Data((message + "\n").utf8))
                    failures.append(message)
                    results.append(EngineResult(engine: row, unavailable: "failed: \(error)"))
                }
                progress.finish()
            }
            if let reference = workload.referenceName {
                progress.start(workload.name + " " + reference)
                let directory = baseDirectory.appendingPathComponent("\(workload.name)-reference")
                defer { try? FileManager.default.removeItem(at: directory) }
                do {
                    try? FileManager.default.removeItem(at: directory)
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    let recorder = Recorder(progress: progress, expectedOperations: max(operations, 1))
                    let (outcome, bytes) = try workload.reference(config: config, count: count, operations: operations,
                                                                  directory: directory, recorder: recorder)
                    results.append(Self.result(reference, recorder, outcome, disk: bytes))
                } catch {
                    progress.finish()
                    let message = "\(workload.name) \(reference) failed: \(error)"
                    FileHandle.standardError.write(Data((message + "\n").utf8))
                    failures.append(message)
                    results.append(EngineResult(engine: reference, unavailable: "failed: \(error)"))
                }
                progress.finish()
            }
            Self.addRatios(&results)
            let table = WorkloadResult(workload: workload.name, variant: variant, operationUnit: unit, count: count,
                                       operations: operations, batch: config.batch,
                                       durability: config.durability.rawValue,
                                       threads: workload.runsInThreads ? config.threads : nil, note: workload.tableNote(config),
                                       results: results)
            TableReport.print(table)
            fflush(nil)
            tables.append(table)
        }
        return tables
    }

    /// The row of a run through a Strata `StoreSession` (`--session`).
    static let sessionRow = "strata (session)"

    /// The row of a run on Strata with an encryption key (`--encrypted`).
    static let encryptedRow = "strata (encrypted)"

    /// The runs of a table: each engine, and right after Strata itself, with `--session` Strata
    /// through a session (for the workloads that can) and with `--encrypted` Strata with a key.
    private func rows(_ workload: any Workload) -> [(engine: EngineKind, session: Bool, sealed: Bool)] {
        engines.flatMap { engine -> [(engine: EngineKind, session: Bool, sealed: Bool)] in
            guard engine == .strata else { return [(engine, false, false)] }
            var out = [(engine, false, false)]
            if config.session && workload.runsThroughSession { out.append((engine, true, false)) }
            if config.encrypted { out.append((engine, false, true)) }
            return out
        }
    }

    private static func result(_ engine: String, _ r: Recorder, _ outcome: RunOutcome, disk: Int) -> EngineResult {
        var e = EngineResult(engine: engine)
        e.operations = r.operations
        e.items = r.items
        e.payloadBytes = r.bytes
        e.seconds = Double(r.nanoseconds) / 1e9
        e.wallSeconds = r.wallNanoseconds.map { Double($0) / 1e9 }
        let seconds = e.wallSeconds ?? e.seconds
        if seconds > 0 {
            e.itemsPerSecond = Double(r.items) / seconds
            e.operationsPerSecond = Double(r.operations) / seconds
            e.megabytesPerSecond = Double(r.bytes) / seconds / 1e6
        }
        let h = r.histogram
        e.latencyNanoseconds = .init(p50: h.valueAtPercentile(50), p99: h.valueAtPercentile(99),
                                     p999: h.valueAtPercentile(99.9), max: h.max, mean: h.mean)
        e.bytesOnDisk = disk
        e.records = outcome.records
        e.bytesPerRecord = outcome.records > 0 ? Double(disk) / Double(outcome.records) : 0
        e.closeSeconds = outcome.closeSeconds
        e.notes = outcome.notes.isEmpty ? nil : outcome.notes
        return e
    }

    private static func addRatios(_ results: inout [EngineResult]) {
        guard let strata = results.first(where: { $0.engine == EngineKind.strata.rawValue && $0.unavailable == nil }) else { return }
        for i in results.indices where results[i].unavailable == nil {
            if results[i].itemsPerSecond > 0 { results[i].strataSpeedup = strata.itemsPerSecond / results[i].itemsPerSecond }
            if strata.bytesPerRecord > 0 { results[i].diskRatioToStrata = results[i].bytesPerRecord / strata.bytesPerRecord }
        }
    }

    /// The bytes of every regular file under `directory`, measured the same way for every engine.
    static func directorySize(_ directory: URL) -> Int {
        guard let paths = FileManager.default.subpaths(atPath: directory.path) else { return 0 }
        var total = 0
        for p in paths {
            var st = stat()
            if lstat(directory.appendingPathComponent(p).path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
                total += Int(st.st_size)
            }
        }
        return total
    }
}
