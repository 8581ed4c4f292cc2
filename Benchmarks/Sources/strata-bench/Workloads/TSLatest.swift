/// `ts-latest`: the latest event of a random series, in a settled store of `--count` events
/// loaded as ts-append does (untimed). Every answer is checked.
struct TSLatest: Workload {
    let name = "ts-latest"
    let summary = "read the latest event of a random series"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 500_000
    let quickOperations = 50_000

    func operationUnit(_ run: RunContext) -> String { "one latest-event read" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (ts, lengths, values) = try TimeSeriesEngines.openLoaded(run, recorder: recorder)
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let ts = try ts.reader()
            var rng = XorShift64Star(seed: ParallelReads.seed(run.config.seed, thread: thread))
            try ts.session {
                for _ in 0..<operations {
                    let s = rng.below(run.config.series)
                    let event = try recorder.measure(items: 1, bytes: 8) { try ts.latest(series: s) }
                    if lengths[s] == 0 {
                        guard event == nil else { throw BenchError("\(run.engine) found an event in empty series \(s)") }
                        continue
                    }
                    guard let event, event.sequence == lengths[s] - 1,
                          event.value == values.value(series: s, sequence: event.sequence) else {
                        throw BenchError("\(run.engine) returned a wrong latest event of series \(s)")
                    }
                }
            }
        }
        let close = try Clock.seconds { try ts.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsInThreads: Bool { true }

    func tableNote(_ config: BenchConfig) -> String? { "values \(config.values.rawValue), B/record settled (B/event)" }
}
