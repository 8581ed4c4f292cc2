import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A revision in the wire form of Gateway/PROTOCOL.md, for tests that write to a gateway directly.
func wireRevision(id: String, generation: Int, digests: [String], fields: [String: JSON] = [:],
                  channels: [String] = [], deleted: Bool = false) -> JSON {
    var body: [String: JSON] = deleted ? [:] : fields
    body["_id"] = .string(id)
    body["_rev"] = .string("\(generation)-\(digests[0])")
    body["_revisions"] = ["start": .int(Int64(generation)), "ids": .array(digests.map { .string($0) })]
    if deleted { body["_deleted"] = true }
    body["_strata"] = ["channels": .array(channels.map { .string($0) }), "created": 786297600.0, "changed": 786297601.5]
    return .object(body)
}

/// A 32-hex-digit digest made from `seed` (distinct seeds, distinct digests).
func testDigest(_ seed: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in seed.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    let second = hash &* 0x9E37_79B9_7F4A_7C15
    return String(format: "%016llx%016llx", hash, second)
}

/// The fixture itself: real PostgreSQL and real gateway processes, driven over plain HTTP, killed
/// and restarted; everything cleaned up afterwards.
@Suite("Replication fixture", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct GatewayFixtureTests {
    @Test("two gateways on one PostgreSQL: a write through one is read through the other, across restarts")
    func twoGatewaysShareOneDatabase() async throws {
        var postgresDirectory = ""
        var gatewayProcesses: [GatewayProcess] = []
        try await GatewayCluster.with(gateways: 2) { cluster in
            postgresDirectory = cluster.postgres.directory.path
            gatewayProcesses = cluster.gateways
            let a = try cluster.createDatabaseWithAdmin("fixture", gateway: 0)
            let b = cluster.client(database: "fixture", gateway: 1)

            let welcome = try await GatewayHTTPClient(databaseURL: cluster.gateways[1].url, user: "", password: "")
                .request("GET", "", authenticate: false)
            #expect(welcome.status == 200)
            #expect(welcome.body?["couchdb"] == "Welcome")

            let d1 = testDigest("doc-1 first")
            let results = try await a.bulkDocs([wireRevision(id: "doc-1", generation: 1, digests: [d1], fields: ["n": 1], channels: ["east"])])
            #expect(results.count == 1)
            #expect(results.first?["error"] == nil, "\(results)")

            // Read through the other gateway: _changes, then the revision with its history.
            let page = try await b.changes()
            #expect(page.results.map { $0["id"]?.stringValue } == ["doc-1"])
            #expect(page.results.first?["changes"]?[0]?["rev"]?.stringValue == "1-\(d1)")
            let one = try await b.checked("GET", "doc-1?rev=1-\(d1)&revs=true")
            #expect(one["n"] == 1)
            #expect(ServerRevision(one).channels == ["east"])

            // An unknown user is refused.
            let stranger = cluster.client(database: "fixture", gateway: 1, user: "admin", password: "wrong")
            #expect(try await stranger.request("GET", "").status == 401)

            // kill -9 of gateway 0, restarted on the same port: the data is still served there.
            let port = cluster.gateways[0].port
            cluster.gateways[0].kill()
            #expect(!cluster.gateways[0].isRunning)
            try cluster.gateways[0].start()
            #expect(cluster.gateways[0].port == port)
            let d2 = testDigest("doc-1 second")
            let second = try await a.bulkDocs([wireRevision(id: "doc-1", generation: 2, digests: [d2, d1], fields: ["n": 2], channels: ["east"])])
            #expect(second.first?["error"] == nil, "\(second)")

            // PostgreSQL stopped and started again: the gateways serve again (a retry covers the
            // time their connection pools take to notice).
            try cluster.postgres.stop()
            try cluster.postgres.start()
            let snapshot = try await eventually(seconds: 60) { try await b.snapshot() }
            #expect(snapshot.documents["doc-1"]?.winner == "2-\(d2)")
            #expect(snapshot.documents["doc-1"]?.allRevisions == ["2-\(d2)", "1-\(d1)"])
        }
        #expect(!postgresDirectory.isEmpty && !FileManager.default.fileExists(atPath: postgresDirectory))
        #expect(gatewayProcesses.count == 2 && gatewayProcesses.allSatisfy { !$0.isRunning })
    }

    @Test("a longpoll _changes on one gateway is woken by a write through the other")
    func longpollWakesAcrossGateways() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let a = try cluster.createDatabaseWithAdmin("wake", gateway: 0)
            let b = cluster.client(database: "wake", gateway: 1)
            let start = try await b.changes()
            let waiter = Task { try await b.changes(since: start.lastSeq, longpollTimeout: 60_000) }
            // Writes until the waiter answers: a write before its request arrives is also seen.
            var written = 0
            while written < 50 {
                written += 1
                let results = try await a.bulkDocs([wireRevision(id: "w-\(written)", generation: 1, digests: [testDigest("w\(written)")])])
                #expect(results.first?["error"] == nil)
                if await awaitBounded(seconds: 0.5, { try await waiter.value }) != nil { break }
            }
            let page = try await waiter.value
            #expect(!page.results.isEmpty)
            #expect(page.lastSeq > start.lastSeq)
        }
    }
}

/// Retries `body` until it succeeds or `seconds` pass (then rethrows its last error). For
/// waiting out a restart, never as an assertion of speed.
func eventually<R: Sendable>(seconds: Double, _ body: () async throws -> R) async throws -> R {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        do {
            return try await body()
        } catch {
            if Date() > deadline { throw error }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
