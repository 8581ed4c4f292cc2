/// `kv-fill-seq`: records written in key order (keys `BE(i) ‖ BE(i·φ)`).
struct KVFillSeq: Workload {
    let name = "kv-fill-seq"
    let summary = "fill an empty store with 16-byte keys in key order, 24-byte values, --batch records per write"
    let defaultCount = 1_000_000
    let quickCount = 100_000

    func operationUnit(_ run: RunContext) -> String { "one write of \(run.config.batch) records" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        try KVFill.run(run, recorder: recorder, sequential: true)
    }
}
