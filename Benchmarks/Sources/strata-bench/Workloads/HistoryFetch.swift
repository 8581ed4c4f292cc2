/// `history-fetch`: the newest 100 messages of a random channel (oldest first), in a settled store
/// of `--count` messages loaded as history-publish does (untimed). Every page is checked, outside
/// the timed region.
struct HistoryFetch: Workload {
    let name = "history-fetch"
    let summary = "fetch the newest 100 messages of a random channel"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 50_000
    let quickOperations = 5_000

    func operationUnit(_ run: RunContext) -> String { "one fetch of the newest 100 messages" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (h, tokens) = try HistoryEngines.openLoaded(run, recorder: recorder)
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let h = try h.reader()
            var rng = XorShift64Star(seed: ParallelReads.seed(run.config.seed, thread: thread))
            try h.session {
                for _ in 0..<operations {
                    let c = rng.below(run.config.channels)
                    // Only the fetch is timed, as in the other read workloads: building the
                    // expected messages costs more than a fetch and would hide the engines'
                    // difference.
                    var page: [HistoryItem] = []
                    _ = try recorder.measureWork { () throws -> (items: Int, bytes: Int) in
                        page = try h.fetch(channel: c, limit: 100)
                        return (page.count, page.reduce(0) { $0 + $1.message.utf8.count })
                    }
                    try check(page, tokens[c], channel: c, engine: run.engine)
                }
            }
        }
        let close = try Clock.seconds { try h.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsInThreads: Bool { true }

    private func check(_ page: [HistoryItem], _ tokens: [UInt64], channel c: Int, engine: EngineKind) throws {
        let n = min(100, tokens.count)
        guard page.count == n else { throw BenchError("\(engine) fetched \(page.count) messages of channel \(c), expected \(n)") }
        for (j, m) in page.enumerated() {
            let index = tokens.count - n + j
            guard m.timetoken == tokens[index], m.message == HistoryEngines.message(channel: c, index) else {
                throw BenchError("\(engine) fetched a wrong message \(index) of channel \(c)")
            }
        }
    }
}
