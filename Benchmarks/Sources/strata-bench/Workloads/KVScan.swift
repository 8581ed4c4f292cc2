/// `kv-scan`: one ordered pass over every record of a settled store of `--count` records (loaded
/// in random order, flushed and compacted / checkpointed, untimed); one operation is the next
/// `--batch` records. The record count is checked.
struct KVScan: Workload {
    let name = "kv-scan"
    let summary = "ordered scan of every record of a settled store, --batch records per operation"
    let defaultCount = 1_000_000
    let quickCount = 100_000

    func operationUnit(_ run: RunContext) -> String { "the next \(run.config.batch) records of a scan" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let kv = try KeyValueEngines.open(run.engine, directory: run.directory, config: run.config)
        try KeyValueEngines.load(kv, count: run.count, sequential: false, config: run.config) {
            recorder.preparing(done: $0, of: run.count)
        }
        try kv.settle()
        let size = max(run.config.batch, 1)
        recorder.expect((run.count + size - 1) / size)
        var seen = 0, extra = 0
        try kv.session {
            let scanner = try kv.scanner()
            while seen < run.count {
                let n = try recorder.measureWork { try scanner.next(min(size, run.count - seen)) }.items
                if n == 0 { break }
                seen += n
            }
            extra = try scanner.next(1).items
        }
        guard seen == run.count, extra == 0 else {
            throw BenchError("\(run.engine) scanned \(seen + extra) records, expected \(run.count)")
        }
        let close = try Clock.seconds { try kv.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }
}
