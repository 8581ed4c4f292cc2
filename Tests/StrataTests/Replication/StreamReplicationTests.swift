import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Channels and series replicating through real gateway processes on a real PostgreSQL
/// (Gateway/PROTOCOL.md "Channels and time series"): stores converge to the gateway's history of
/// each channel and to the writer's events of each series, across offline periods and faults,
/// within each user's rights.
@Suite("Channel and series replication", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct StreamReplicationTests {
    static func repeating(_ url: URL) -> ReplicationConfiguration { .repeatingBidirectionalReplication(with: url) }

    static func isConflict(_ error: any Error) -> Bool {
        if case StrataError.conflict = error { return true }
        return false
    }

    static func replicateSeries(_ store: ReplicaStore, _ path: String, cluster: GatewayCluster, gateway: Int,
                                writer: Bool) async throws -> Replication {
        try await StreamReplicaState.replicateSeries(store, path, configuration: cluster.configuration(repeating, database: "main", gateway: gateway),
                                                     writer: writer)
    }

    static func replicateChannel(_ store: ReplicaStore, _ name: String, cluster: GatewayCluster, gateway: Int,
                                 batchSize: Int = 500) throws -> Replication {
        var configuration = cluster.configuration(repeating, database: "main", gateway: gateway)
        configuration.batchSize = batchSize
        return try store.handle.channel(name, of: String.self).startReplication(with: configuration)
    }

    @Test("3 stores, 2 gateways: concurrent publishes and appends, one store offline for a while, a gateway killed and PostgreSQL restarted meanwhile, a replicated deletion; every store equals the gateway, every message once")
    func threeStoresConverge() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let stores = try ["a", "b", "c"].map { try ReplicaStore(name: $0) }
            defer { for s in stores { s.remove() } }
            let channels = ["chat/room1", "chat/room2"]
            let series = ["prices/a", "prices/b", "prices/c"]
            var replications: [Replication] = []
            defer { for r in replications { r.stop() } }
            // Each store claims its own series first, then replicates the others' as a reader.
            for (i, store) in stores.enumerated() {
                replications.append(try await Self.replicateSeries(store, series[i], cluster: cluster, gateway: i % 2, writer: true))
            }
            for (i, store) in stores.enumerated() {
                for (j, path) in series.enumerated() where j != i {
                    replications.append(try await Self.replicateSeries(store, path, cluster: cluster, gateway: (i + j) % 2, writer: false))
                }
            }
            // Store c's channels start offline: it publishes before its first replication.
            var channelReplications: [String: [Replication]] = [:]
            for (i, store) in stores.enumerated() where i < 2 {
                for name in channels {
                    channelReplications[store.name, default: []].append(try Self.replicateChannel(store, name, cluster: cluster, gateway: i % 2))
                }
            }
            // A reader's own appends and edits are refused, never forked.
            let readerSeries = try await stores[1].handle.timeSeries("prices/a", of: Double.self)
            #expect { try readerSeries.append(1) } throws: { Self.isConflict($0) }

            let perStore = 150
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Faults while they write: gateway 1 killed (kill -9) and restarted, then
                // PostgreSQL killed and restarted.
                group.addTask {
                    try await Task.sleep(for: .milliseconds(300))
                    cluster.gateways[1].kill()
                    try await Task.sleep(for: .seconds(1))
                    try cluster.gateways[1].start()
                    try await Task.sleep(for: .milliseconds(500))
                    try cluster.postgres.kill()
                    try await Task.sleep(for: .seconds(1))
                    try cluster.postgres.start()
                }
                for (i, store) in stores.enumerated() {
                    group.addTask {
                        let own = try await store.handle.timeSeries(series[i], of: Double.self)
                        for k in 0..<perStore {
                            for name in channels {
                                try await store.handle.channel(name, of: String.self).publish("\(store.name)-\(name)-\(k)", publisher: store.name)
                            }
                            try await own.append(Double(k) + Double(i) / 10)
                            if k % 50 == 49 { try await own.edit(originalSequence: UInt64(k - 10), value: -Double(k)) }
                            if k % 10 == 0 { try await Task.sleep(for: .milliseconds(5)) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Store c comes online.
            for name in channels {
                channelReplications["c", default: []].append(try Self.replicateChannel(stores[2], name, cluster: cluster, gateway: 0))
            }
            replications += channelReplications.values.flatMap { $0 }
            var (done, report) = try await StreamReplicaState.awaitConvergence(stores: stores, channels: channels, series: series, server: server)
            #expect(done, "\(report)")

            // Every published message is on the gateway exactly once; order is the gateway's.
            for name in channels {
                let messages = try await StreamReplicaState.gatewayHistory(server, name).map(\.message)
                #expect(messages.count == 3 * perStore, "\(name): \(messages.count)")
                #expect(Set(messages).count == messages.count, "\(name): duplicates")
            }
            // Counts agree everywhere, also with a `since` in the middle.
            let middle = try await StreamReplicaState.gatewayHistory(server, "chat/room1")[200].timetoken
            for store in stores {
                #expect(try await store.handle.channel("chat/room1", of: String.self).messageCount(since: Timetoken(middle)) == 3 * perStore - 201)
            }

            // A deletion on store b replicates to every store and the gateway.
            let cut = try await StreamReplicaState.gatewayHistory(server, "chat/room2")[99].timetoken
            try await stores[1].handle.channel("chat/room2", of: String.self).deleteMessages(start: Timetoken(cut + 1))
            (done, report) = try await StreamReplicaState.awaitConvergence(stores: stores, channels: channels, series: series, server: server)
            #expect(done, "\(report)")
            let left = try await StreamReplicaState.gatewayHistory(server, "chat/room2")
            #expect(left.count == 3 * perStore - 100 && left.allSatisfy { $0.timetoken > cut }, "\(left.count) left")
            for (i, path) in series.enumerated() {
                let events = try await StreamReplicaState.gatewayEvents(server, path)
                #expect(events.count == perStore + 3, "\(path): \(events.count) events")
                #expect(events.first?.value == Double(i) / 10)
            }
        }
    }

    @Test("a message published while offline is provisional at once, final after the gateway accepts it, and reaches another store's live messages() stream")
    func offlinePublishAndLiveDelivery() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let ra = try Self.replicateChannel(a, "room", cluster: cluster, gateway: 0)
            defer { ra.stop() }
            let roomA = try await a.handle.channel("room", of: String.self)
            let roomB = try await b.handle.channel("room", of: String.self)
            let live = try roomB.messages()
            // Store b is offline: its replication points at a port where nothing listens.
            var offline = ReplicationConfiguration.repeatingBidirectionalReplication(with: URL(string: "http://127.0.0.1:\(try ReplicationTestEnvironment.freePort())/main")!)
            offline.maximumRetryDelay = .milliseconds(200)
            let dead = try roomB.startReplication(with: offline)
            let local = try await roomB.publish("from b, offline", publisher: "b")
            let page = try await roomB.history()
            #expect(page.messages.map(\.message) == ["from b, offline"] && page.messages[0].isProvisional)
            #expect(page.messages[0].timetoken == local)
            dead.stop()
            _ = await finished(dead)

            let rb = try Self.replicateChannel(b, "room", cluster: cluster, gateway: 1)
            defer { rb.stop() }
            try await roomA.publish("from a", publisher: "a")
            let (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a, b], channels: ["room"], series: [], server: server)
            #expect(done, "\(report)")
            let final = try await roomB.history().messages.first { $0.message == "from b, offline" }
            #expect(final?.isProvisional == false && final?.timetoken != local)
            // b's stream: its own provisional message when published, then a's message once.
            var iterator = live.makeAsyncIterator()
            let first = try await iterator.next()
            let second = try await iterator.next()
            #expect(first?.message == "from b, offline" && first?.isProvisional == true)
            #expect(second?.message == "from a" && second?.isProvisional == false)
            #expect(try await roomB.history().messages.count == 2)
        }
    }

    @Test("an upload whose answer was lost is sent again with the same ids: the gateway keeps one copy")
    func retriedUploadMakesNoSecondMessage() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            defer { a.remove() }
            let room = try await a.handle.channel("room", of: String.self)
            try room.state.startReplicating()
            try await room.publish(contentsOf: ["one", "two", "three"], publisher: "a")
            // The first attempt reached the gateway; its answer never came back.
            let items = try room.state.outbox(after: nil, limit: 10)
            let entries: [JSON] = try items.map { item in
                guard case .message(let id) = item.entry, let record = item.record else { throw FixtureError("no record") }
                let text = try record.withUnsafeBytes { try MessageRecord.decode($0, what: "t") }.message
                return .object(["id": .string(SeriesReplicationRole.text(id)), "message": .string(String(decoding: text, as: UTF8.self)),
                                "publisher": "a"])
            }
            _ = try await server.checked("POST", "_strata/channels/room/publish", body: .object(["messages": .array(entries)]))
            let replication = try Self.replicateChannel(a, "room", cluster: cluster, gateway: 0)
            defer { replication.stop() }
            let (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a], channels: ["room"], series: [], server: server)
            #expect(done, "\(report)")
            #expect(try await StreamReplicaState.gatewayHistory(server, "room").map(\.message) == ["one", "two", "three"])
        }
    }

    @Test("a user reads only channels and series under its read paths and writes only under its write paths (whole segments)")
    func rightsOnPaths() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            try cluster.addUser("east", database: "main", password: "east", read: [], write: [],
                                readPaths: ["chat", "prices"], writePaths: ["chat/east"])
            _ = try await server.checked("POST", "_strata/channels/\(StreamReplicaState.segment("chat/west"))/publish",
                                         body: ["messages": [["id": "w1", "message": "west news"]]])
            _ = try await server.checked("POST", "_strata/channels/secret/publish", body: ["messages": [["id": "s1", "message": "secret"]]])
            _ = try await server.checked("POST", "_strata/channels/chatter/publish", body: ["messages": [["id": "c1", "message": "chatter"]]])
            let a = try ReplicaStore(name: "a")
            defer { a.remove() }
            func configuration() -> ReplicationConfiguration {
                cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", user: "east", password: "east")
            }
            // Reads: chat/west is readable; its local publishes cannot be written: a typed refusal.
            let west = try await a.handle.channel("chat/west", of: String.self)
            try await west.publish("mine")
            let rw = try west.startReplication(with: configuration())
            let status = await finished(rw, seconds: 60)
            guard case .failed(.permissionDenied(let principal, let permission, let path))? = status else {
                Issue.record("chat/west: \(String(describing: status))")
                return
            }
            #expect(principal == "east" && permission == .updateTopic && path == "chat/west")
            #expect(try await StreamReplicaState.gatewayHistory(server, "chat/west").map(\.message) == ["west news"])
            // A pull-only replication of chat/west reads it.
            var pullOnly = cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication, database: "main", user: "east", password: "east")
            pullOnly.maximumRetries = 2
            let fresh = try ReplicaStore(name: "fresh")
            defer { fresh.remove() }
            let freshWest = try await fresh.handle.channel("chat/west", of: String.self)
            #expect(await finished(try freshWest.startReplication(with: pullOnly), seconds: 60) == .completed)
            #expect(try await freshWest.history().messages.map(\.message) == ["west news"])
            // Unreadable: secret, and chatter (not under "chat" in whole segments).
            for name in ["secret", "chatter"] {
                let channel = try await fresh.handle.channel(name, of: String.self)
                let status = await finished(try channel.startReplication(with: pullOnly), seconds: 60)
                guard case .failed(.permissionDenied(_, .readTopic, name))? = status else {
                    Issue.record("\(name): \(String(describing: status))")
                    continue
                }
                #expect(try await channel.history().messages.isEmpty)
            }
            // Writes under chat/east go through.
            let east = try await fresh.handle.channel("chat/east/room", of: String.self)
            try await east.publish("hello")
            let re = try east.startReplication(with: configuration())
            defer { re.stop() }
            let arrived = try await waitUntil(seconds: 60) {
                try await StreamReplicaState.gatewayHistory(server, "chat/east/room").map(\.message) == ["hello"]
            }
            #expect(arrived)
            // A series outside the read paths is not received: a pull-only replication of it fails.
            let hidden = try await fresh.handle.timeSeries("private/x", of: Double.self)
            _ = try await server.checked("POST", "_strata/series/\(StreamReplicaState.segment("private/x"))/claim", body: ["writer": "w"])
            _ = try await server.checked("POST", "_strata/series/\(StreamReplicaState.segment("private/x"))/events",
                                         body: ["writer": "w", "events": [["sequence": 0, "timestamp": 1, "author": "w", "value": 1.5]]])
            let hiddenStatus = await finished(try hidden.startReplication(with: pullOnly), seconds: 60)
            guard case .failed(.permissionDenied(_, .readTopic, "private/x"))? = hiddenStatus else {
                Issue.record("private/x: \(String(describing: hiddenStatus))")
                return
            }
            #expect(try await hidden.bounds().count == 0)
            // A series under prices is readable but not writable: the claim is refused with 403.
            let prices = try await fresh.handle.timeSeries("prices/x", of: Double.self)
            let rp = try prices.startReplication(with: configuration())
            let priceStatus = await finished(rp, seconds: 60)
            guard case .failed(.permissionDenied(_, .updateTopic, "prices/x"))? = priceStatus else {
                Issue.record("prices/x: \(String(describing: priceStatus))")
                return
            }
        }
    }
}
