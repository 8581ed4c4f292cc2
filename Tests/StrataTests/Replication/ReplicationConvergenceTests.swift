import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Three stores, two gateway processes, one PostgreSQL: random concurrent saves, updates and
/// deletes on every store under repeating bidirectional replication end, once quiet, with every
/// store and the server holding the same winner and the same conflicts of every document, and
/// no write of any store lost.
@Suite("Replication convergence", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct ReplicationConvergenceTests {
    /// What one store's workload did.
    struct Workload: Sendable {
        /// The revision id of the store's last save of each document.
        var lastSaved: [String: String] = [:]
        var touched: Set<String> = []
        var saves = 0
        var deletes = 0
    }

    /// Random saves (creating or updating), and deletes of this store's own documents and of a
    /// few shared ones that every store writes (those make conflicts).
    static func randomWorkload(_ db: DocumentDatabase, store: Int, seed: UInt64, operations: Int) async throws -> Workload {
        var rng = SplitMix64(seed: seed)
        var workload = Workload()
        for operation in 0..<operations {
            let id = rng.chance(250) ? "shared-\(rng.below(20))" : "s\(store)-\(rng.below(90))"
            workload.touched.insert(id)
            if rng.chance(750) {
                var document = try await db.document(id: id) ?? Document(id: id)
                document["value"] = .int(Int64(rng.below(1_000_000)))
                document["store"] = .int(Int64(store))
                document["operation"] = .int(Int64(operation))
                document.metadata.channels = ["c\(rng.below(3))"]
                let saved = try await db.save(document)
                workload.lastSaved[id] = saved.metadata.revisionID?.description
                workload.saves += 1
            } else if try await db.document(id: id) != nil {
                do {
                    try await db.delete(id: id)
                    workload.deletes += 1
                } catch StrataError.notFound {
                    // A pulled deletion came in between: nothing to delete.
                }
            }
            if rng.chance(100) { try await Task.sleep(for: .milliseconds(rng.below(30))) }
        }
        return workload
    }

    /// Polls until every store and the server agree; returns the states of the last poll.
    static func awaitAgreement(_ stores: [ReplicaStore], _ server: GatewayHTTPClient, seconds: Double)
        async throws -> (agreed: Bool, server: ServerSnapshot, replicas: [ReplicaSnapshot]) {
        var serverState = ServerSnapshot(documents: [:])
        var replicas: [ReplicaSnapshot] = []
        let agreed = try await waitUntil(seconds: seconds, interval: .milliseconds(500)) {
            // A snapshot taken while a document changes may be inconsistent: try again.
            guard let state = try? await server.snapshot() else { return false }
            serverState = state
            let expected = ReplicaSnapshot(server: serverState)
            replicas = try stores.map { try $0.snapshot(extraIDs: Set(serverState.documents.keys)) }
            return replicas.allSatisfy { $0 == expected }
        }
        return (agreed, serverState, replicas)
    }

    @Test("3 stores, 2 gateways, 1 PostgreSQL: random concurrent edits converge to the same winners and conflicts")
    func randomConcurrentEditsConverge() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let stores = try (0..<3).map { try ReplicaStore(name: "store-\($0)") }
            defer { stores.forEach { $0.remove() } }
            let replications = try stores.enumerated().map { i, store in
                try store.db.startReplication(with: cluster.configuration(
                    ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: i % 2))
            }
            defer { replications.forEach { $0.stop() } }

            let seed = UInt64(Date().timeIntervalSince1970 * 1000)
            let workloads = try await withThrowingTaskGroup(of: (Int, Workload).self) { group in
                for (i, store) in stores.enumerated() {
                    let db = store.db
                    group.addTask { (i, try await Self.randomWorkload(db, store: i, seed: seed &+ UInt64(i), operations: 250)) }
                }
                var results = [Workload](repeating: Workload(), count: stores.count)
                for try await (i, workload) in group { results[i] = workload }
                return results
            }
            let (agreed, serverState, replicas) = try await Self.awaitAgreement(stores, server, seconds: 90)
            let expected = ReplicaSnapshot(server: serverState)
            #expect(agreed, """
                seed \(seed): no agreement within 90 s; \
                \(replicas.enumerated().map { "store \($0.offset) vs server: \($0.element.differences(from: expected))" }.joined(separator: " | "))
                """)
            #expect(!expected.documents.isEmpty)
            #expect(workloads.allSatisfy { $0.saves > 0 && $0.deletes > 0 })
            for replication in replications { #expect(!replication.status.isFinal, "\(replication.status)") }

            // No write lost: each store's last save of each document is on the server, as a leaf
            // or in the history of one.
            for (i, workload) in workloads.enumerated() {
                for (id, revision) in workload.lastSaved.sorted(by: { $0.key < $1.key }) {
                    let document = serverState.documents[id]
                    #expect(document?.allRevisions.contains(revision) == true,
                            "seed \(seed): store \(i)'s save \(revision) of \(id) is not on the server (\(String(describing: document?.leaves.keys.sorted())))")
                }
            }

            // Resolving every conflict on store 0 ends it everywhere.
            let conflicted = expected.documents.filter { !$0.value.conflicts.isEmpty }
            for id in conflicted.keys.sorted() {
                guard let winner = try await stores[0].db.document(id: id) else { continue }
                var resolved = winner
                resolved["resolved"] = true
                try stores[0].resolveConflict(id: id, with: resolved)
            }
            let (settled, afterServer, afterReplicas) = try await Self.awaitAgreement(stores, server, seconds: 60)
            let after = ReplicaSnapshot(server: afterServer)
            #expect(settled, "seed \(seed): after resolving: \(afterReplicas.map { $0.differences(from: after) })")
            #expect(after.documents.values.allSatisfy { $0.conflicts.isEmpty },
                    "seed \(seed): conflicts left after resolving \(conflicted.count) documents")
            print("replication convergence: seed \(seed), \(expected.documents.count) live documents, \(conflicted.count) with conflicts, \(workloads.map(\.saves)) saves, \(workloads.map(\.deletes)) deletes")
        }
    }
}
