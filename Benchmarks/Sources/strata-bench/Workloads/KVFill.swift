/// Fills an empty store with `--count` records in batches of `--batch`, one atomic write (one
/// transaction) each; one operation is one batch. The shared body of kv-fill-seq and kv-fill-random.
enum KVFill {
    static func run(_ run: RunContext, recorder: Recorder, sequential: Bool) throws -> RunOutcome {
        let kv = try KeyValueEngines.open(run.engine, directory: run.directory, config: run.config)
        let size = max(run.config.batch, 1)
        recorder.expect((run.count + size - 1) / size)
        var batch = RecordBatch()
        var k: [UInt8] = [], v: [UInt8] = []
        try kv.session {
            var i = 0
            while i < run.count {
                let end = min(i + size, run.count)
                batch.removeAll()
                for j in i..<end { batch.append(j, sequential: sequential, scratchKey: &k, scratchValue: &v) }
                try recorder.measure(items: batch.count, bytes: batch.payloadBytes) { try kv.write(batch) }
                i = end
            }
        }
        let close = try Clock.seconds { try kv.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }
}
