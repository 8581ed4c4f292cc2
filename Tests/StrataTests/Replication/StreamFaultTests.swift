import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Channels and series under faults, as documents (ReplicationFaultTests): a gateway killed
/// mid-upload, PostgreSQL killed and restarted, the network cut for a while, a store closed, and a
/// store's process killed (kill -9) mid-replication. Each time the replications resume from their
/// checkpoints, and in the end every store and the gateway hold every message and event exactly
/// once, in the same order.
@Suite("Channel and series replication faults", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct StreamFaultTests {
    static func configuration(_ cluster: GatewayCluster, gateway: Int, batchSize: Int = 50) -> ReplicationConfiguration {
        var configuration = cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: gateway)
        configuration.batchSize = batchSize
        return configuration
    }

    /// Starts repeating replications of `channel` and `series` on `store`; for the series' writer,
    /// waits until the claim is granted.
    static func replicate(_ store: ReplicaStore, channel: String, series: String, cluster: GatewayCluster, gateway: Int,
                          writer: Bool, batchSize: Int = 50) async throws -> [Replication] {
        let configuration = Self.configuration(cluster, gateway: gateway, batchSize: batchSize)
        let c = try await store.handle.channel(channel, of: String.self).startReplication(with: configuration)
        let r = try await StreamReplicaState.replicateSeries(store, series, configuration: configuration, writer: writer)
        return [c, r]
    }

    /// Publishes `m<prefix>-<i>` and appends `Double(i)` (the writer) for i in `range`.
    static func write(_ store: ReplicaStore, channel: String, series: String?, prefix: String, _ range: Range<Int>) throws {
        let c = try store.handle.channel(channel, of: String.self)
        let s = try series.map { try store.handle.timeSeries($0, of: Double.self) }
        for i in range {
            try c.publish("\(prefix)-\(i)", publisher: store.name)
            try s?.append(Double(i))
        }
    }

    /// Every message of `names` on the gateway exactly once, and nothing else.
    static func expectExactlyOnce(_ server: GatewayHTTPClient, channel: String, _ names: Set<String>) async throws {
        let messages = try await StreamReplicaState.gatewayHistory(server, channel).map(\.message)
        #expect(messages.count == Set(messages).count, "duplicates on the gateway: \(messages.count) messages, \(Set(messages).count) distinct")
        #expect(Set(messages) == names, "missing \(names.subtracting(messages).sorted().prefix(5)), extra \(Set(messages).subtracting(names).sorted().prefix(5))")
    }

    static func names(_ prefix: String, _ range: Range<Int>) -> Set<String> { Set(range.map { "\(prefix)-\($0)" }) }

    @Test("a gateway killed (kill -9) mid-upload and restarted: uploads resume; every message and event once")
    func gatewayKilledMidUpload() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            var replications = try await Self.replicate(a, channel: "room", series: "s", cluster: cluster, gateway: 0, writer: true)
            replications += try await Self.replicate(b, channel: "room", series: "s", cluster: cluster, gateway: 1, writer: false)
            defer { for r in replications { r.stop() } }
            let pushLog = ReplicationEventLog(replications[0])
            try Self.write(a, channel: "room", series: "s", prefix: "a", 0..<3_000)
            let started = await waitUntil(seconds: 60, interval: .milliseconds(5)) { pushLog.sent >= 100 }
            #expect(started, "no batch sent: \(pushLog.all.suffix(3))")
            cluster.gateways[0].kill()
            let sentAtKill = pushLog.sent
            let offline = await waitUntil(seconds: 30, interval: .milliseconds(20)) { replications[0].status == .offline }
            #expect(offline, "the replication did not go offline: \(replications[0].status)")
            try cluster.gateways[0].start()
            let (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a, b], channels: ["room"], series: ["s"], server: server)
            #expect(done, "\(report)")
            try await Self.expectExactlyOnce(server, channel: "room", Self.names("a", 0..<3_000))
            #expect(try await StreamReplicaState.gatewayEvents(server, "s").map(\.value) == (0..<3_000).map(Double.init))
            print("gateway killed mid-upload after \(sentAtKill) of 3000 messages sent")
        }
    }

    @Test("PostgreSQL killed and restarted, then the network cut (both gateways stopped) for a while: writes on both sides meanwhile all arrive, once")
    func postgresRestartedAndNetworkCut() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            var replications = try await Self.replicate(a, channel: "room", series: "s", cluster: cluster, gateway: 0, writer: true, batchSize: 500)
            replications += try await Self.replicate(b, channel: "room", series: "s", cluster: cluster, gateway: 1, writer: false, batchSize: 500)
            defer { for r in replications { r.stop() } }
            try Self.write(a, channel: "room", series: "s", prefix: "a", 0..<200)
            var (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a, b], channels: ["room"], series: ["s"], server: server)
            #expect(done, "\(report)")

            try cluster.postgres.kill()
            try Self.write(a, channel: "room", series: "s", prefix: "a", 200..<400)
            try Self.write(b, channel: "room", series: nil, prefix: "b", 0..<200)
            try await Task.sleep(for: .seconds(2))
            try cluster.postgres.start()
            (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a, b], channels: ["room"], series: ["s"], server: server)
            #expect(done, "after the PostgreSQL restart: \(report)")

            for gateway in cluster.gateways { gateway.stop() }
            try Self.write(a, channel: "room", series: "s", prefix: "a", 400..<600)
            try Self.write(b, channel: "room", series: nil, prefix: "b", 200..<400)
            // Offline, the new messages are provisional and counted locally.
            #expect(try StreamReplicaState.history(b.handle, "room").provisional == 200)
            try await Task.sleep(for: .seconds(2))
            for gateway in cluster.gateways { try gateway.start() }
            (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a, b], channels: ["room"], series: ["s"], server: server)
            #expect(done, "after the network came back: \(report)")
            try await Self.expectExactlyOnce(server, channel: "room", Self.names("a", 0..<600).union(Self.names("b", 0..<400)))
            #expect(try await StreamReplicaState.gatewayEvents(server, "s").map(\.value) == (0..<600).map(Double.init))
        }
    }

    @Test("a store closed and reopened mid-replication resumes from its outbox and checkpoints")
    func storeClosedMidReplication() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            var replications = try await Self.replicate(a, channel: "room", series: "s", cluster: cluster, gateway: 0, writer: true)
            let readers = try await Self.replicate(b, channel: "room", series: "s", cluster: cluster, gateway: 0, writer: false)
            defer { for r in readers { r.stop() } }
            let log = ReplicationEventLog(replications[0])
            try Self.write(a, channel: "room", series: "s", prefix: "a", 0..<2_000)
            let started = await waitUntil(seconds: 60, interval: .milliseconds(5)) { log.sent >= 100 }
            #expect(started)
            try a.reopen()   // ends a's replications mid-upload
            // A stop is asynchronous (Replication.stop()): each ends at its next step.
            for replication in replications {
                let status = await finished(replication, seconds: 30)
                #expect(status == .stopped, "\(String(describing: status))")
            }
            print("store closed after \(log.sent) of 2000 messages sent")
            replications = try await Self.replicate(a, channel: "room", series: "s", cluster: cluster, gateway: 0, writer: true)
            defer { for r in replications { r.stop() } }
            let (done, report) = try await StreamReplicaState.awaitConvergence(stores: [a, b], channels: ["room"], series: ["s"], server: server)
            #expect(done, "\(report)")
            try await Self.expectExactlyOnce(server, channel: "room", Self.names("a", 0..<2_000))
            #expect(try await StreamReplicaState.gatewayEvents(server, "s").count == 2_000)
        }
    }

    @Test("a store's process killed (kill -9) mid-replication: reopened, it uploads the rest; every acknowledged write is on the gateway once")
    func storeKilledMidReplication() async throws {
        try await GatewayCluster.with(gateways: 1) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let child = try CrashHelperProcess(["replicate", directory.url.path, cluster.gateways[0].databaseURL("main").absoluteString,
                                                "admin", "admin"])
            // Killed while it writes and uploads: once the gateway has some of its messages.
            let uploading = await waitUntil(seconds: 60, interval: .milliseconds(20)) {
                child.drain()
                return (try? await StreamReplicaState.gatewayHistory(server, "kill/room").count) ?? 0 >= 100
            }
            #expect(uploading, "\(child.errorText)")
            child.killAndWait()
            let acknowledged = child.lines.compactMap { $0.hasPrefix("ACK ") ? Int($0.dropFirst(4)) : nil }.max() ?? -1
            #expect(acknowledged >= 100)

            let store = try await Store.open(at: directory.url)
            defer { try? store.close() }
            var configuration = cluster.configuration(ReplicationConfiguration.repeatingBidirectionalReplication, database: "main")
            configuration.batchSize = 50
            let room = try await store.channel("kill/room", of: String.self)
            let series = try await store.timeSeries("kill/series", of: Double.self)
            let r1 = try room.startReplication(with: configuration)
            let r2 = try series.startReplication(with: configuration)
            defer { r1.stop(); r2.stop() }
            let local = try await room.messageCount(since: Timetoken(0))
            #expect(local >= acknowledged + 1)
            let synced = try await waitUntil(seconds: 90, interval: .milliseconds(200)) {
                let gateway = try await StreamReplicaState.gatewayHistory(server, "kill/room")
                let (messages, provisional) = try StreamReplicaState.history(store, "kill/room")
                let events = try await StreamReplicaState.gatewayEvents(server, "kill/series")
                let next = try await series.bounds().next
                return provisional == 0 && messages == gateway && UInt64(events.count) == next
            }
            #expect(synced)
            let messages = try await StreamReplicaState.gatewayHistory(server, "kill/room").map(\.message)
            #expect(messages.count == Set(messages).count, "duplicates: \(messages.count) vs \(Set(messages).count)")
            #expect(Set(messages).isSuperset(of: (0...acknowledged).map { "m\($0)" }))
            #expect(messages.count == local)
            let gatewayEvents = try await StreamReplicaState.gatewayEvents(server, "kill/series")
            #expect(try gatewayEvents == StreamReplicaState.events(store, "kill/series"))
        }
    }
}
