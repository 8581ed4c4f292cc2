import Foundation
import Strata
import Testing

/// Each kind of collection once, through the public API only, with its errors matched by case.
@Suite struct CollectionAPITests {
    @Test func aTimeSeriesAppendsEditsAndQueries() throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        let series = try store.timeSeries("sensors/boiler", of: String.self,
                                          options: TimeSeriesOptions(retainedRange: .limit(100)))
        let a = try series.append("A", timestamp: Date(timeIntervalSince1970: 1_000))
        try series.append("B", timestamp: Date(timeIntervalSince1970: 1_001))
        try series.edit(originalSequence: a.sequence, value: "X")
        try series.edit(originalSequence: a.sequence, value: "Y")
        let values = try series.query(RangeQuery.values)
        #expect(values.events.map(\.value) == ["Y", "B"])
        #expect(values.events.map(\.sequence) == [3, 1])
        #expect(values.events.first?.originalEvent?.sequence == 0)
        #expect(try series.query(RangeQuery.edits(.all)).events.map(\.sequence) == [0, 1, 2, 3])
        #expect(try series.query(RangeQuery.edits(.latest)).events.map(\.sequence) == [0, 1, 3])

        let early = #expect(throws: StrataError.self) {
            try series.append("C", timestamp: Date(timeIntervalSince1970: 999))
        }
        #expect(isStrataError(early) { if case .timestampBeforeLatest = $0 { true } else { false } })
        let edit = #expect(throws: StrataError.self) { try series.edit(originalSequence: 2, value: "Z") }
        #expect(isStrataError(edit) { if case .invalidArgument = $0 { true } else { false } })
        let type = #expect(throws: StrataError.self) { try store.timeSeries("sensors/boiler", of: Double.self) }
        #expect(isStrataError(type) { if case .typeMismatch = $0 { true } else { false } })
        try store.close()
    }

    @Test func aChannelPublishesPagesCountsAndDeletes() throws {
        struct ChatMessage: Codable, Sendable, Equatable {
            var user: String
            var text: String
        }
        let temporary = TemporaryStore()
        let store = try temporary.open()
        let room = try store.channel("chat/lobby", of: ChatMessage.self)
        var timetokens: [Timetoken] = []
        for i in 0..<5 {
            timetokens.append(try room.publish(ChatMessage(user: "ada", text: "\(i)"), publisher: "ada"))
        }
        let newest = try room.history(limit: 2)
        #expect(newest.messages.map(\.message.text) == ["3", "4"])
        #expect(newest.hasMore)
        let older = try room.history(start: newest.start, limit: 100)
        #expect(older.messages.map(\.message.text) == ["0", "1", "2"])
        #expect(try room.messageCount(since: timetokens[1]) == 3)
        try room.deleteMessages(start: timetokens[2] - 1, end: timetokens[2])
        #expect(try room.history().messages.map(\.message.text) == ["0", "1", "3", "4"])
        let limit = #expect(throws: StrataError.self) { try room.history(limit: 0) }
        #expect(isStrataError(limit) { if case .invalidArgument = $0 { true } else { false } })
        try store.close()
    }

    @Test func aDocumentDatabaseSavesIndexesAndRefuses() throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        let db = try store.documents("shop", indexes: [
            DocumentIndex(name: "TotalByCustomer", version: "1", map: { doc, emit in
                if let customer = doc["customer"] { emit(customer, doc["total"]) }
            }, reduce: .sum),
        ])
        let first = try db.save(["customer": "acme", "total": 1200])
        try db.save(["customer": "acme", "total": 300])
        try db.save(["customer": "bolt", "total": 50])
        var perCustomer = IndexQuery.all
        perCustomer.groupLevel = 1
        let totals = try db.query("TotalByCustomer", perCustomer)
        #expect(totals.rows.map(\.key) == ["acme", "bolt"])
        #expect(totals.rows.map(\.value) == [1500, 50])
        #expect(try db.document(id: first.metadata.id)?["total"] == 1200)

        let duplicate = #expect(throws: StrataError.self) { try db.add(first) }
        #expect(isStrataError(duplicate) { if case .conflict = $0 { true } else { false } })
        let missing = #expect(throws: StrataError.self) { try db.delete(id: "no-such-document") }
        #expect(isStrataError(missing) { if case .notFound = $0 { true } else { false } })
        let json = #expect(throws: StrataError.self) { try Document(json: "[1, 2]") }
        #expect(isStrataError(json) { if case .invalidArgument = $0 { true } else { false } })
        try store.close()
    }

    @Test func aSessionIsCheckedAgainstThePolicy() throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        var policy = SecurityPolicy()
        policy.roles["reader"] = Role(paths: ["prices": [.readTopic]])
        policy.principals["alice"] = ["reader"]
        try store.setSecurityPolicy(policy)
        let prices = try store.timeSeries("prices/ACME", of: Double.self)
        try prices.append(101.5)

        let alice = try store.session(principal: "alice")
        let hers = try alice.timeSeries("prices/ACME", of: Double.self)
        #expect(try hers.query(.values).events.map(\.value) == [101.5])
        let denied = #expect(throws: StrataError.self) { try hers.append(102) }
        guard case .permissionDenied(let principal, let permission, let path)? = denied else {
            Issue.record("expected permissionDenied, got \(String(describing: denied))")
            return
        }
        #expect(principal == "alice")
        #expect(permission == .updateTopic)
        #expect(path == "prices/ACME")
        #expect(try prices.query(.values).events.count == 1)   // a denied call changes nothing
        try store.close()
    }

    @Test func aPushSubscriptionFillsTheOutbox() throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        let push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .apple, applicationID: "com.example.stocks",
                                                  deviceToken: "a1b2c3"))
        var quotes = PushSubscription(mode: .merge, items: ["prices/ACME"], fields: ["last_price"])
        quotes.notificationFormat = #"{"aps":{"alert":"now ${last_price}"}}"#
        let subscription = try push.subscribe(quotes, device: device.id)
        #expect(subscription.isSubscribed)

        let prices = try store.timeSeries("prices/ACME", of: JSON.self)
        try prices.append(["last_price": 501.25])
        let pending = try push.pendingNotifications()
        #expect(pending.count == 1)
        #expect(pending.first?.payload.contains("501.25") == true)
        for notification in pending { try push.acknowledge(notification) }
        #expect(try push.pendingNotifications().isEmpty)

        let unknown = #expect(throws: StrataError.self) { try push.unsubscribe("S999") }
        #expect(isStrataError(unknown) { if case .notFound = $0 { true } else { false } })
        try store.close()
    }
}
