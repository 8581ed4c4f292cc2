import Foundation
import Strata

/// `sync-series`, in three variants, against a strata-gateway database on loopback
/// (`--gateway-url`), each run in a series of its own:
/// - `upload`: the series' writer, holding `--count` `Double` events, uploads them all in one
///   one-time client-to-server replication (1,000 per request); items/s is events/s.
/// - `initial pull`: a fresh store (a reader) pulls the series in one one-time server-to-client
///   replication (one commit per 1,000 events); items/s is events/s.
/// - `delivery`: the writer and a reader with repeating bidirectional replications; one
///   operation is an append on the writer until the reader's `subscribe()` stream delivers it
///   (`--operations`, default 200): p50/p99 are append-to-delivery times.
///
/// Strata only; skipped without a gateway.
struct SyncSeries: Workload {
    let name = "sync-series"
    let summary = "upload and pull --count Double events through a strata-gateway; append-to-delivery time between two stores"
    let defaultCount = 200_000
    let quickCount = 50_000
    let defaultOperations = 200
    let quickOperations = 100
    let variants = ["upload", "initial pull", "delivery"]

    func operationUnit(_ run: RunContext) -> String {
        switch run.variant {
        case "upload": return "one one-time push of \(run.count) events"
        case "initial pull": return "one one-time pull of \(run.count) events"
        default: return "an append on the writer until a reader's subscribe() stream delivers it"
        }
    }

    func unavailability(on engine: EngineKind, config: BenchConfig) -> String? {
        SyncSupport.unavailability(engine, config)
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        switch run.variant {
        case "upload", "initial pull": return try transfer(run, recorder: recorder, timePull: run.variant == "initial pull")
        default: return try delivery(run, recorder: recorder)
        }
    }

    private func transfer(_ run: RunContext, recorder: Recorder, timePull: Bool) throws -> RunOutcome {
        let path = "bench/" + SyncSupport.freshChannel()
        let sourceDirectory = run.directory.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: sourceDirectory, withIntermediateDirectories: true)
        let source = try Store.open(at: sourceDirectory)
        let series = try source.timeSeries(path, of: Double.self)
        // The claim first (a one-time push of no events), so that the store may append.
        let push = try SyncSupport.configuration(run.config) { .oneTimeClientToServerReplication(with: $0) }
        try SyncSupport.complete(try series.startReplication(with: push), what: "the claim")
        var start = 0
        while start < run.count {
            let end = min(start + 10_000, run.count)
            try series.append(contentsOf: (start..<end).map { 100 + Double($0 % 1_000) / 8 })
            start = end
            recorder.preparing(done: timePull ? start / 2 : start, of: run.count)
        }
        if timePull {
            try SyncSupport.complete(try series.startReplication(with: push), what: "the upload")
        } else {
            recorder.expect(1)
            try recorder.measure(items: run.count, bytes: run.count * 8) {
                try SyncSupport.complete(try series.startReplication(with: push), what: "the upload")
            }
        }
        try source.close()
        try FileManager.default.removeItem(at: sourceDirectory)
        guard timePull else { return RunOutcome(records: run.count, closeSeconds: 0) }

        let store = try Store.open(at: run.directory)
        let copy = try store.timeSeries(path, of: Double.self)
        let pull = try SyncSupport.configuration(run.config) { .oneTimeServerToClientReplication(with: $0) }
        recorder.expect(1)
        try recorder.measure(items: run.count, bytes: run.count * 8) {
            try SyncSupport.complete(try copy.startReplication(with: pull), what: "the pull")
        }
        let bounds = try copy.bounds()
        guard bounds.count == UInt64(run.count) else { throw BenchError("the pull brought \(bounds), not \(run.count) events") }
        let close = try Clock.seconds { try store.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    private func delivery(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let path = "bench/" + SyncSupport.freshChannel()
        var stores = try SyncSupport.openStores(run, sides: ["writer", "reader"])
        defer { for store in stores { try? store.close() } }
        let series = try stores.map { try $0.timeSeries(path, of: Double.self) }
        let configuration = try SyncSupport.configuration(run.config) { .repeatingBidirectionalReplication(with: $0) }
        let writerReplication = try series[0].startReplication(with: configuration)
        // The writer's claim first, then the reader's replication (its claim is refused).
        var appended = false
        for _ in 0..<600 where !appended {
            do {
                try series[0].append(0)
                appended = true
            } catch {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        guard appended else { throw BenchError("the writer's claim was not granted in 30 s") }
        let readerReplication = try series[1].startReplication(with: configuration)
        let watcher = StreamWatcher(series[1].subscribe(bufferSize: 100_000))
        recorder.expect(run.operations)
        for i in 0..<run.operations {
            let value = Double(i + 1)
            try recorder.measure(items: 1, bytes: 8) {
                try series[0].append(value)
                try SyncSupport.wait { try await watcher.waitFor { $0.value == value } }
            }
        }
        try SyncSupport.stop([writerReplication, readerReplication])
        let close = try Clock.seconds { for store in stores { try store.close() } }
        stores = []
        return RunOutcome(records: run.operations, closeSeconds: close)
    }

    func tableNote(_ config: BenchConfig) -> String? {
        "gateway \(config.gatewayURL ?? "none"); Double events, 1,000 per request or commit"
    }
}
