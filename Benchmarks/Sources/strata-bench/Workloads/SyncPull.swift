import Foundation
import Strata

/// `sync-pull`, in two variants, both against a strata-gateway database on loopback
/// (`--gateway-url`), each run in a channel of its own:
/// - `initial pull`: a first store pushes `--count` documents of about 300 bytes (untimed); a
///   fresh store then pulls them all in one one-time server-to-client replication limited to the
///   run's channel (`_changes`, `_bulk_get`, one atomic commit per 1,000 documents). One
///   operation is the whole replication; items/s is documents/s.
/// - `first consistency`: two stores, each with a repeating bidirectional replication; one
///   operation is a save of one document on the first store until the second store's change
///   stream shows it (`--operations` of them, default 100): p50/p99 are the time to first
///   consistency.
///
/// Strata only; skipped without a gateway.
struct SyncPull: Workload {
    let name = "sync-pull"
    let summary = "pull --count documents of ~300 bytes from a strata-gateway; time for a change to reach another store"
    let defaultCount = 10_000
    let quickCount = 10_000
    let defaultOperations = 100
    let quickOperations = 100
    let variants = ["initial pull", "first consistency"]

    func operationUnit(_ run: RunContext) -> String {
        run.variant == "initial pull" ? "one one-time pull of \(run.count) documents"
            : "a save on one store until another store sees it, through repeating replications"
    }

    func unavailability(on engine: EngineKind, config: BenchConfig) -> String? {
        SyncSupport.unavailability(engine, config)
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        run.variant == "initial pull" ? try initialPull(run, recorder: recorder) : try firstConsistency(run, recorder: recorder)
    }

    private func initialPull(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let channel = SyncSupport.freshChannel()
        let sourceDirectory = run.directory.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: sourceDirectory, withIntermediateDirectories: true)
        let source = try Store.open(at: sourceDirectory)
        let sourceDB = try source.documents("bench")
        try SyncSupport.fill(sourceDB, count: run.count, channel: channel) { recorder.preparing(done: $0 / 2, of: run.count) }
        let push = try SyncSupport.configuration(run.config) { .oneTimeClientToServerReplication(with: $0) }
        try SyncSupport.complete(try sourceDB.startReplication(with: push), what: "the preparing push")
        try source.close()
        try FileManager.default.removeItem(at: sourceDirectory)

        let store = try Store.open(at: run.directory)
        let db = try store.documents("bench")
        var pull = try SyncSupport.configuration(run.config) { .oneTimeServerToClientReplication(with: $0) }
        pull.limitToChannels = [channel]
        recorder.expect(1)
        try recorder.measure(items: run.count, bytes: run.count * 300) {
            try SyncSupport.complete(try db.startReplication(with: pull), what: "the pull")
        }
        let received = try db.changes(since: 0).changes.count
        guard received == run.count else { throw BenchError("the pull brought \(received) documents, not \(run.count)") }
        let close = try Clock.seconds { try store.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    private func firstConsistency(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let channel = SyncSupport.freshChannel()
        var stores = try SyncSupport.openStores(run, sides: ["a", "b"])
        defer { for store in stores { try? store.close() } }
        let databases = try stores.map { try $0.documents("bench") }
        var configuration = try SyncSupport.configuration(run.config) { .repeatingBidirectionalReplication(with: $0) }
        configuration.limitToChannels = [channel]
        let replications = try databases.map { try $0.startReplication(with: configuration) }
        let watcher = ChangeWatcher(try databases[1].changes())
        let a = databases[0]
        recorder.expect(run.operations)
        for i in 0..<run.operations {
            var probe = SyncSupport.document(i, channel: channel)
            probe.metadata.channels = [channel]
            let id = probe.metadata.id
            try recorder.measure(items: 1, bytes: 300) {
                try a.save(probe)
                try SyncSupport.wait { try await watcher.waitFor(id) }
            }
        }
        try SyncSupport.stop(replications)
        let close = try Clock.seconds { for store in stores { try store.close() } }
        stores = []
        return RunOutcome(records: run.operations, closeSeconds: close)
    }

    /// Reads a database's change stream until a document id shows up (used by one task at a time).
    final class ChangeWatcher: @unchecked Sendable {
        private var iterator: AsyncThrowingStream<[DocumentChange], any Error>.AsyncIterator

        init(_ stream: AsyncThrowingStream<[DocumentChange], any Error>) {
            iterator = stream.makeAsyncIterator()
        }

        /// Returns when `id` shows up; throws when the stream ends first, or after 60 s (a
        /// replication that stalls fails the run rather than hang it).
        func waitFor(_ id: String) async throws {
            let deadline = Task {
                try await Task.sleep(for: .seconds(60))
                FileHandle.standardError.write(Data("sync-pull: \(id) did not arrive in 60 s\n".utf8))
                exit(1)
            }
            defer { deadline.cancel() }
            while let changes = try await iterator.next() {
                if changes.contains(where: { $0.id == id }) { return }
            }
            throw BenchError("the change stream ended before \(id) arrived")
        }
    }

    func tableNote(_ config: BenchConfig) -> String? {
        "gateway \(config.gatewayURL ?? "none"); documents of about 300 bytes of JSON, 1,000 per batch"
    }
}
