import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Every entry point of a session × every permission it needs: allowed with exactly those,
/// denied (naming the missing one, changing nothing) without each of them.
@Suite struct SessionPermissionTableTests {
    /// One entry point: what it needs on which path, and a call of it through `session`.
    struct Entry: CustomTestStringConvertible, Sendable {
        let name: String
        let path: String
        /// The permissions that must all be granted.
        let required: Set<Permission>
        /// The permission a denial names when `required` minus `missing` is granted (default: `missing`).
        var named: @Sendable (_ missing: Permission) -> Permission = { $0 }
        let run: @Sendable (StoreSession) async throws -> Void

        var testDescription: String { name }
    }

    static let series = "t/s"
    static let channel = "t/c"
    static let database = "t/d"
    static let byKind = DocumentIndex(name: "byKind", version: "1") { doc, emit in
        if let kind = doc["kind"] { emit(kind, nil) }
    }

    /// A store with a series (event 0 by alice, event 1 by bob), a channel with two messages, a
    /// database with two documents and a stored index.
    static func fixture(_ dir: TemporaryDirectory) throws -> Store {
        let store = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
        let s = try store.timeSeries(series, of: Double.self)
        try s.append(1, timestamp: nil, author: "alice")
        try s.append(2, timestamp: nil, author: "bob")
        let c = try store.channel(channel, of: JSON.self)
        try c.publish(["n": 1])
        try c.publish(["n": 2])
        let d = try store.documents(database, indexes: [byKind])
        try d.save(Document(id: "a", fields: ["kind": "x"]))
        try d.save(Document(id: "b", fields: ["kind": "y"]))
        return store
    }

    /// Everything the fixture's collections hold, and every catalog entry, as text.
    static func fingerprint(_ store: Store) throws -> String {
        var out = ""
        let snapshot = try store.engine.snapshot()
        for kind in StoreCollections.kinds {
            for (name, entry) in try Catalog.entries(kind: kind, in: snapshot) { out += "catalog \(kind.id) \(name) \(entry)\n" }
        }
        let s = try store.timeSeries(series, of: Double.self)
        for e in try s.query(.edits(.all)).events { out += "event \(e.sequence) \(e.value) \(e.author) \(e.originalEvent?.sequence ?? 0)\n" }
        let c = try store.channel(channel, of: JSON.self)
        for m in try c.history().messages { out += "message \(m.timetoken.rawValue) \(m.message) \(m.publisher ?? "-")\n" }
        let d = try store.documents(database)
        let (changes, last) = try d.changes(since: 0)
        out += "changes \(changes.map { "\($0.id)@\($0.sequence)" }) \(last)\n"
        for id in ["a", "b", "c"] { out += "doc \(id) \(String(describing: try d.document(id: id)?.fields))\n" }
        out += "policy \(try store.securityPolicy().version)\n"
        out += "push subscriptions \(try store.pushNotifications().state.image.model.withLock { $0.subscriptions.count })\n"
        return out
    }

    static let edits: Set<Permission> = [.updateTopic, .editTimeSeriesEvents]

