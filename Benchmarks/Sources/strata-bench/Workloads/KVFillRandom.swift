/// `kv-fill-random`: records written in hashed (random) key order (keys `BE(i·φ) ‖ BE(i)`).
struct KVFillRandom: Workload {
    let name = "kv-fill-random"
    let summary = "fill an empty store with 16-byte keys in random order, 24-byte values, --batch records per write"
    let defaultCount = 1_000_000
    let quickCount = 100_000

    func operationUnit(_ run: RunContext) -> String { "one write of \(run.config.batch) records" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        try KVFill.run(run, recorder: recorder, sequential: false)
    }
}
