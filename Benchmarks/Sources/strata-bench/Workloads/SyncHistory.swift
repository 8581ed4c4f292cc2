import Foundation
import Strata

/// `sync-history`, in three variants, against a strata-gateway database on loopback
/// (`--gateway-url`), each run in a channel of its own:
/// - `upload`: a store holding `--count` messages of about 100 bytes uploads them all in one
///   one-time client-to-server replication (1,000 per request); items/s is messages/s.
/// - `initial pull`: a fresh store pulls the channel in one one-time server-to-client
///   replication (the database's change feed, one commit per 1,000 messages); items/s is
///   messages/s.
/// - `delivery`: two stores with repeating bidirectional replications of the channel; one
///   operation is a publish on the first store until the second store's `messages()` stream
///   delivers it (`--operations`, default 100): p50/p99 are publish-to-delivery times.
///
/// Strata only; skipped without a gateway.
struct SyncHistory: Workload {
    let name = "sync-history"
    let summary = "upload and pull --count messages of ~100 bytes through a strata-gateway; publish-to-delivery time between two stores"
    let defaultCount = 50_000
    let quickCount = 20_000
    let defaultOperations = 200
    let quickOperations = 100
    let variants = ["upload", "initial pull", "delivery"]

    func operationUnit(_ run: RunContext) -> String {
        switch run.variant {
        case "upload": return "one one-time push of \(run.count) messages"
        case "initial pull": return "one one-time pull of \(run.count) messages"
        default: return "a publish on one store until another store's messages() stream delivers it"
        }
    }

    func unavailability(on engine: EngineKind, config: BenchConfig) -> String? {
        SyncSupport.unavailability(engine, config)
    }

    static func message(_ i: Int) -> String {
        "message \(i): " + String(repeating: "lorem ipsum dolor sit amet ", count: 3)
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        switch run.variant {
        case "upload", "initial pull": return try transfer(run, recorder: recorder, timePull: run.variant == "initial pull")
        default: return try delivery(run, recorder: recorder)
        }
    }

    private func transfer(_ run: RunContext, recorder: Recorder, timePull: Bool) throws -> RunOutcome {
        let name = SyncSupport.freshChannel()
        let sourceDirectory = run.directory.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: sourceDirectory, withIntermediateDirectories: true)
        let source = try Store.open(at: sourceDirectory)
        let channel = try source.channel(name, of: String.self)
        var start = 0
        while start < run.count {
            let end = min(start + 1_000, run.count)
            try channel.publish(contentsOf: (start..<end).map(Self.message), publisher: "bench")
            start = end
            recorder.preparing(done: timePull ? start / 2 : start, of: run.count)
        }
        let push = try SyncSupport.configuration(run.config) { .oneTimeClientToServerReplication(with: $0) }
        if timePull {
            try SyncSupport.complete(try channel.startReplication(with: push), what: "the upload")
        } else {
            recorder.expect(1)
            try recorder.measure(items: run.count, bytes: run.count * 100) {
                try SyncSupport.complete(try channel.startReplication(with: push), what: "the upload")
            }
        }
        let final = try channel.history(limit: 1).messages.first
        guard final?.isProvisional == false else { throw BenchError("the upload left provisional messages") }
        try source.close()
        try FileManager.default.removeItem(at: sourceDirectory)
        guard timePull else { return RunOutcome(records: run.count, closeSeconds: 0) }

        let store = try Store.open(at: run.directory)
        let copy = try store.channel(name, of: String.self)
        let pull = try SyncSupport.configuration(run.config) { .oneTimeServerToClientReplication(with: $0) }
        recorder.expect(1)
        try recorder.measure(items: run.count, bytes: run.count * 100) {
            try SyncSupport.complete(try copy.startReplication(with: pull), what: "the pull")
        }
        let received = try copy.messageCount(since: Timetoken(0))
        guard received == run.count else { throw BenchError("the pull brought \(received) messages, not \(run.count)") }
        let close = try Clock.seconds { try store.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    private func delivery(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let name = SyncSupport.freshChannel()
        var stores = try SyncSupport.openStores(run, sides: ["a", "b"])
        defer { for store in stores { try? store.close() } }
        let channels = try stores.map { try $0.channel(name, of: String.self) }
        let configuration = try SyncSupport.configuration(run.config) { .repeatingBidirectionalReplication(with: $0) }
        let replications = try channels.map { try $0.startReplication(with: configuration) }
        let watcher = StreamWatcher(try channels[1].messages(bufferSize: 100_000))
        let a = channels[0]
        recorder.expect(run.operations)
        for i in 0..<run.operations {
            let text = "probe \(i)"
            try recorder.measure(items: 1, bytes: 100) {
                try a.publish(text)
                try SyncSupport.wait { try await watcher.waitFor { $0.message == text } }
            }
        }
        try SyncSupport.stop(replications)
        let close = try Clock.seconds { for store in stores { try store.close() } }
        stores = []
        return RunOutcome(records: run.operations, closeSeconds: close)
    }

    func tableNote(_ config: BenchConfig) -> String? {
        "gateway \(config.gatewayURL ?? "none"); String messages of about 100 bytes, 1,000 per request or commit"
    }
}

/// Reads a live stream until an element matches (used by one task at a time); a stream that
/// stalls for 60 s ends the run rather than hang it.
final class StreamWatcher<Element: Sendable>: @unchecked Sendable {
    private var iterator: AsyncThrowingStream<Element, any Error>.AsyncIterator

    init(_ stream: AsyncThrowingStream<Element, any Error>) {
        iterator = stream.makeAsyncIterator()
    }

    func waitFor(_ match: (Element) -> Bool) async throws {
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            FileHandle.standardError.write(Data("sync: a probe did not arrive in 60 s\n".utf8))
            exit(1)
        }
        defer { deadline.cancel() }
        while let element = try await iterator.next() {
            if match(element) { return }
        }
        throw BenchError("the live stream ended before the probe arrived")
    }
}
