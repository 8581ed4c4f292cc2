import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins (API.md, top paragraph): from `async` code, each does what its synchronous
// twin does — what one writes the other reads, errors included — and runs on the store's
// executor. Cancellation, concurrency and close are in AsyncExecutorTests.swift.

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Calls the synchronous twin from an `async` context (where Swift picks the `async` one).
private func blocking<T>(_ body: () throws -> T) rethrows -> T { try body() }

@Suite("Async twins")
struct AsyncTwinTests {
    @Test func keyValueTwinsDoWhatTheSyncTwinsDo() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        #expect(await Store.opened(at: tmp.url) === store)
        #expect(try await Store.open(at: tmp.url) === store)

        try await store.put(b("a"), b("1"))
        #expect(try blocking { try store.get(b("a")) } == b("1"))
        try blocking { try store.put(b("b"), b("2")) }
        #expect(try await store.get(b("b")) == b("2"))

        var batch = WriteBatch()
        batch.put(b("c"), b("3"))
        batch.delete(b("a"))
        try await store.write(batch, durability: .synchronous)
        try await store.delete(b("b"))
        #expect(try await store.get(b("a")) == nil)
        #expect(try await store.scan().map(\.key) == [b("c")])

        let snapshot = try await store.snapshot()
        try await store.put(b("d"), b("4"))
        #expect(try snapshot.get(b("d")) == nil)
        #expect(try await store.scan(from: b("c"), limit: 5).map(\.value) == [b("3"), b("4")])
        #expect(try await store.scan(reverse: true, limit: 1).map(\.key) == [b("d")])
        #expect(try blocking { try store.scan() }.map(\.key) == [b("c"), b("d")])
        await #expect(throws: StrataError.invalidArgument(argument: "limit", reason: "limit -1 is negative")) { try await store.scan(limit: -1) }

        try await store.sync()
        try await store.compact()
        try await store.close()
        try await store.close()  // idempotent, as the synchronous twin
        #expect(await Store.opened(at: tmp.url) == nil)

