import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The replicator against a running strata-gateway, by hand: enabled only when
/// `STRATA_TEST_GATEWAY_URL` names a gateway database, with `STRATA_TEST_GATEWAY_USER` /
/// `STRATA_TEST_GATEWAY_PASSWORD` a user who reads and writes every channel. (The suites of
/// h13-tests start their own PostgreSQL and gateways; this one is for trying the replicator
/// on a gateway already running, and prints throughput.) Each test works in channels of its own.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["STRATA_TEST_GATEWAY_URL"] != nil))
struct ReplicatorGatewayTests {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static func configuration(_ make: (URL) -> ReplicationConfiguration, user: String? = nil, password: String? = nil) throws -> ReplicationConfiguration {
        let url = try #require(URL(string: environment["STRATA_TEST_GATEWAY_URL"] ?? ""))
        var config = make(url)
        config.authentication = .basic(user: user ?? environment["STRATA_TEST_GATEWAY_USER"] ?? "",
                                       password: password ?? environment["STRATA_TEST_GATEWAY_PASSWORD"] ?? "")
        config.batchSize = 1_000
        return config
    }

    static func document(_ i: Int, channel: String) -> Document {
        var document = Document(id: "\(channel)-\(i)", fields: [
            "customer": .string("customer-\(i % 1_000)"), "total": .int(Int64(i)), "paid": .bool(i % 2 == 0),
            "note": .string(String(repeating: "lorem ipsum dolor sit amet ", count: 7)),
        ])
        document.metadata.channels = [channel]
        document.metadata.type = "invoice"
        return document
    }

    @Test("push 10,000 documents from one store, pull them into another: the same documents, figures printed")
    func pushThenPull() async throws {
        let dirs = try (TemporaryDirectory(), TemporaryDirectory())
        defer { dirs.0.remove(); dirs.1.remove() }
        let channel = "t-" + UUID().uuidString.lowercased()
        let a = try await Store.open(at: dirs.0.url)
        defer { try? a.close() }
        let b = try await Store.open(at: dirs.1.url)
        defer { try? b.close() }
        let dbA = try await a.documents("main")
        let dbB = try await b.documents("main")
        let count = 10_000
        for start in stride(from: 0, to: count, by: 1_000) {
            try await dbA.save(contentsOf: (start..<min(start + 1_000, count)).map { Self.document($0, channel: channel) })
        }
        var attached = Self.document(count, channel: channel)
        attached.attachments["scan.bin"] = Attachment(data: Data((0..<5_000).map { UInt8($0 % 251) }), contentType: "application/octet-stream")
        try await dbA.save(attached)

        let pushStart = ContinuousClock.now
        let push = try dbA.startReplication(with: try Self.configuration { .oneTimeClientToServerReplication(with: $0) })
        var sent = 0
        for try await event in try push.events() { if case .sending(let p) = event { sent = p.completed } }
        let pushTime = ContinuousClock.now - pushStart
        #expect(push.status == .completed)
        #expect(sent == count + 1)
        #expect(push.rejectedDocuments.isEmpty)

        var pullConfig = try Self.configuration { .oneTimeServerToClientReplication(with: $0) }
        pullConfig.limitToChannels = [channel]
        let pullStart = ContinuousClock.now
        let pull = try dbB.startReplication(with: pullConfig)
        #expect(await pull.finished() == .completed)
        let pullTime = ContinuousClock.now - pullStart
        print("push \(count + 1) documents: \(pushTime), \(Int(Double(count + 1) / GatewayClient.seconds(pushTime))) documents/s; "
              + "pull: \(pullTime), \(Int(Double(count + 1) / GatewayClient.seconds(pullTime))) documents/s")

        let ids = (0...count).map { "\(channel)-\($0)" }
        let left = try await dbA.documents(ids: ids)
        let right = try await dbB.documents(ids: ids)
        #expect(right.count == count + 1)
        for id in ids.prefix(50) + ids.suffix(2) {
            #expect(left[id]?.fields == right[id]?.fields)
            #expect(left[id]?.metadata.revisionID == right[id]?.metadata.revisionID)
            #expect(left[id]?.metadata.channels == right[id]?.metadata.channels)
            #expect(left[id]?.metadata.type == right[id]?.metadata.type)
            #expect(left[id]?.attachments == right[id]?.attachments)
        }
        #expect(try await dbB.changes(since: 0).changes.allSatisfy(\.isExternal))

        // Again: nothing to do, both directions complete at once from their checkpoints.
        let again = try dbB.startReplication(with: pullConfig)
        var received = 0
        for try await event in try again.events() { if case .receiving(let p) = event { received = p.completed } }
        #expect(again.status == .completed)
        #expect(received == 0)
    }

