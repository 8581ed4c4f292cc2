/// `ts-range`: range reads of 1,000 consecutive sequences (fewer if a series is shorter) from a
/// random series at a random start, in a settled store of `--count` events loaded as ts-append
/// does (untimed). Every event's sequence and value is checked.
struct TSRange: Workload {
    let name = "ts-range"
    let summary = "read 1,000 consecutive events of a random series"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 20_000
    let quickOperations = 2_000

    func operationUnit(_ run: RunContext) -> String { "one range read of 1000 events" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (ts, lengths, values) = try TimeSeriesEngines.openLoaded(run, recorder: recorder)
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let ts = try ts.reader()
            var rng = XorShift64Star(seed: ParallelReads.seed(run.config.seed, thread: thread))
            try ts.session {
                for _ in 0..<operations {
                    let s = rng.below(run.config.series)
                    let length = Int(lengths[s])
                    let n = min(1000, length)
                    guard n > 0 else { continue }
                    let from = UInt64(rng.below(length - n + 1))
                    let events = try recorder.measure(items: n, bytes: n * 8) { try ts.range(series: s, from: from, count: n) }
                    guard events.count == n else {
                        throw BenchError("\(run.engine) returned \(events.count) events of series \(s) from \(from), expected \(n)")
                    }
                    for (j, e) in events.enumerated()
                    where e.sequence != from + UInt64(j) || e.value != values.value(series: s, sequence: e.sequence) {
                        throw BenchError("\(run.engine) returned a wrong event \(e.sequence) of series \(s)")
                    }
                }
            }
        }
        let close = try Clock.seconds { try ts.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsThroughSession: Bool { true }

    var runsInThreads: Bool { true }

    func tableNote(_ config: BenchConfig) -> String? { "values \(config.values.rawValue), B/record settled (B/event)" }
}