    static let entries: [Entry] = [
        // Time series
        Entry(name: "timeSeries open existing", path: series, required: []) { try _ = $0.timeSeries(series, of: Double.self) },
        Entry(name: "timeSeries create", path: "t/new", required: [.modifyTopic]) { try _ = $0.timeSeries("t/new", of: Double.self) },
        Entry(name: "timeSeries new options", path: series, required: [.modifyTopic]) {
            try _ = $0.timeSeries(series, of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(5)))
        },
        Entry(name: "timeSeries same options", path: series, required: []) {
            try _ = $0.timeSeries(series, of: Double.self, options: TimeSeriesOptions())
        },
        Entry(name: "append", path: series, required: [.updateTopic]) { try $0.timeSeries(series, of: Double.self).append(3) },
        Entry(name: "append timestamp", path: series, required: [.updateTopic]) {
            try $0.timeSeries(series, of: Double.self).append(3, timestamp: Date())
        },
        Entry(name: "append own author", path: series, required: [.updateTopic]) {
            try $0.timeSeries(series, of: Double.self).append(3, timestamp: nil, author: "alice")
        },
        Entry(name: "append contentsOf", path: series, required: [.updateTopic]) {
            try $0.timeSeries(series, of: Double.self).append(contentsOf: [3, 4])
        },
        Entry(name: "append contentsOf timestamps", path: series, required: [.updateTopic]) {
            try $0.timeSeries(series, of: Double.self).append(contentsOf: [(value: 3.0, timestamp: Date())])
        },
        Entry(name: "append async", path: series, required: [.updateTopic]) {
            try await $0.timeSeries(series, of: Double.self).append(3)
        },
        Entry(name: "edit own event", path: series, required: [.updateTopic, .editOwnTimeSeriesEvents]) {
            try $0.timeSeries(series, of: Double.self).edit(originalSequence: 0, value: 9)
        },
        // Without any edit permission, an edit of one's own event names the one that would do.
        Entry(name: "edit own event, edit-any permission", path: series, required: edits,
              named: { $0 == .editTimeSeriesEvents ? .editOwnTimeSeriesEvents : $0 }) {
            try $0.timeSeries(series, of: Double.self).edit(originalSequence: 0, value: 9)
        },
        Entry(name: "edit another's event", path: series, required: edits) {
            try $0.timeSeries(series, of: Double.self).edit(originalSequence: 1, value: 9)
        },
        Entry(name: "edit own author", path: series, required: [.updateTopic, .editOwnTimeSeriesEvents]) {
            try $0.timeSeries(series, of: Double.self).edit(originalSequence: 0, value: 9, author: "alice")
        },
        Entry(name: "query values", path: series, required: [.readTopic]) { try _ = $0.timeSeries(series, of: Double.self).query(.values) },
        Entry(name: "query edits all", path: series, required: [.readTopic, .queryObsoleteTimeSeriesEvents]) {
            try _ = $0.timeSeries(series, of: Double.self).query(.edits(.all))
        },
        Entry(name: "query edits latest", path: series, required: [.readTopic, .queryObsoleteTimeSeriesEvents]) {
            try _ = $0.timeSeries(series, of: Double.self).query(.edits(.latest).fromLast(1))
        },
        Entry(name: "latest", path: series, required: [.readTopic]) { try _ = $0.timeSeries(series, of: Double.self).latest() },
        Entry(name: "bounds", path: series, required: [.readTopic]) { try _ = $0.timeSeries(series, of: Double.self).bounds() },
        Entry(name: "query async", path: series, required: [.readTopic]) {
            try _ = await $0.timeSeries(series, of: Double.self).query(.values)
        },
        Entry(name: "subscribe", path: series, required: [.selectTopic]) {
            let s = try await $0.timeSeries(series, of: Double.self)
            for try await _ in s.subscribe() { break }
        },
        // Channels
        Entry(name: "channel open existing", path: channel, required: []) { try _ = $0.channel(channel, of: JSON.self) },
        Entry(name: "channel create", path: "t/c2", required: [.modifyTopic]) { try _ = $0.channel("t/c2", of: JSON.self) },
        Entry(name: "channel new options", path: channel, required: [.modifyTopic]) {
            try _ = $0.channel(channel, of: JSON.self, options: ChannelOptions(limit: 10))
        },
        Entry(name: "channel same options", path: channel, required: []) {
            try _ = $0.channel(channel, of: JSON.self, options: ChannelOptions())
        },
        Entry(name: "publish", path: channel, required: [.updateTopic]) { try $0.channel(channel, of: JSON.self).publish(["n": 3]) },
        Entry(name: "publish own publisher", path: channel, required: [.updateTopic]) {
            try $0.channel(channel, of: JSON.self).publish(["n": 3], publisher: "alice")
        },
        Entry(name: "publish contentsOf", path: channel, required: [.updateTopic]) {
            try $0.channel(channel, of: JSON.self).publish(contentsOf: [["n": 3], ["n": 4]])
        },
        Entry(name: "publish async", path: channel, required: [.updateTopic]) {
            try await $0.channel(channel, of: JSON.self).publish(["n": 3])
        },
        Entry(name: "history", path: channel, required: [.readTopic]) { try _ = $0.channel(channel, of: JSON.self).history() },
        Entry(name: "messageCount", path: channel, required: [.readTopic]) {
            try _ = $0.channel(channel, of: JSON.self).messageCount(since: Timetoken(0))
        },
        Entry(name: "deleteMessages", path: channel, required: [.modifyTopic]) { try $0.channel(channel, of: JSON.self).deleteMessages() },
        Entry(name: "messages", path: channel, required: [.selectTopic]) { try _ = $0.channel(channel, of: JSON.self).messages() },
        // Documents
        Entry(name: "documents open existing", path: database, required: []) { try _ = $0.documents(database) },
        Entry(name: "documents stored index", path: database, required: []) { try _ = $0.documents(database, indexes: [byKind]) },
        Entry(name: "documents create", path: "t/d2", required: [.modifyTopic]) { try _ = $0.documents("t/d2") },
        Entry(name: "documents new index", path: database, required: [.modifyTopic]) {
            try _ = $0.documents(database, indexes: [DocumentIndex(name: "other", version: "1") { _, emit in emit(1, nil) }])
        },
        Entry(name: "documents new index version", path: database, required: [.modifyTopic]) {
            try _ = $0.documents(database, indexes: [DocumentIndex(name: "byKind", version: "2") { _, emit in emit(1, nil) }])
        },
        Entry(name: "save", path: database, required: [.updateTopic]) { try $0.documents(database).save(Document(id: "c", fields: ["kind": "z"])) },
        Entry(name: "add", path: database, required: [.updateTopic]) { try $0.documents(database).add(Document(id: "c", fields: [:])) },
        Entry(name: "update", path: database, required: [.updateTopic]) { try $0.documents(database).update(Document(id: "a", fields: [:])) },
        Entry(name: "save contentsOf", path: database, required: [.updateTopic]) {
            try $0.documents(database).save(contentsOf: [Document(id: "c", fields: [:])])
        },
        Entry(name: "save codable", path: database, required: [.updateTopic]) { try $0.documents(database).save(["kind": "w"], id: "c") },
        Entry(name: "save async", path: database, required: [.updateTopic]) {
            try await $0.documents(database).save(Document(id: "c", fields: [:]))
        },
        Entry(name: "delete", path: database, required: [.modifyTopic]) { try $0.documents(database).delete(id: "a") },
        Entry(name: "dropIndex", path: database, required: [.modifyTopic]) {
            try $0.documents(database, indexes: [byKind]).dropIndex("byKind")
        },
        Entry(name: "document", path: database, required: [.readTopic]) { try _ = $0.documents(database).document(id: "a") },
        Entry(name: "document as", path: database, required: [.readTopic]) {
            try _ = $0.documents(database).document(id: "a", as: [String: String].self)
        },
        Entry(name: "documents ids", path: database, required: [.readTopic]) { try _ = $0.documents(database).documents(ids: ["a"]) },
        Entry(name: "index query", path: database, required: [.readTopic]) {
            try _ = $0.documents(database, indexes: [byKind]).query("byKind", .all)
        },
        Entry(name: "changes since", path: database, required: [.readTopic]) { try _ = $0.documents(database).changes(since: 0) },
        Entry(name: "observe", path: database, required: [.selectTopic]) {
            try _ = $0.documents(database, indexes: [byKind]).observe("byKind", .all)
        },
        Entry(name: "changes stream", path: database, required: [.selectTopic]) { try _ = $0.documents(database).changes() },
        // Transactions
        Entry(name: "transaction append", path: series, required: [.updateTopic]) { session in
            try session.transaction { tx in _ = try tx.timeSeries(series, of: Double.self).append(5) }
        },
        Entry(name: "transaction edit own", path: series, required: [.updateTopic, .editOwnTimeSeriesEvents]) { session in
            try session.transaction { tx in _ = try tx.timeSeries(series, of: Double.self).edit(originalSequence: 0, value: 5) }
        },
        Entry(name: "transaction edit another's", path: series, required: edits) { session in
            try session.transaction { tx in _ = try tx.timeSeries(series, of: Double.self).edit(originalSequence: 1, value: 5) }
        },
        Entry(name: "transaction create series", path: "t/new", required: [.modifyTopic]) { session in
            try session.transaction { tx in _ = try tx.timeSeries("t/new", of: Double.self) }
        },
        Entry(name: "transaction publish", path: channel, required: [.updateTopic]) { session in
            try session.transaction { tx in _ = try tx.channel(channel, of: JSON.self).publish(["n": 5]) }
        },
        Entry(name: "transaction save", path: database, required: [.updateTopic]) { session in
            try session.transaction { tx in _ = try tx.documents(database).save(Document(id: "c", fields: [:])) }
        },
        Entry(name: "transaction delete", path: database, required: [.modifyTopic]) { session in
            try session.transaction { tx in try tx.documents(database).delete(id: "a") }
        },
        Entry(name: "transaction async", path: series, required: [.updateTopic]) { session in
            try await session.transaction { tx in _ = try tx.timeSeries(series, of: Double.self).append(5) }
        },
        // Push
        Entry(name: "push subscribe", path: series, required: [.selectTopic]) { session in
            let push = try session.pushNotifications()
            let device = try push.register(PushDevice(platform: .apple, applicationID: "app", deviceToken: "token"))
            var sub = PushSubscription(mode: .merge, items: [series], fields: ["value"])
            sub.notificationFormat = #"{"aps":{"alert":"${value}"}}"#
            _ = try push.subscribe(sub, device: device.id)
        },
        // Security
        Entry(name: "securityPolicy", path: "", required: [.viewSecurity]) { try _ = $0.securityPolicy() },
        Entry(name: "setSecurityPolicy", path: "", required: [.modifySecurity]) { try $0.setSecurityPolicy(SecurityPolicy()) },
    ]

    /// A policy giving alice exactly `granted` (path permissions on "t", global ones globally).
    static func policy(granting granted: Set<Permission>) -> SecurityPolicy {
        var policy = SecurityPolicy()
        policy.roles["r"] = Role(global: granted.filter(\.isGlobal), paths: ["t": granted.filter { !$0.isGlobal }])
        policy.principals["alice"] = ["r"]
        return policy
    }

    @Test("allowed with exactly the permissions it needs", arguments: entries)
    func allowed(_ entry: Entry) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.fixture(dir)
        defer { try? store.close() }
        try await store.setSecurityPolicy(Self.policy(granting: entry.required))
        try await entry.run(try await store.session(principal: "alice"))
    }

    @Test("denied without each permission it needs, naming it, changing nothing", arguments: entries.filter { !$0.required.isEmpty })
    func denied(_ entry: Entry) async throws {
        for missing in entry.required.sorted(by: { $0.rawValue < $1.rawValue }) {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let store = try Self.fixture(dir)
            defer { try? store.close() }
            // Everything else, on every path: only `missing` is absent.
            var granted = Set(Permission.allCases)
            granted.remove(missing)
            if missing == .editOwnTimeSeriesEvents || missing == .editTimeSeriesEvents {
                granted.subtract([.editOwnTimeSeriesEvents, .editTimeSeriesEvents])
                granted.formUnion(entry.required.subtracting([missing]))
            }
            var policy = SecurityPolicy()
            policy.roles["r"] = Role(global: granted.filter(\.isGlobal), paths: ["": granted.filter { !$0.isGlobal }])
            policy.principals["alice"] = ["r"]
            try await store.setSecurityPolicy(policy)
            let before = try Self.fingerprint(store)
            let session = try await store.session(principal: "alice")
            let expected = StrataError.permissionDenied(principal: "alice", permission: entry.named(missing),
                                                        path: missing.isGlobal ? nil : entry.path)
            await #expect(throws: expected, "\(entry.name) without \(missing)") { try await entry.run(session) }
            #expect(try Self.fingerprint(store) == before, "\(entry.name) without \(missing) changed the store")
        }
    }

    @Test("with no permission at all every checked entry point is denied and nothing changes", arguments: entries.filter { !$0.required.isEmpty })
    func deniedEverything(_ entry: Entry) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.fixture(dir)
        defer { try? store.close() }
        let before = try Self.fingerprint(store)
        let session = try await store.session(principal: "alice")   // the empty policy of a new store
        do {
            try await entry.run(session)
            Issue.record("\(entry.name) was allowed with no permission")
        } catch StrataError.permissionDenied(let principal, let permission, let path) {
            #expect(principal == "alice" && entry.required.contains(permission) && path == (permission.isGlobal ? nil : entry.path))
        }
        #expect(try Self.fingerprint(store) == before)
    }
}
