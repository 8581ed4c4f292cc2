import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One-time and server-to-client replications, `limitToChannels`, the client filter, and the
/// gateway users' channel rights, against real gateway processes.
@Suite("Replication modes and rights", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct ReplicationModeTests {
    @Test("one-time bidirectional and one-time server-to-client replications; the second run resumes from the checkpoints")
    func oneTimeAndServerToClient() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let aRevisions = try await saveDocuments(a.db, prefix: "a", count: 50)
            let bRevisions = try await saveDocuments(b.db, prefix: "b", count: 10)

            let push = try await runOnce(a.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 0))
            #expect(push.status == .completed, "\(push.log.all)")
            #expect(push.log.all.last == .completed)
            #expect(push.log.sent == 50)
            #expect(try await server.snapshot().liveWinners == aRevisions)

            let collector = try ChangeCollector(b.db)
            let pull = try await runOnce(b.db, cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication, database: "main", gateway: 1))
            #expect(pull.status == .completed, "\(pull.log.all)")
            #expect(pull.log.received == 50)
            #expect(try winners(b, prefix: "a-") == aRevisions)
            #expect(try winners(b, prefix: "b-") == bRevisions)
            // Server to client sends nothing.
            #expect(try await server.snapshot().liveWinners == aRevisions)
            // What replication brought is external; a local save is not.
            _ = try await b.db.save(Document(id: "b-local", fields: ["x": 1]))
            let seen = await waitUntil(seconds: 30) { collector.all.contains { $0.id == "b-local" } }
            #expect(seen)
            let changes = collector.all
            #expect(Set(changes.filter { $0.id.hasPrefix("a-") }.map(\.id)) == Set(aRevisions.keys))
            let pulledAreExternal = changes.filter { $0.id.hasPrefix("a-") }.allSatisfy { $0.isExternal }
            #expect(pulledAreExternal)
            #expect(changes.filter { $0.id == "b-local" }.map(\.isExternal) == [false])

            // Ten updates on A: the next runs move exactly those ten (checkpoints on both sides).
            var updated = aRevisions
            for n in 0..<10 {
                var document = try #require(try await a.db.document(id: "a-\(n)"))
                document["n"] = .int(Int64(1000 + n))
                updated["a-\(n)"] = try await a.db.save(document).metadata.revisionID?.description
            }
            // (The same URLs as before: a checkpoint belongs to one replication, named by its URL.)
            let push2 = try await runOnce(a.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 0))
            #expect(push2.status == .completed)
            #expect(push2.log.sent == 10)
            let pull2 = try await runOnce(b.db, cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication, database: "main", gateway: 1))
            #expect(pull2.status == .completed)
            #expect(pull2.log.received == 10)
            #expect(try winners(b, prefix: "a-") == updated)
            #expect(try await server.snapshot().liveWinners == updated)
        }
    }

    @Test("limitToChannels receives only those channels; the client filter with filterParameters sends only what it accepts")
    func channelsAndFilter() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            let c = try ReplicaStore(name: "c")
            defer { a.remove(); b.remove(); c.remove() }
            var east: [String: String] = [:]
            var all: [String: String] = [:]
            for owner in ["alice", "bob"] {
                let e = try await saveDocuments(a.db, prefix: "\(owner)-east", count: 10, channels: ["east"], fields: ["owner": .string(owner)])
                let w = try await saveDocuments(a.db, prefix: "\(owner)-west", count: 10, channels: ["west"], fields: ["owner": .string(owner)])
                let n = try await saveDocuments(a.db, prefix: "\(owner)-none", count: 5, fields: ["owner": .string(owner)])
                if owner == "alice" {
                    east = e
                    all = e.merging(w) { x, _ in x }.merging(n) { x, _ in x }
                }
            }

            var filtered = cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main")
            filtered.filter = { document, parameters in document["owner"] == parameters["owner"] }
            filtered.filterParameters = ["owner": "alice"]
            let push = try await runOnce(a.db, filtered)
            #expect(push.status == .completed, "\(push.log.all)")
            #expect(try await server.snapshot().liveWinners == all)

            var eastOnly = cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication, database: "main")
            eastOnly.limitToChannels = ["east"]
            let pullEast = try await runOnce(b.db, eastOnly)
            #expect(pullEast.status == .completed, "\(pullEast.log.all)")
            #expect(try winners(b) == east)

            let pullAll = try await runOnce(c.db, cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication, database: "main"))
            #expect(pullAll.status == .completed)
            #expect(try winners(c) == all)

            // A repeating replication limited to east keeps following east only.
            var following = cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main")
            following.limitToChannels = ["east"]
            let repeating = try b.db.startReplication(with: following)
            defer { repeating.stop() }
            let newer = try await saveDocuments(c.db, prefix: "late-east", count: 5, channels: ["east"])
            _ = try await saveDocuments(c.db, prefix: "late-west", count: 5, channels: ["west"])
            let push2 = try await runOnce(c.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main"))
            #expect(push2.status == .completed)
            let arrived = try await waitUntil(seconds: 60) { try winners(b, prefix: "late-east") == newer }
            #expect(arrived)
            #expect(try winners(b, prefix: "late-west").isEmpty)
            #expect(try winners(b).count == east.count + newer.count)
        }
    }

    @Test("a user never receives a document outside its read channels and cannot write into a channel it lacks")
    func userChannelRights() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let admin = try cluster.createDatabaseWithAdmin("main")
            try cluster.addUser("alice", database: "main", password: "alice-pw", read: ["east"], write: ["east"])
            try cluster.addUser("reader", database: "main", password: "reader-pw", read: ["east"], write: [])
            // Seeded by the admin over plain HTTP.
            var seeded: [JSON] = []
            for (prefix, channels) in [("e", ["east"]), ("w", ["west"]), ("x", ["east", "west"]), ("n", [])] as [(String, [String])] {
                for k in 0..<5 {
                    seeded.append(wireRevision(id: "\(prefix)-\(k)", generation: 1, digests: [testDigest("\(prefix)\(k)")],
                                               fields: ["k": .int(Int64(k))], channels: channels))
                }
            }
            let results = try await admin.bulkDocs(seeded)
            #expect(results.allSatisfy { $0["error"] == nil }, "\(results)")

            let store = try ReplicaStore(name: "alice")
            defer { store.remove() }
            let pull = try await runOnce(store.db, cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication,
                                                                         database: "main", user: "alice", password: "alice-pw"))
            #expect(pull.status == .completed, "\(pull.log.all)")
            let visible = Set((0..<5).flatMap { ["e-\($0)", "x-\($0)"] })
            #expect(Set(try winners(store).keys) == visible)

            // Alice's writes: into east (accepted), into west or no channel (refused), over a
            // document whose current winner is also in west (refused), an update in east (accepted).
            _ = try await store.db.save(Document(id: "alice-east", fields: ["v": 1]).inChannels(["east"]))
            _ = try await store.db.save(Document(id: "alice-west", fields: ["v": 1]).inChannels(["west"]))
            _ = try await store.db.save(Document(id: "alice-none", fields: ["v": 1]))
            var x0 = try #require(try await store.db.document(id: "x-0"))
            x0["k"] = 100
            x0.metadata.channels = ["east"]
            _ = try await store.db.save(x0)
            var e0 = try #require(try await store.db.document(id: "e-0"))
            e0["k"] = 100
            let e0Revision = try await store.db.save(e0).metadata.revisionID?.description
            let push = try await runOnce(store.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication,
                                                                         database: "main", user: "alice", password: "alice-pw"))
            #expect(push.status == .completed, "\(push.log.all)")
            let serverState = try await admin.snapshot()
            #expect(serverState.documents["alice-east"] != nil)
            #expect(serverState.documents["alice-west"] == nil)
            #expect(serverState.documents["alice-none"] == nil)
            #expect(serverState.documents["x-0"]?.winner == "1-\(testDigest("x0"))")
            #expect(serverState.documents["x-0"]?.leaves.count == 1)
            #expect(serverState.documents["e-0"]?.winner == e0Revision)
            // Still nothing outside east reached her store.
            #expect(try winners(store).keys.allSatisfy { visible.contains($0) || $0.hasPrefix("alice-") })

            // The gateway itself, asked directly: alice's feed holds east only; a reader cannot write.
            let alice = cluster.client(database: "main", user: "alice", password: "alice-pw")
            let feed = try await alice.allChanges()
            let ids = Set(feed.compactMap { $0["id"]?.stringValue })
            #expect(ids == visible.union(["alice-east"]))
            let reader = cluster.client(database: "main", user: "reader", password: "reader-pw")
            let refused = try await reader.bulkDocs([wireRevision(id: "r-1", generation: 1, digests: [testDigest("r1")], channels: ["east"])])
            #expect(refused.first?["error"] == "forbidden", "\(refused)")
            let westRead = try await alice.request("GET", "w-0?rev=1-\(testDigest("w0"))&revs=true")
            #expect(westRead.status == 403 || westRead.status == 404, "\(westRead)")

            // A wrong password: the replication fails (a 4xx is not retried) instead of hanging.
            let wrong = try await runOnce(store.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication,
                                                                          database: "main", user: "alice", password: "not-hers"), seconds: 90)
            if case .failed? = wrong.status {} else {
                Issue.record("a replication with a wrong password ended \(String(describing: wrong.status)), not failed")
            }
        }
    }
}

extension Document {
    /// The document with `channels` as its channels.
    func inChannels(_ channels: [String]) -> Document {
        var copy = self
        copy.metadata.channels = channels
        return copy
    }
}
