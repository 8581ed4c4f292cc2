import Foundation
import Synchronization
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension GatewayCluster {
    /// A replication configuration of `kind` for gateway database `database` through gateway
    /// `gateway`, with Basic credentials, and retries at most 1 s apart (so that fault tests
    /// resume soon after the fault ends).
    func configuration(_ kind: (URL) -> ReplicationConfiguration, database: String, gateway: Int = 0,
                       user: String = "admin", password: String = "admin") -> ReplicationConfiguration {
        var configuration = kind(gateways[gateway].databaseURL(database))
        configuration.authentication = .basic(user: user, password: password)
        configuration.maximumRetryDelay = .seconds(1)
        return configuration
    }
}

/// Consumes a replication's events (one consumer per replication) and keeps them for the test.
final class ReplicationEventLog: Sendable {
    private let events = Mutex<[ReplicationEvent]>([])

    init(_ replication: Replication) {
        let stream = replication.events
        Task { [self] in
            // The stream ends by throwing a failure (also logged as its `.failed` event) or the close.
            for try await event in stream { self.events.withLock { $0.append(event) } }
        }
    }

    /// Every event so far.
    var all: [ReplicationEvent] { events.withLock { $0 } }

    /// The highest `completed` of the `.sending` events (documents sent so far).
    var sent: Int {
        all.reduce(0) { if case .sending(let p) = $1 { return max($0, p.completed) } else { return $0 } }
    }

    /// The highest `completed` of the `.receiving` events (documents received so far).
    var received: Int {
        all.reduce(0) { if case .receiving(let p) = $1 { return max($0, p.completed) } else { return $0 } }
    }

    /// The `.failed` events' errors.
    var failures: [StrataError] {
        all.compactMap { if case .failed(let error) = $0 { return error } else { return nil } }
    }
}

/// Waits (at most `seconds`) for a replication to end; nil if it did not.
func finished(_ replication: Replication, seconds: Double = 90) async -> ReplicationStatus? {
    switch await awaitBounded(seconds: seconds, { await replication.finished() }) {
    case .success(let status)?: return status
    default: return nil
    }
}

/// Runs a one-time replication of `db` with `configuration` to its end; returns its final status
/// (nil if it did not end within `seconds`) and its event log.
func runOnce(_ db: DocumentDatabase, _ configuration: ReplicationConfiguration,
             seconds: Double = 90) async throws -> (status: ReplicationStatus?, log: ReplicationEventLog) {
    let replication = try db.startReplication(with: configuration)
    let log = ReplicationEventLog(replication)
    let status = await finished(replication, seconds: seconds)
    if status == nil { replication.stop() }
    return (status, log)
}

/// Saves `count` documents `<prefix>-<n>` (fields `n` and `text`, channels `channels`) in
/// batches; returns their revision ids by document id.
func saveDocuments(_ db: DocumentDatabase, prefix: String, count: Int, channels: [String] = [],
                   fields: [String: JSON] = [:]) async throws -> [String: String] {
    var revisions: [String: String] = [:]
    for start in stride(from: 0, to: count, by: 500) {
        var batch: [Document] = []
        for n in start..<min(start + 500, count) {
            var document = Document(id: "\(prefix)-\(n)", fields: fields)
            document["n"] = .int(Int64(n))
            document["text"] = .string("document \(n) of \(prefix), some words to make it about a hundred bytes long")
            document.metadata.channels = channels
            batch.append(document)
        }
        for saved in try await db.save(contentsOf: batch) { revisions[saved.metadata.id] = saved.metadata.revisionID?.description }
    }
    return revisions
}

/// The winners of the live documents of `db` whose ids start with `prefix`.
func winners(_ store: ReplicaStore, prefix: String = "") throws -> [String: String] {
    try store.snapshot().documents.filter { $0.key.hasPrefix(prefix) }.mapValues(\.winner)
}

/// Collects what a database's live change stream reports, for checks of `isExternal`.
final class ChangeCollector: Sendable {
    private let changes = Mutex<[DocumentChange]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ db: DocumentDatabase) throws {
        let stream = try db.changes()
        let consumer = Task { [weak self] in
            do {
                for try await batch in stream {
                    guard let self else { return }
                    self.changes.withLock { $0 += batch }
                }
            } catch {}
        }
        task.withLock { $0 = consumer }
    }

    deinit { task.withLock { $0?.cancel() } }

    var all: [DocumentChange] { changes.withLock { $0 } }
}
