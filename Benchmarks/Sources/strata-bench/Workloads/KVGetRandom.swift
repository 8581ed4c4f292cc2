/// `kv-get-random`: point lookups of random existing keys in a settled store of `--count` records
/// (loaded in random order, then flushed and compacted / checkpointed, untimed). A warm-up pass
/// of the same number of lookups (another seed) runs untimed first, on each thread with `--threads`.
/// Every value is checked.
struct KVGetRandom: Workload {
    let name = "kv-get-random"
    let summary = "random point lookups of existing keys in a settled store (values checked)"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 500_000
    let quickOperations = 50_000

    func operationUnit(_ run: RunContext) -> String { "one get" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let kv = try KeyValueEngines.open(run.engine, directory: run.directory, config: run.config)
        try KeyValueEngines.load(kv, count: run.count, sequential: false, config: run.config) {
            recorder.preparing(done: $0, of: run.count)
        }
        try kv.settle()
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let kv = try kv.reader()
            var key: [UInt8] = []
            func pass(seed: UInt64, timed: Bool) throws {
                var rng = XorShift64Star(seed: ParallelReads.seed(seed, thread: thread))
                for _ in 0..<operations {
                    let i = rng.below(run.count)
                    Records.key(i, sequential: false, into: &key)
                    let value: [UInt8]?
                    if timed {
                        value = try recorder.measure(items: 1, bytes: Records.keySize + Records.valueSize) { try kv.get(key) }
                    } else {
                        value = try kv.get(key)
                    }
                    guard let value, value.withUnsafeBytes({ Records.isValue($0, of: i) }) else {
                        throw BenchError("\(run.engine) returned a wrong value for record \(i)")
                    }
                }
            }
            try kv.session {
                try pass(seed: run.config.seed &+ 1, timed: false)
                try pass(seed: run.config.seed, timed: true)
            }
        }
        let close = try Clock.seconds { try kv.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsInThreads: Bool { true }
}
