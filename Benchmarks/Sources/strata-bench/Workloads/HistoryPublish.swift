/// `history-publish`: `--count` messages (about 64 bytes of text, with a publisher) published to
/// `--channels` channels; one operation is one atomic publish of `--batch` messages to one
/// channel, the operations going round-robin over the channels.
struct HistoryPublish: Workload {
    let name = "history-publish"
    let summary = "publish text messages over --channels channels, --batch per atomic publish"
    let defaultCount = 1_000_000
    let quickCount = 100_000

    func operationUnit(_ run: RunContext) -> String { "one publish of \(run.config.batch) messages to one channel" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let h = try HistoryEngines.open(run.engine, directory: run.directory, config: run.config)
        recorder.expect((run.count + run.config.batch - 1) / run.config.batch)
        _ = try HistoryEngines.publishAll(h, count: run.count, config: run.config) { messages, publish in
            let bytes = messages.reduce(0) { $0 + $1.utf8.count }
            return try recorder.measure(items: messages.count, bytes: bytes) { try publish() }
        }
        let close = try Clock.seconds { try h.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }
}
