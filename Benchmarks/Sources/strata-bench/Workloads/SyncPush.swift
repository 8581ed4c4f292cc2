import Foundation
import Strata

/// `sync-push`: a store holding `--count` documents of about 300 bytes pushes them all to a
/// strata-gateway database on loopback (`--gateway-url`), in one one-time client-to-server
/// replication (`_revs_diff`, `_bulk_docs` with `new_edits: false`, 1,000 documents per batch,
/// checkpoints). One operation is the whole replication; items/s is documents/s. Strata only;
/// skipped without a gateway.
struct SyncPush: Workload {
    let name = "sync-push"
    let summary = "push --count documents of ~300 bytes to a strata-gateway on loopback (one one-time replication)"
    let defaultCount = 10_000
    let quickCount = 10_000

    func operationUnit(_ run: RunContext) -> String { "one one-time push of \(run.count) documents" }

    func unavailability(on engine: EngineKind, config: BenchConfig) -> String? {
        SyncSupport.unavailability(engine, config)
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let store = try Store.open(at: run.directory)
        let db = try store.documents("bench")
        let channel = SyncSupport.freshChannel()
        try SyncSupport.fill(db, count: run.count, channel: channel) { recorder.preparing(done: $0, of: run.count) }
        let configuration = try SyncSupport.configuration(run.config) { .oneTimeClientToServerReplication(with: $0) }
        recorder.expect(1)
        try recorder.measure(items: run.count, bytes: run.count * 300) {
            let replication = try db.startReplication(with: configuration)
            try SyncSupport.complete(replication, what: "the push")
        }
        let close = try Clock.seconds { try store.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    func tableNote(_ config: BenchConfig) -> String? {
        "gateway \(config.gatewayURL ?? "none"); documents of about 300 bytes of JSON, 1,000 per batch"
    }
}
