import Dispatch
import Foundation
import Strata

/// What the sync-* workloads share: the gateway from the command line, documents of about 300
/// bytes in a channel of their own run (so that runs against one gateway database never see each
/// other's documents), and a way to wait for a replication from the bench's synchronous code.
enum SyncSupport {
    /// Why a sync-* workload cannot run with `config`, or nil.
    static func unavailability(_ engine: EngineKind, _ config: BenchConfig) -> String? {
        if engine != .strata { return "replication is Strata's only" }
        if config.gatewayURL == nil {
            return "skipped: no gateway (give --gateway-url, --gateway-user and --gateway-password, "
                + "or STRATA_BENCH_GATEWAY_URL/_USER/_PASSWORD; Scripts/gateway starts one)"
        }
        return nil
    }

    /// The configuration of a replication with the bench's gateway.
    static func configuration(_ config: BenchConfig, _ make: (URL) -> ReplicationConfiguration) throws -> ReplicationConfiguration {
        guard let text = config.gatewayURL, let url = URL(string: text) else {
            throw BenchError("bad --gateway-url \(config.gatewayURL ?? "")")
        }
        var replication = make(url)
        if let user = config.gatewayUser {
            replication.authentication = .basic(user: user, password: config.gatewayPassword ?? "")
        }
        replication.batchSize = 1_000
        return replication
    }

    /// A channel no other run uses.
    static func freshChannel() -> String { "bench-" + UUID().uuidString.lowercased() }

    /// Document `i` of a run: five fields and a text, about 300 bytes of JSON, in `channel`.
    static func document(_ i: Int, channel: String) -> Document {
        var document = Document(id: "\(channel)-\(i)", fields: [
            "customer": .string("customer-\(i % 1_000)"),
            "number": .string("INV-\(100_000 + i)"),
            "total": .int(Int64((i &* 7_919) % 100_000)),
            "paid": .bool(i % 3 == 0),
            "lines": .array([.object(["sku": .string("SKU-\(i % 97)"), "qty": .int(Int64(1 + i % 5))])]),
            "note": .string(String(repeating: "lorem ipsum dolor sit amet ", count: 6)),
        ])
        document.metadata.channels = [channel]
        document.metadata.type = "invoice"
        return document
    }

    /// Saves documents `0..<count` in batches of 1,000.
    static func fill(_ db: DocumentDatabase, count: Int, channel: String, progress: (Int) -> Void = { _ in }) throws {
        var start = 0
        while start < count {
            let end = min(start + 1_000, count)
            try db.save(contentsOf: (start..<end).map { document($0, channel: channel) })
            start = end
            progress(start)
        }
    }

    /// Runs `replication` to its end and throws unless it completed with nothing refused.
    static func complete(_ replication: Replication, what: String) throws {
        let status = try wait { await replication.finished() }
        guard status == .completed else { throw BenchError("\(what) ended \(status)") }
        guard replication.rejectedDocuments.isEmpty else {
            throw BenchError("\(what): the gateway refused \(replication.rejectedDocuments.count) documents, e.g. \(replication.rejectedDocuments[0])")
        }
    }

    /// A store for each of `sides`, opened in a subdirectory of that name of the run's directory.
    static func openStores(_ run: RunContext, sides: [String]) throws -> [Store] {
        var stores: [Store] = []
        do {
            for side in sides {
                let directory = run.directory.appendingPathComponent(side)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                stores.append(try Store.open(at: directory))
            }
        } catch {
            for store in stores { try? store.close() }
            throw error
        }
        return stores
    }

    /// Stops `replications` and waits for each to end.
    static func stop(_ replications: [Replication]) throws {
        for replication in replications {
            replication.stop()
            _ = try wait { await replication.finished() }
        }
    }

    /// Waits, from synchronous code, for `body` on a task.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = TaskOutcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { outcome.result = .success(try await body()) } catch { outcome.result = .failure(error) }
            done.signal()
        }
        done.wait()
        guard let result = outcome.result else { throw BenchError("a task ended without a result") }
        return try result.get()
    }
}

/// The result of a task that synchronous code waits for (``SyncSupport/wait(_:)``): written by
/// the task before it signals, read after the wait.
final class TaskOutcome<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