    @Test("two stores with repeating bidirectional replications converge: saves, updates, deletions, a conflict")
    func repeatingConverges() async throws {
        let dirs = try (TemporaryDirectory(), TemporaryDirectory())
        defer { dirs.0.remove(); dirs.1.remove() }
        let channel = "t-" + UUID().uuidString.lowercased()
        let a = try await Store.open(at: dirs.0.url)
        defer { try? a.close() }
        let b = try await Store.open(at: dirs.1.url)
        defer { try? b.close() }
        let dbA = try await a.documents("main")
        let dbB = try await b.documents("main")
        var config = try Self.configuration { .repeatingBidirectionalReplication(with: $0) }
        config.limitToChannels = [channel]
        let ra = try dbA.startReplication(with: config)
        let rb = try dbB.startReplication(with: config)

        try await dbA.save(Self.document(1, channel: channel))
        try await dbB.save(Self.document(2, channel: channel))
        try await Self.waitUntil { try dbA.document(id: "\(channel)-2") != nil && dbB.document(id: "\(channel)-1") != nil }
        // A conflict: both change document 1 before either hears of the other.
        ra.stop(); rb.stop()
        _ = await ra.finished(); _ = await rb.finished()
        var onA = try #require(try await dbA.document(id: "\(channel)-1"))
        onA["total"] = 100
        try await dbA.save(onA)
        var onB = try #require(try await dbB.document(id: "\(channel)-1"))
        onB["total"] = 200
        try await dbB.save(onB)
        try await dbB.delete(id: "\(channel)-2")
        let ra2 = try dbA.startReplication(with: config)
        let rb2 = try dbB.startReplication(with: config)
        defer { ra2.stop(); rb2.stop() }
        try await Self.waitUntil {
            let x = try dbA.document(id: "\(channel)-1"), y = try dbB.document(id: "\(channel)-1")
            return try x?.metadata.revisionID == y?.metadata.revisionID && (dbA.conflicts(id: "\(channel)-1")).count == 1
                && (dbB.conflicts(id: "\(channel)-1")).count == 1 && (dbA.document(id: "\(channel)-2")) == nil
        }
        #expect(try await dbA.document(id: "\(channel)-1")?["total"] == dbB.document(id: "\(channel)-1")?["total"])
    }

    @Test("wrong credentials fail the replication with .network naming 401; no retries")
    func unauthorized() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        defer { try? store.close() }
        let config = try Self.configuration({ .repeatingBidirectionalReplication(with: $0) }, password: "certainly-wrong")
        let replication = try await store.documents("main").startReplication(with: config)
        var events: [ReplicationEvent] = []
        var ending: (any Error)?
        do {
            for try await event in try replication.events() { events.append(event) }
        } catch {
            ending = error
        }
        guard case .failed(.network(let message))? = events.last else {
            Issue.record("events \(events)")
            return
        }
        #expect(message.contains("401"))
        #expect((ending as? StrataError) == .network(message))
    }

    @Test("a user who may write only channel east: a document in west is refused (403), reported and passed; east goes through",
          .enabled(if: ProcessInfo.processInfo.environment["STRATA_TEST_GATEWAY_EAST_USER"] != nil))
    func forbiddenDocumentsArePassed() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try await store.documents("main")
        let tag = UUID().uuidString.lowercased()
        var east = Document(id: "east-\(tag)", fields: ["n": 1])
        east.metadata.channels = ["east"]
        var west = Document(id: "west-\(tag)", fields: ["n": 2])
        west.metadata.channels = ["west"]
        try await db.save(contentsOf: [east, west])
        let config = try Self.configuration({ .oneTimeClientToServerReplication(with: $0) },
                                            user: Self.environment["STRATA_TEST_GATEWAY_EAST_USER"],
                                            password: Self.environment["STRATA_TEST_GATEWAY_EAST_PASSWORD"])
        let replication = try db.startReplication(with: config)
        #expect(await replication.finished() == .completed)
        #expect(replication.rejectedDocuments.count == 1)
        #expect(replication.rejectedDocuments.first?.hasPrefix("west-\(tag) 1-") == true)
        #expect(replication.rejectedDocuments.first?.contains("forbidden") == true)
    }

    /// Polls `condition` every 20 ms, for at most 30 s.
    static func waitUntil(_ condition: () throws -> Bool) async throws {
        for _ in 0..<1_500 {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("condition not met in 30 s")
    }
}
