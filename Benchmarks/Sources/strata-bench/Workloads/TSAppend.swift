/// `ts-append`: `--count` `Double` events appended to `--series` series; one operation is one
/// atomic append of `--batch` events to one series, the operations going round-robin over the
/// series (so the series interleave).
struct TSAppend: Workload {
    let name = "ts-append"
    let summary = "append Double events over --series series, --batch per atomic append, series interleaved"
    let defaultCount = 1_000_000
    let quickCount = 100_000

    func operationUnit(_ run: RunContext) -> String { "one append of \(run.config.batch) events to one series" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let values = SeriesValues(config: run.config, count: run.count)
        let ts = try TimeSeriesEngines.open(run.engine, directory: run.directory, config: run.config, session: run.session)
        recorder.expect((run.count + run.config.batch - 1) / run.config.batch)
        _ = try TimeSeriesEngines.appendAll(ts, count: run.count, config: run.config, values: values) { _, values, append in
            try recorder.measure(items: values.count, bytes: values.count * 8) { try append() }
        }
        let close = try Clock.seconds { try ts.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsThroughSession: Bool { true }

    func tableNote(_ config: BenchConfig) -> String? { "values \(config.values.rawValue), B/record after a clean close, not settled (B/event)" }
}
