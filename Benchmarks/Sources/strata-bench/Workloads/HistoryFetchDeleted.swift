import Strata

/// `history-fetch-deleted`: history-fetch after 10,000 range deletions. The store is loaded and
/// settled as for history-fetch, then `deleteMessages(start:end:)` removes the oldest messages
/// one range at a time, round-robin over the channels (untimed; the range tombstones stay in the
/// memtable). Then the newest 100 messages of a random channel are fetched, as history-fetch does:
/// range deletions must not make reads slower. Strata only (the peers' range deletions are not
/// wired up in the bench).
struct HistoryFetchDeleted: Workload {
    let name = "history-fetch-deleted"
    let summary = "fetch the newest 100 messages of a random channel after 10,000 range deletions"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 50_000
    let quickOperations = 5_000
    /// Range deletions made before the timed fetches.
    static let deletions = 10_000

    func operationUnit(_ run: RunContext) -> String { "one fetch of the newest 100 messages" }

    func unavailability(on engine: EngineKind) -> String? {
        engine == .strata ? nil : "range deletions are measured on Strata only"
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (h, loaded) = try HistoryEngines.openLoaded(run, recorder: recorder)
        guard let strata = h as? StrataHistory else { throw BenchError("\(run.engine) has no range deletions here") }
        var tokens = loaded
        let channels = run.config.channels
        // Per channel, how many of its oldest messages are deleted.
        var removed = [Int](repeating: 0, count: channels)
        var deleted = 0
        for i in 0..<Self.deletions {
            let c = i % channels
            // Keep the newest 100 of every channel: those are what the fetches check.
            guard tokens[c].count > 100 else { continue }
            let tt = tokens[c].removeFirst()
            removed[c] += 1
            try strata.deleteMessages(channel: c, through: tt)
            deleted += 1
            recorder.preparing(done: deleted, of: Self.deletions)
        }
        var rng = XorShift64Star(seed: run.config.seed)
        for _ in 0..<run.operations {
            let c = rng.below(channels)
            var page: [HistoryItem] = []
            _ = try recorder.measureWork { () throws -> (items: Int, bytes: Int) in
                page = try h.fetch(channel: c, limit: 100)
                return (page.count, page.reduce(0) { $0 + $1.message.utf8.count })
            }
            // Checked as history-fetch checks (outside the timed region), so that the two compare.
            let n = min(100, tokens[c].count)
            guard page.count == n else {
                throw BenchError("\(run.engine) fetched \(page.count) messages of channel \(c), expected \(n)")
            }
            for (j, m) in page.enumerated() {
                let index = tokens[c].count - n + j
                guard m.timetoken == tokens[c][index],
                      m.message == HistoryEngines.message(channel: c, removed[c] + index) else {
                    throw BenchError("\(run.engine) fetched a wrong message \(removed[c] + index) of channel \(c)")
                }
            }
        }
        let close = try Clock.seconds { try h.close() }
        return RunOutcome(records: run.count - deleted, closeSeconds: close)
    }
}

extension StrataHistory {
    /// Deletes the messages of `channel` up to and including timetoken `through` with one range deletion.
    func deleteMessages(channel c: Int, through tt: UInt64) throws {
        try channels[c].deleteMessages(start: Timetoken(tt - 1), end: Timetoken(tt))
    }
}
