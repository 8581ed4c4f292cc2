import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Faults under repeating replication: a gateway killed mid-push and restarted, PostgreSQL
/// restarted, the gateway stopped for a while, a store reopened mid-replication. Each time the
/// replication resumes from its checkpoints, and in the end every side holds every document
/// exactly once, at the same revision, with no conflict.
@Suite("Replication faults", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct ReplicationFaultTests {
    /// Polls until `stores` and the server hold exactly `expected` (winners by id, no conflicts).
    static func awaitExactly(_ expected: [String: String], stores: [ReplicaStore], server: GatewayHTTPClient,
                             seconds: Double = 90) async throws -> (Bool, String) {
        var report = ""
        let done = try await waitUntil(seconds: seconds, interval: .milliseconds(500)) {
            let serverState: ServerSnapshot
            do {
                serverState = try await server.snapshot()
            } catch {
                report = "server: \(error)"  // a snapshot taken while a document changed, or the gateway down
                return false
            }
            let serverWinners = serverState.liveWinners
            let serverConflicts = serverState.documents.values.filter { !$0.conflicts.isEmpty }.map(\.id)
            var ok = serverWinners == expected && serverConflicts.isEmpty
            report = "server: \(serverWinners.count) of \(expected.count) documents, conflicts \(serverConflicts.sorted().prefix(5))"
            for store in stores {
                let snapshot = try store.snapshot()
                let storeWinners = snapshot.documents.mapValues(\.winner)
                let conflicts = snapshot.documents.filter { !$0.value.conflicts.isEmpty }.map(\.key)
                ok = ok && storeWinners == expected && conflicts.isEmpty
                report += "; \(store.name): \(storeWinners.count) documents, \(storeWinners.filter { expected[$0.key] != $0.value }.count) differ, conflicts \(conflicts.sorted().prefix(5))"
            }
            return ok
        }
        return (done, report)
    }

    /// Each document exactly once in the store's change feed (no revision applied twice).
    static func expectFeedHoldsEachOnce(_ store: ReplicaStore, _ ids: some Collection<String>) throws {
        let feed = try store.db.changes(since: 0).changes
        let counts = Dictionary(feed.map { ($0.id, 1) }, uniquingKeysWith: +)
        let repeated = counts.filter { $0.value > 1 }
        #expect(repeated.isEmpty, "\(store.name): documents changed more than once in the feed: \(repeated.sorted { $0.key < $1.key }.prefix(10))")
        #expect(Set(counts.keys) == Set(ids), "\(store.name): the feed names \(counts.count) documents, expected \(ids.count)")
    }

    @Test("a gateway killed (kill -9) mid-push and restarted: the push resumes, nothing lost or duplicated")
    func gatewayKilledMidPush() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let expected = try await saveDocuments(a.db, prefix: "doc", count: 2000)
            var pushConfiguration = cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: 0)
            pushConfiguration.batchSize = 50
            let push = try a.db.startReplication(with: pushConfiguration)
            defer { push.stop() }
            let pushLog = ReplicationEventLog(push)
            let pull = try b.db.startReplication(with: cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: 1))
            defer { pull.stop() }

            let started = await waitUntil(seconds: 60, interval: .milliseconds(5)) { pushLog.sent >= 100 }
            #expect(started, "no batch sent: \(pushLog.all.suffix(3))")
            cluster.gateways[0].kill()
            let sentAtKill = pushLog.sent
            #expect(sentAtKill < 2000, "the push ended before the kill; the test proves nothing")
            let offline = await waitUntil(seconds: 30, interval: .milliseconds(20)) { push.status == .offline }
            #expect(offline, "the replication did not go offline: \(push.status)")
            try cluster.gateways[0].start()

            let (done, report) = try await Self.awaitExactly(expected, stores: [a, b], server: server)
            #expect(done, "\(report)")
            try Self.expectFeedHoldsEachOnce(a, expected.keys)
            try Self.expectFeedHoldsEachOnce(b, expected.keys)
            // Converged; each goes idle once it has noted that it caught up.
            let idle = await waitUntil(seconds: 30, interval: .milliseconds(20)) { push.status == .idle && pull.status == .idle }
            #expect(idle, "\(push.status) \(pull.status)")
            print("gateway killed mid-push after \(sentAtKill) of 2000 documents sent; \(report)")
        }
    }

    @Test("PostgreSQL killed and restarted under repeating replications: both sides catch up")
    func postgresRestarted() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let ra = try a.db.startReplication(with: cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: 0))
            let rb = try b.db.startReplication(with: cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: 1))
            defer { ra.stop(); rb.stop() }
            var expected = try await saveDocuments(a.db, prefix: "before", count: 200)
            let (first, firstReport) = try await Self.awaitExactly(expected, stores: [a, b], server: server)
            #expect(first, "\(firstReport)")

            try cluster.postgres.kill()
            expected.merge(try await saveDocuments(a.db, prefix: "during-a", count: 200)) { $1 }
            expected.merge(try await saveDocuments(b.db, prefix: "during-b", count: 100)) { $1 }
            // The gateways answer 503 while PostgreSQL is down: the replications go offline and retry.
            let offline = await waitUntil(seconds: 30, interval: .milliseconds(20)) { ra.status == .offline || rb.status == .offline }
            #expect(offline, "no replication went offline while PostgreSQL was down: \(ra.status) \(rb.status)")
            try cluster.postgres.start()

            let (done, report) = try await Self.awaitExactly(expected, stores: [a, b], server: server)
            #expect(done, "\(report)\n\(cluster.diagnostics)")
            try Self.expectFeedHoldsEachOnce(b, expected.keys)
        }
    }

    @Test("the gateway stopped for a while (the network cut): writes on both sides meanwhile all arrive once it is back")
    func gatewayStoppedForAWhile() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let ra = try a.db.startReplication(with: cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main"))
            let rb = try b.db.startReplication(with: cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main"))
            defer { ra.stop(); rb.stop() }
            var expected = try await saveDocuments(a.db, prefix: "before", count: 100)
            let (first, firstReport) = try await Self.awaitExactly(expected, stores: [a, b], server: server)
            #expect(first, "\(firstReport)")

            cluster.gateways[0].stop()
            expected.merge(try await saveDocuments(a.db, prefix: "cut-a", count: 150)) { $1 }
            expected.merge(try await saveDocuments(b.db, prefix: "cut-b", count: 150)) { $1 }
            for n in 0..<10 {
                try await a.db.delete(id: "before-\(n)")
                expected["before-\(n)"] = nil
            }
            let offline = await waitUntil(seconds: 30, interval: .milliseconds(20)) { ra.status == .offline && rb.status == .offline }
            #expect(offline, "\(ra.status) \(rb.status)")
            try cluster.gateways[0].start()

            let (done, report) = try await Self.awaitExactly(expected, stores: [a, b], server: server)
            #expect(done, "\(report)")
            try Self.expectFeedHoldsEachOnce(b, Set(expected.keys).union((0..<10).map { "before-\($0)" }))
            let serverState = try await server.snapshot()
            #expect((0..<10).allSatisfy { serverState.documents["before-\($0)"]?.isDeleted == true })
        }
    }

    @Test("a store closed and reopened mid-replication resumes from its checkpoint")
    func storeReopenedMidReplication() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let expected = try await saveDocuments(a.db, prefix: "doc", count: 3000)
            let push = try await runOnce(a.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main"))
            #expect(push.status == .completed, "\(push.log.all.suffix(3))")

            var configuration = cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main")
            configuration.batchSize = 100
            let first = try b.db.startReplication(with: configuration)
            let firstLog = ReplicationEventLog(first)
            let started = await waitUntil(seconds: 60, interval: .milliseconds(5)) { firstLog.received >= 500 }
            #expect(started, "\(firstLog.all.suffix(3))")
            try b.reopen()
            let firstStatus = await finished(first, seconds: 30)
            #expect(firstStatus == .stopped)
            let receivedBefore = firstLog.received
            #expect(receivedBefore < 3000, "the first run had received everything before the close; the test proves nothing")

            let second = try b.db.startReplication(with: configuration)
            defer { second.stop() }
            let secondLog = ReplicationEventLog(second)
            let (done, report) = try await Self.awaitExactly(expected, stores: [b], server: server)
            #expect(done, "\(report)")
            // Resumed: the second run did not fetch everything again.
            #expect(secondLog.received < 3000, "the second run received \(secondLog.received) documents after \(receivedBefore)")
            try Self.expectFeedHoldsEachOnce(b, expected.keys)
        }
    }
}
