import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite struct SessionTests {
    static func traderPolicy() -> SecurityPolicy {
        var policy = SecurityPolicy()
        policy.roles["trader"] = Role(global: [], paths: ["prices": [.readTopic, .selectTopic, .updateTopic, .editOwnTimeSeriesEvents]])
        policy.principals["alice"] = ["trader"]
        policy.principals["bob"] = ["trader"]
        return policy
    }

    @Test("API.md's trader example: alice appends as herself, edits her own events only, cannot see the edit views")
    func traderExample() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.timeSeries("prices/AAPL", of: Double.self)   // the owner creates it
        try store.setSecurityPolicy(Self.traderPolicy())
        let alice = try store.session(principal: "alice")
        let bob = try store.session(principal: "bob")
        let prices = try alice.timeSeries("prices/AAPL", of: Double.self)
        #expect(try prices.append(101.5).author == "alice")
        #expect(try bob.timeSeries("prices/AAPL", of: Double.self).append(101.7).author == "bob")
        #expect(try prices.edit(originalSequence: 0, value: 101.4).author == "alice")
        #expect(throws: StrataError.permissionDenied(principal: "alice", permission: .editTimeSeriesEvents, path: "prices/AAPL")) {
            try prices.edit(originalSequence: 1, value: 1)
        }
        #expect(throws: StrataError.permissionDenied(principal: "alice", permission: .queryObsoleteTimeSeriesEvents, path: "prices/AAPL")) {
            try prices.query(.edits(.all))
        }
        #expect(try prices.query(.values).events.map(\.value) == [101.4, 101.7])
        #expect(throws: StrataError.permissionDenied(principal: "alice", permission: .modifyTopic, path: "prices/MSFT")) {
            try alice.timeSeries("prices/MSFT", of: Double.self)
        }
        #expect(try store.catalog.entry(kind: .timeSeries, name: "prices/MSFT") == nil)
        #expect(throws: StrataError.permissionDenied(principal: "carol", permission: .readTopic, path: "prices/AAPL")) {
            try store.session(principal: "carol").timeSeries("prices/AAPL", of: Double.self).latest()
        }
        // The owner is not checked, and edits anyone's events.
        #expect(try store.timeSeries("prices/AAPL", of: Double.self).edit(originalSequence: 1, value: 2).sequence == 3)
    }

    @Test("an explicit author or publisher other than the principal is denied naming .updateTopic; nothing is written")
    func foreignAuthor() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        var policy = SecurityPolicy()
        policy.roles["all"] = Role(paths: ["": Set(Permission.allCases.filter { !$0.isGlobal })])
        policy.principals["alice"] = ["all"]
        try store.setSecurityPolicy(policy)
        let alice = try store.session(principal: "alice")
        let s = try alice.timeSeries("s", of: Int64.self)
        let c = try alice.channel("c", of: String.self)
        let denied = { (path: String) in StrataError.permissionDenied(principal: "alice", permission: .updateTopic, path: path) }
        try s.append(1)
        #expect(throws: denied("s")) { try s.append(2, timestamp: nil, author: "bob") }
        #expect(throws: denied("s")) { try s.edit(originalSequence: 0, value: 3, author: "bob") }
        #expect(throws: denied("c")) { try c.publish("x", publisher: "bob") }
        #expect(throws: denied("c")) { try c.publish(contentsOf: ["x"], publisher: "") }
        #expect(throws: denied("s")) {
            try alice.transaction { tx in _ = try tx.timeSeries("s", of: Int64.self).append(4, timestamp: nil, author: "bob") }
        }
        #expect(throws: denied("c")) {
            try alice.transaction { tx in _ = try tx.channel("c", of: String.self).publish("y", publisher: "bob") }
        }
        #expect(try s.bounds().next == 1 && s.query(.edits(.all)).events.map(\.author) == ["alice"])
        #expect(try c.history().messages.isEmpty)
        try c.publish("z")
        #expect(try c.history().messages.map(\.publisher) == ["alice"])
        #expect(try c.history().messages.first?.publisher == "alice")
    }

    @Test("a session changes a series' subscriber buffer size only with .modifyTopic, and names a bad channel as the owner does")
    func bufferSizeAndBadNames() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.timeSeries("a", of: Int64.self, options: TimeSeriesOptions(subscriberBufferSize: 8))
        let session = try store.session(principal: "nobody")
        #expect(throws: StrataError.permissionDenied(principal: "nobody", permission: .modifyTopic, path: "a")) {
            try session.timeSeries("a", of: Int64.self, options: TimeSeriesOptions())
        }
        #expect(try store.timeSeries("a", of: Int64.self, options: TimeSeriesOptions(subscriberBufferSize: 8)).state.writer.withLock { $0.bufferSize } == 8)
        _ = try session.timeSeries("a", of: Int64.self, options: TimeSeriesOptions(subscriberBufferSize: 8))
        #expect(throws: StrataError.self) { try session.fetchHistory(channels: [""]) }
        #expect(throws: StrataError.self) { try session.messageCounts(channels: [""], since: [Timetoken(0)]) }
    }

    @Test("fetchHistory and messageCounts leave out the channels the session may not read")
    func multiChannelReads() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        for name in ["open/1", "open/2", "closed/1"] { try store.channel(name, of: JSON.self).publish(["n": 1]) }
        var policy = SecurityPolicy()
        policy.roles["r"] = Role(paths: ["open": [.readTopic]])
        policy.defaultRoles = ["r"]
        try store.setSecurityPolicy(policy)
        let guest = try store.session(principal: "guest")
        let names = ["open/1", "closed/1", "open/2", "open/missing"]
        #expect(try guest.fetchHistory(channels: names).keys.sorted() == ["open/1", "open/2"])
        #expect(try store.fetchHistory(channels: names).keys.sorted() == ["closed/1", "open/1", "open/2"])
        #expect(try guest.messageCounts(channels: names, since: [Timetoken(0)]) == ["open/1": 1, "open/2": 1, "open/missing": 0])
        #expect(try guest.messageCounts(channels: names, since: names.map { _ in Timetoken(0) }).keys.sorted()
                == ["open/1", "open/2", "open/missing"])
        #expect(throws: StrataError.self) { try guest.messageCounts(channels: names, since: []) }
    }

    @Test("a policy change applies to open sessions and their handles from their next call")
    func policyChange() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.timeSeries("a/s", of: Int64.self)
        var policy = SecurityPolicy()
        policy.roles["w"] = Role(paths: ["a": [.updateTopic, .readTopic]])
        policy.principals["p"] = ["w"]
        #expect(try store.setSecurityPolicy(policy).version == 1)
        let session = try store.session(principal: "p")
        let s = try session.timeSeries("a/s", of: Int64.self)
        try s.append(1)
        policy.roles["w"] = Role(paths: ["a": [.readTopic]])
        #expect(try store.setSecurityPolicy(policy).version == 2)
        #expect(throws: StrataError.permissionDenied(principal: "p", permission: .updateTopic, path: "a/s")) { try s.append(2) }
        #expect(try s.bounds().next == 1)
        policy.principals["p"] = nil
        try store.setSecurityPolicy(policy)
        #expect(throws: StrataError.permissionDenied(principal: "p", permission: .readTopic, path: "a/s")) { try s.latest() }
        policy.defaultRoles = ["w"]
        try store.setSecurityPolicy(policy)
        #expect(try s.latest()?.value == 1)
    }

    @Test("the policy and its version survive close and reopen; a session made after reopening applies it")
    func reopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var policy = Self.traderPolicy()
        do {
            let store = try Store.open(at: dir.url)
            _ = try store.timeSeries("prices/X", of: Double.self)
            try store.setSecurityPolicy(policy)
            policy.roles["viewer"] = Role(global: [.viewSecurity, .modifySecurity])
            policy.principals["admin"] = ["viewer"]
            policy = try store.setSecurityPolicy(policy)
            try store.close()
            #expect(throws: StrataError.closed) { try store.session(principal: "alice") }
            #expect(throws: StrataError.closed) { try store.setSecurityPolicy(policy) }
        }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(try store.securityPolicy() == policy)
        #expect(policy.version == 2)
        let admin = try store.session(principal: "admin")
        #expect(try admin.securityPolicy() == policy)
        #expect(throws: StrataError.permissionDenied(principal: "alice", permission: .viewSecurity, path: nil)) {
            try store.session(principal: "alice").securityPolicy()
        }
        #expect(try admin.setSecurityPolicy(SecurityPolicy()).version == 3)
        #expect(throws: StrataError.permissionDenied(principal: "admin", permission: .viewSecurity, path: nil)) { try admin.securityPolicy() }
        #expect(throws: StrataError.permissionDenied(principal: "alice", permission: .updateTopic, path: "prices/X")) {
            try store.session(principal: "alice").timeSeries("prices/X", of: Double.self).append(1)
        }
    }

    @Test("after close, a session's handles throw .closed, also where the policy would deny")
    func closedStore() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        _ = try store.timeSeries("s", of: Int64.self)
        let session = try store.session(principal: "nobody")
        let s = try session.timeSeries("s", of: Int64.self)
        try store.close()
        #expect(throws: StrataError.closed) { try s.append(1) }
        #expect(throws: StrataError.closed) { try s.latest() }
        #expect(throws: StrataError.closed) { try session.documents("d") }
    }

    @Test("many sessions and a policy writer on several threads agree with the policy in effect")
    func concurrentChecks() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        var open = SecurityPolicy()
        open.roles["w"] = Role(paths: ["a": [.updateTopic]])
        open.defaultRoles = ["w"]
        var shut = open
        shut.roles["w"] = Role(paths: ["a": []])
        try Self.prepare(store, open)
        let (opened, closed) = (open, shut)
        let ok = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<4 {
                group.addTask { try Self.appendLoop(store, principal: "p\(i)") }
            }
            group.addTask { try Self.flip(store, opened, closed); return 0 }
            var ok = 0
            for try await o in group { ok += o }
            return ok
        }
        try Self.check(store, appended: ok)
    }

    static func prepare(_ store: Store, _ policy: SecurityPolicy) throws {
        _ = try store.timeSeries("a/s", of: Int64.self)
        try store.setSecurityPolicy(policy)
    }

    static func appendLoop(_ store: Store, principal: String) throws -> Int {
        let s = try store.session(principal: principal).timeSeries("a/s", of: Int64.self)
        var ok = 0
        for n in 0..<300 {
            do { try s.append(Int64(n)); ok += 1 } catch StrataError.permissionDenied {}
        }
        return ok
    }

    static func flip(_ store: Store, _ open: SecurityPolicy, _ shut: SecurityPolicy) throws {
        for n in 0..<50 { try store.setSecurityPolicy(n % 2 == 0 ? shut : open) }
    }

    static func check(_ store: Store, appended: Int) throws {
        #expect(try store.timeSeries("a/s", of: Int64.self).bounds().next == UInt64(appended))
        #expect(try store.securityPolicy().version == 51)
        // The last policy set (open) is the one in effect everywhere.
        try store.session(principal: "late").timeSeries("a/s", of: Int64.self).append(0)
    }
}
