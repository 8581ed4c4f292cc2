import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Starting, stopping and failing replications with no gateway to talk to: a port where nothing
/// listens, the store's close, a session's rights.
@Suite struct ReplicatorLifecycleTests {
    /// A loopback URL where nothing listens (a port bound and released, so the connection is refused).
    static func deadURL() throws -> URL {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let port = withUnsafeMutablePointer(to: &address) { pointer -> UInt16 in
            let bound = pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
            return bound ? UInt16(bigEndian: pointer.pointee.sin_port) : 1
        }
        return try #require(URL(string: "http://127.0.0.1:\(port)/db"))
    }

    @Test("a one-time replication against a port where nothing listens retries, then fails with .network after its retries")
    func retriesThenFails() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try await store.documents("main")
        try await db.save(Document(id: "a", fields: ["x": 1]))
        var config = ReplicationConfiguration.oneTimeBidirectionalReplication(with: try Self.deadURL())
        config.maximumRetries = 2
        config.maximumRetryDelay = .milliseconds(50)
        let replication = try db.startReplication(with: config)
        var events: [ReplicationEvent] = []
        var ending: (any Error)?
        do {
            for try await event in try replication.events() { events.append(event) }
        } catch {
            ending = error
        }
        #expect(events.count == 1)
        guard case .failed(.network(let message))? = events.last else {
            Issue.record("events: \(events)")
            return
        }
        // The stream ends by throwing the replication's error, after reporting it.
        #expect((ending as? StrataError) == .network(message))
        #expect(message.contains("127.0.0.1"))
        #expect(message.contains("gave up after 2 retries"))
        guard case .failed(.network) = replication.status else {
            Issue.record("status \(replication.status)")
            return
        }
        #expect(await replication.finished() == replication.status)
        #expect(db.replications.isEmpty)
        // Nothing was written locally but the replication's own local documents.
        #expect(try await db.changes(since: 0).changes.map(\.id) == ["a"])
    }

    @Test("a repeating replication keeps retrying while offline; stop() ends it as .stopped with no event")
    func stopWhileOffline() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try await store.documents("main")
        var config = ReplicationConfiguration.repeatingBidirectionalReplication(with: try Self.deadURL())
        config.maximumRetryDelay = .milliseconds(20)
        let replication = try db.startReplication(with: config)
        #expect(db.replications.count == 1)
        // Wait (bounded) until it has failed at least once and is waiting to retry.
        var sawOffline = false
        for _ in 0..<2_000 where !sawOffline {
            sawOffline = replication.status == .offline
            if !sawOffline { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(sawOffline)
        replication.stop()
        var events: [ReplicationEvent] = []
        for try await event in replication.events { events.append(event) }     // finishes: stopped
        #expect(events.isEmpty)
        #expect(await replication.finished() == .stopped)
        #expect(replication.status == .stopped)
        #expect(db.replications.isEmpty)
    }

    @Test("the store's close ends every replication of its databases as .stopped; stopReplication() stops those of one database")
    func closeAndStopReplication() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        let main = try await store.documents("main")
        let other = try await store.documents("other")
        var config = ReplicationConfiguration.repeatingBidirectionalReplication(with: try Self.deadURL())
        config.maximumRetryDelay = .milliseconds(20)
        let first = try main.startReplication(with: config)
        let second = try main.startReplication(with: .oneTimeServerToClientReplication(with: config.url))
        let third = try other.startReplication(with: config)
        #expect(try await store.documents("main").replications.count == 2)
        try await store.documents("main").stopReplication()
        #expect(await first.finished() == .stopped)
        #expect(await second.finished() == .stopped)
        #expect(!third.status.isFinal)
        try await store.close()
        #expect(await third.finished() == .stopped)
        #expect(throws: StrataError.closed) { _ = try other.startReplication(with: config) }
    }

    @Test("a session needs read and write rights on the database to start a replication")
    func sessionRights() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.documents("main")
        var policy = SecurityPolicy()
        policy.roles["reader"] = Role(global: [], paths: ["main": [.readTopic, .selectTopic]])
        policy.roles["writer"] = Role(global: [], paths: ["main": [.readTopic, .selectTopic, .updateTopic]])
        policy.principals["rita"] = ["reader"]
        policy.principals["will"] = ["writer"]
        try store.setSecurityPolicy(policy)
        let config = ReplicationConfiguration.oneTimeBidirectionalReplication(with: try Self.deadURL())
        #expect(throws: StrataError.permissionDenied(principal: "rita", permission: .updateTopic, path: "main")) {
            _ = try store.session(principal: "rita").documents("main").startReplication(with: config)
        }
        let replication = try store.session(principal: "will").documents("main").startReplication(with: config)
        replication.stop()
    }

    @Test("a configuration out of range is refused before anything starts")
    func invalidConfiguration() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try store.documents("main")
        var config = ReplicationConfiguration.oneTimeBidirectionalReplication(with: try Self.deadURL())
        config.batchSize = 20_000
        #expect(throws: StrataError.self) { _ = try db.startReplication(with: config) }
        #expect(db.replications.isEmpty)
    }
}
