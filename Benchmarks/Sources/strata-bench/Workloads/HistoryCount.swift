/// `history-count`: the number of messages of a random channel newer than the timetoken of a
/// random message of it (an unread count), in a settled store of `--count` messages loaded as
/// history-publish does (untimed). Every count is checked.
struct HistoryCount: Workload {
    let name = "history-count"
    let summary = "count the messages of a random channel since a random timetoken of it"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 5_000
    let quickOperations = 1_000

    func operationUnit(_ run: RunContext) -> String { "one count (items = messages counted)" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (h, tokens) = try HistoryEngines.openLoaded(run, recorder: recorder)
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let h = try h.reader()
            var rng = XorShift64Star(seed: ParallelReads.seed(run.config.seed, thread: thread))
            try h.session {
                for _ in 0..<operations {
                    let c = rng.below(run.config.channels)
                    guard !tokens[c].isEmpty else { continue }
                    let index = rng.below(tokens[c].count)
                    let expected = tokens[c].count - 1 - index
                    let n = try recorder.measureWork { (try h.count(channel: c, since: tokens[c][index]), 0) }.items
                    guard n == expected else {
                        throw BenchError("\(run.engine) counted \(n) messages of channel \(c) since #\(index), expected \(expected)")
                    }
                }
            }
        }
        let close = try Clock.seconds { try h.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsInThreads: Bool { true }
}
