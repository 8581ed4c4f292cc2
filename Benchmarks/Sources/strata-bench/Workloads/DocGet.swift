/// `doc-get`: a random document by id, in a settled store of `--count` documents saved as
/// doc-save does (untimed); its `total` is checked.
struct DocGet: Workload {
    let name = "doc-get"
    let summary = "get a random document by id"
    let defaultCount = 1_000_000
    let quickCount = 50_000
    let defaultOperations = 200_000
    let quickOperations = 20_000

    func operationUnit(_ run: RunContext) -> String { "one get by id" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let d = try DocumentEngines.openLoaded(run, recorder: recorder)
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let d = try d.reader()
            var rng = XorShift64Star(seed: ParallelReads.seed(run.config.seed, thread: thread))
            try d.session {
                for _ in 0..<operations {
                    let i = rng.below(run.count)
                    let total = try recorder.measure(items: 1, bytes: 0) { try d.total(of: i) }
                    guard total == DocumentEngines.total(i) else { throw BenchError("\(run.engine) returned a wrong document \(i)") }
                }
            }
        }
        let close = try Clock.seconds { try d.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsInThreads: Bool { true }
}
