/// `doc-save`: `--count` new documents of five fields saved, `--batch` per atomic save, with a
/// secondary index on `total` kept up to date.
struct DocSave: Workload {
    let name = "doc-save"
    let summary = "save documents (5 fields, one secondary index), --batch per atomic save"
    let defaultCount = 1_000_000
    let quickCount = 50_000

    func operationUnit(_ run: RunContext) -> String { "one save of \(run.config.batch) documents" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let d = try DocumentEngines.open(run.engine, directory: run.directory, config: run.config)
        recorder.expect((run.count + run.config.batch - 1) / run.config.batch)
        try DocumentEngines.saveAll(d, count: run.count, config: run.config) { ids, save in
            try recorder.measure(items: ids.count, bytes: 0) { try save() }
        }
        let close = try Clock.seconds { try d.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }
}