        let reopened = try await Store.open(at: tmp.url)
        #expect(reopened !== store)
        #expect(try await reopened.get(b("d")) == b("4"))
        try await Store.destroy(at: tmp.url)
        #expect(await Store.opened(at: tmp.url) == nil)
        #expect(!tmp.list().contains("LOCK"))
    }

    @Test func timeSeriesTwinsDoWhatTheSyncTwinsDo() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let series = try await store.timeSeries("prices", of: String.self)

        // The seed example of API.md, through both twins.
        #expect(try await series.append("A").sequence == 0)
        #expect(try blocking { try series.append("B") }.sequence == 1)
        #expect(try await series.edit(originalSequence: 0, value: "X").sequence == 2)
        let y = try await series.edit(originalSequence: 0, value: "Y", author: "bob")
        #expect(y.sequence == 3 && y.author == "bob")
        let values = try await series.query(.values)
        #expect(values.events.map(\.sequence) == [3, 1])
        #expect(values.events.map(\.value) == ["Y", "B"])
        #expect(try await series.query(.edits(.all)).events.map(\.sequence) == [0, 1, 2, 3])
        #expect(try blocking { try series.query(.edits(.latest)) }.events.map(\.sequence) == [0, 1, 3])
        await #expect(throws: StrataError.self) { try await series.edit(originalSequence: 2, value: "Z") }

        // Explicit timestamps and authors.
        let latest = try #require(try await series.latest()).timestamp
        #expect(try await series.latest()?.sequence == 3 && blocking { try series.latest() }?.value == "Y")
        #expect(try await series.bounds() == SeriesBounds(count: 4, firstRetained: 0, next: 4))
        #expect(try blocking { try series.bounds() } == SeriesBounds(count: 4, firstRetained: 0, next: 4))
        let t = Date(timeIntervalSince1970: (latest.timeIntervalSince1970 + 10).rounded(.down))
        #expect(try await series.append("C", timestamp: t).timestamp == t)
        do {
            _ = try await series.append("D", timestamp: t.addingTimeInterval(-5))
            Issue.record("an append before the latest timestamp succeeded")
        } catch StrataError.timestampBeforeLatest(let latest, _) {
            #expect(latest == t)
        }
        let e = try await series.append("E", timestamp: nil, author: "carol")
        #expect(e.sequence == 5 && e.author == "carol" && e.timestamp == t)

        // Batches: all or nothing, contiguous.
        #expect(try await series.append(contentsOf: ["F", "G"]).map(\.sequence) == [6, 7])
        let t2 = t.addingTimeInterval(1)
        let timed = try await series.append(contentsOf: [(value: "H", timestamp: t2), (value: "I", timestamp: t2)])
        #expect(timed.map(\.sequence) == [8, 9] && timed.allSatisfy { $0.timestamp == t2 })
        await #expect(throws: StrataError.self) {
            try await series.append(contentsOf: [(value: "J", timestamp: t2), (value: "K", timestamp: t)])
        }
        #expect(try blocking { try series.query(.edits(.all)) }.events.map(\.value)
                == ["A", "B", "X", "Y", "C", "E", "F", "G", "H", "I"])

        // The opener applies options, and checks the type, as its synchronous twin.
        let limited = try await store.timeSeries("prices", of: String.self,
                                                 options: TimeSeriesOptions(retainedRange: .limit(3)))
        #expect(limited.options.retainedRange == .limit(3))
        #expect(try blocking { try series.query(.edits(.all)) }.events.map(\.sequence) == [7, 8, 9])
        do {
            _ = try await store.timeSeries("prices", of: Int64.self)
            Issue.record("reopening with another value type succeeded")
        } catch StrataError.typeMismatch {}
        #expect(try await limited.bounds() == SeriesBounds(count: 3, firstRetained: 7, next: 10))
    }

    @Test func securityPolicyTwinsDoWhatTheSyncTwinsDo() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        #expect(try await store.securityPolicy().version == 0)
        var policy = SecurityPolicy()
        policy.roles["admin"] = Role(global: [.viewSecurity])
        policy.principals["root"] = ["admin"]
        try await store.setSecurityPolicy(policy)
        let stored = try await store.securityPolicy()
        #expect(try stored.version == 1 && stored == blocking { try store.securityPolicy() })
        #expect(try await store.session(principal: "root").securityPolicy() == stored)
        let eve = try await store.session(principal: "eve")
        await #expect(throws: StrataError.permissionDenied(principal: "eve", permission: .viewSecurity, path: nil)) {
            try await eve.securityPolicy()
        }
        try await store.close()
        await #expect(throws: StrataError.closed) { try await store.securityPolicy() }
    }

    @Test func channelTwinsDoWhatTheSyncTwinsDo() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let room = try await store.channel("room", of: String.self)

        let t1 = try await room.publish("hello", meta: ["lang": "en"], publisher: "alice")
        let t2 = try blocking { try room.publish("world") }
        let more = try await room.publish(contentsOf: ["x", "y"], publisher: "bob")
        #expect(t1 < t2 && more.count == 2 && t2 < more[0] && more[0] < more[1])
        #expect(try await room.publish(contentsOf: [String]()).isEmpty)

        let page = try await room.history(limit: 100)
        #expect(page.messages.map(\.message) == ["hello", "world", "x", "y"])
        #expect(page.messages[0].publisher == "alice" && page.messages[0].meta == ["lang": "en"])
        #expect(page.messages[2].publisher == "bob")
        #expect(try await room.history(start: more[1], limit: 1).messages.map(\.message) == ["x"])
        #expect(try await room.history(reverse: true).messages.count == 4)
        await #expect(throws: StrataError.self) { try await room.history(limit: 0) }

        #expect(try await room.messageCount(since: t1) == 3)
        try await room.deleteMessages(start: t2 - 1, end: t2)
        #expect(try blocking { try room.history() }.messages.map(\.message) == ["hello", "x", "y"])
        #expect(try blocking { try room.messageCount(since: .zero) } == 3)

        let fetched = try await store.fetchHistory(channels: ["room", "absent"], limit: 2)
        #expect(fetched.keys.sorted() == ["room"])
        #expect(fetched["room"]?.messages.map(\.message) == [.string("x"), .string("y")])
        #expect(try await store.messageCounts(channels: ["room", "absent"], since: [t1]) == ["room": 2, "absent": 0])
        await #expect(throws: StrataError.self) { try await store.messageCounts(channels: ["a", "b", "c"], since: [t1, t2]) }

        let limited = try await store.channel("room", of: String.self, options: ChannelOptions(limit: 1))
        #expect(limited.options.limit == 1)
        #expect(try blocking { try room.history() }.messages.map(\.message) == ["y"])
        do {
            _ = try await store.channel("room", of: Int64.self)
            Issue.record("reopening with another message type succeeded")
        } catch StrataError.typeMismatch {}
    }

    private struct Invoice: Codable, Equatable {
        var number: String
        var total: Int
    }

    @Test func documentTwinsDoWhatTheSyncTwinsDo() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let byCost = DocumentIndex(name: "ByCost", version: "1", map: { doc, emit in
            if let cost = doc["cost"] { emit(cost, nil) }
        }, reduce: .count)
        let db = try await store.documents("main", indexes: [byCost])

        let saved = try await db.save(["cost": 5])
        #expect(!saved.metadata.id.isEmpty)
        let added = try await db.add(Document(id: "a", fields: ["cost": 7]))
        #expect(added.metadata.revision == 1)
        do {
            _ = try await db.add(Document(id: "a"))
            Issue.record("adding an existing id succeeded")
        } catch StrataError.conflict {}
        #expect(try await db.update(Document(id: "a", fields: ["cost": 9])).metadata.revision == 2)
        do {
            _ = try await db.update(Document(id: "absent"))
            Issue.record("updating a missing document succeeded")
        } catch StrataError.notFound {}
        let batch = try await db.save(contentsOf: [Document(id: "b", fields: ["cost": 1]), Document(id: "c", fields: ["cost": 2])])
        #expect(batch.map(\.metadata.id) == ["b", "c"])

        #expect(try await db.document(id: "a")?["cost"] == 9)
        #expect(try blocking { try db.document(id: "b") }?["cost"] == 1)
        #expect(try await db.document(id: "absent") == nil)
        #expect(try await db.documents(ids: ["a", "b", "absent"]).keys.sorted() == ["a", "b"])
        try await db.delete(id: "b")
        do {
            try await db.delete(id: "b")
            Issue.record("deleting a deleted document succeeded")
        } catch StrataError.notFound {}
        #expect(try blocking { try db.document(id: "b") } == nil)

        var rows = IndexQuery.all
        rows.reduce = false
        #expect(try await db.query("ByCost", rows).rows.map(\.key) == [2, 5, 9])
        #expect(try await db.query("ByCost", .all).rows.map(\.value) == [3])
        #expect(try blocking { try db.query("ByCost", rows) } == (try await db.query("ByCost", rows)))

        let feed = try await db.changes(since: 0)
        #expect(feed.changes.count == 4)
        #expect(feed.changes.contains { $0.id == "b" && $0.isDeletion })
        let syncFeed = try blocking { try db.changes(since: 0) }
        #expect(syncFeed.changes == feed.changes && syncFeed.lastSequence == feed.lastSequence)
        #expect(try await db.changes(since: 0, limit: 1).changes == [feed.changes[0]])

        let invoice = Invoice(number: "A-1", total: 1200)
        #expect(try await db.save(invoice, id: "A-1").metadata.id == "A-1")
        #expect(try await db.document(id: "A-1", as: Invoice.self) == invoice)
        #expect(try blocking { try db.document(id: "A-1", as: Invoice.self) } == invoice)
        #expect(try await db.document(id: "absent", as: Invoice.self) == nil)
        await #expect(throws: StrataError.self) { try await db.save(3, id: "n") }  // not a JSON object

        try await db.dropIndex("ByCost")
        do {
            _ = try await db.query("ByCost", .all)
            Issue.record("a dropped index answered a query")
        } catch StrataError.notFound {}
        do {
            try await db.dropIndex("ByCost")
            Issue.record("dropping a dropped index succeeded")
        } catch StrataError.notFound {}
    }
}
