import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The push core: devices, subscriptions, matching in the commit path, the outbox, reopen.
@Suite struct PushStateTests {
    /// A clock the test moves.
    final class TestClock: Sendable {
        let ms = Mutex<Int64>(1_700_000_000_000)
        var now: Date { SeriesTime.date(ms.withLock { $0 }) }
        func advance(_ d: Int64) { ms.withLock { $0 += d } }
    }

    static func open(_ dir: TemporaryDirectory, _ clock: TestClock) throws -> Store {
        var options = StoreOptions(durability: .buffered)
        options.clock = { clock.now }
        return try Store.open(at: dir.url, options: options)
    }

    static let apple = PushDevice(platform: .apple, applicationID: "com.example.stocks", deviceToken: "a1b2c3")

    static func stockSubscription(_ mode: PushSubscription.Mode = .merge) -> PushSubscription {
        var sub = PushSubscription(mode: mode, items: ["prices/AAPL"], fields: ["stock_name", "last_price"])
        sub.notificationFormat = #"{"aps":{"alert":"Stock ${stock_name} is now valued ${last_price}","badge":"AUTO"}}"#
        return sub
    }

    @Test("API.md's example: a MERGE subscription turns each committed update into one notification of the merged state")
    func mergeExample() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        let store = try Self.open(dir, clock)
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(Self.apple)
        #expect(try push.register(Self.apple).id == device.id, "registering again returns the same id")
        let active = try push.subscribe(Self.stockSubscription(), device: device.id)
        #expect(active.status == .subscribed && active.subscriptionID != nil && active.isSubscribed && !active.isTriggered)
        let prices = try store.timeSeries("prices/AAPL", of: JSON.self)
        try prices.append(["stock_name": "Apple", "last_price": 101.5])
        clock.advance(5)
        try prices.append(["last_price": 102])                    // stock_name kept from before (MERGE)
        try store.timeSeries("prices/MSFT", of: JSON.self).append(["stock_name": "Microsoft"])   // nobody listens
        let pending = try push.pendingNotifications()
        #expect(pending.map(\.payload) == [
            #"{"aps":{"alert":"Stock Apple is now valued 101.5","badge":1}}"#,
            #"{"aps":{"alert":"Stock Apple is now valued 102","badge":2}}"#,
        ])
        #expect(pending.map(\.id) == [pending[0].id, pending[0].id + 1])
        #expect(pending.allSatisfy { $0.deviceToken == "a1b2c3" && $0.platform == .apple && $0.item == "prices/AAPL"
            && $0.subscriptionID == active.subscriptionID && $0.deviceID == device.id })
        #expect(SeriesTime.milliseconds(pending[1].created)! - SeriesTime.milliseconds(pending[0].created)! == 5)
        try push.acknowledge(pending[0])
        #expect(try push.pendingNotifications().map(\.id) == [pending[1].id])
    }

    @Test("everything survives close and reopen; updates after reopen match before the program asks for push")
    func reopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        var subscriptionID = ""
        do {
            let store = try Self.open(dir, clock)
            let push = try store.pushNotifications()
            let device = try push.register(Self.apple)
            subscriptionID = try push.subscribe(Self.stockSubscription(), device: device.id).subscriptionID ?? ""
            try store.timeSeries("prices/AAPL", of: JSON.self).append(["stock_name": "Apple", "last_price": 1])
            try store.close()
        }
        let store = try Self.open(dir, clock)
        defer { try? store.close() }
        try store.timeSeries("prices/AAPL", of: JSON.self).append(["last_price": 2])   // before pushNotifications()
        let push = try store.pushNotifications()
        let pending = try push.pendingNotifications()
        #expect(pending.map(\.payload) == [
            #"{"aps":{"alert":"Stock Apple is now valued 1","badge":1}}"#,
            #"{"aps":{"alert":"Stock Apple is now valued 2","badge":2}}"#,     // merged state and badge survived
        ])
        #expect(pending[1].id > pending[0].id)
        #expect(try push.subscriptions(device: pending[0].deviceID).map(\.subscriptionID) == [subscriptionID])
        #expect(try push.register(Self.apple).id == pending[0].deviceID)
    }

    @Test("DISTINCT on a channel with a trigger: one notification when it first holds, then none; modify re-arms it")
    func distinctTrigger() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.open(dir, TestClock())
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .google, applicationID: "app", deviceToken: "t"))
        var sub = PushSubscription(mode: .distinct, items: ["alerts"], fields: ["message", "publisher"])
        sub.dataAdapter = .history
        sub.notificationFormat = #"{"android":{"notification":{"body":"${message} from $[2]"}}}"#
        sub.triggerExpression = "${message}.startsWith(\"fire\")"
        let s = try push.subscribe(sub, device: device.id)
        let alerts = try store.channel("alerts", of: String.self)
        try alerts.publish("calm", publisher: "p1")
        try alerts.publish("fire in hall", publisher: "p2")
        try alerts.publish("fire again", publisher: "p3")
        #expect(try push.pendingNotifications().map(\.payload) == [#"{"android":{"notification":{"body":"fire in hall from p2"}}}"#])
        #expect(try push.subscriptions(device: device.id, status: .triggered).map(\.subscriptionID) == [s.subscriptionID])
        #expect(try push.subscriptions(device: device.id, status: .subscribed).isEmpty)
        let modified = try push.modify(s.subscriptionID ?? "", triggerExpression: "${message}.length() > 3", notificationFormat: nil)
        #expect(modified.status == .subscribed && modified.triggerExpression == "${message}.length() > 3")
        try alerts.publish("ok", publisher: "p4")
        try alerts.publish("long enough", publisher: "p5")
        #expect(try push.pendingNotifications().count == 2)
    }

    @Test("a suspended device gets nothing until it registers again; resetBadge makes the next badge 1")
    func suspendAndBadge() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.open(dir, TestClock())
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(Self.apple)
        _ = try push.subscribe(Self.stockSubscription(.distinct), device: device.id)
        let prices = try store.timeSeries("prices/AAPL", of: JSON.self)
        try prices.append(["last_price": 1])
        try push.suspend(device: device.id)
        try prices.append(["last_price": 2])
        #expect(try push.register(Self.apple).id == device.id)
        try push.resetBadge(device: device.id)
        try prices.append(["last_price": 3])
        #expect(try push.pendingNotifications().map(\.payload) == [
            #"{"aps":{"alert":"Stock  is now valued 1","badge":1}}"#,
            #"{"aps":{"alert":"Stock  is now valued 3","badge":1}}"#,
        ])
    }

    @Test("a notification commits with its update: in a transaction, and not at all when the transaction throws")
    func transactions() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.open(dir, TestClock())
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(Self.apple)
        _ = try push.subscribe(Self.stockSubscription(.distinct), device: device.id)
        struct Abort: Error {}
        _ = try? store.transaction { tx in
            _ = try tx.timeSeries("prices/AAPL", of: JSON.self).append(["last_price": 9])
            throw Abort()
        }
        #expect(try push.pendingNotifications().isEmpty)
        try store.transaction { tx in
            _ = try tx.timeSeries("prices/AAPL", of: JSON.self).append(contentsOf: [["last_price": 1], ["last_price": 2]])
        }
        #expect(try push.pendingNotifications().count == 2)
    }

    @Test("unsubscribe, unsubscribeAll by exact status, coalescing keeps the id")
    func unsubscribing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.open(dir, TestClock())
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(Self.apple)
        var triggered = Self.stockSubscription()
        triggered.triggerExpression = "true"
        let a = try push.subscribe(triggered, device: device.id)
        let b = try push.subscribe(Self.stockSubscription(), device: device.id)
        let b2 = try push.subscribe(Self.stockSubscription(), device: device.id, coalescing: true)
        #expect(b2.subscriptionID == b.subscriptionID)
        try store.timeSeries("prices/AAPL", of: JSON.self).append(["last_price": 1])
        #expect(try push.subscriptions(device: device.id).map(\.status) == [.triggered, .subscribed])
        #expect(try push.unsubscribeAll(device: device.id, status: .subscribed) == 1)
        #expect(try push.subscriptions(device: device.id).map(\.subscriptionID) == [a.subscriptionID])
        try push.unsubscribe(a.subscriptionID ?? "")
        #expect(try push.subscriptions(device: device.id).isEmpty)
        #expect(throws: StrataError.notFound(kind: .pushSubscription, name: a.subscriptionID ?? "", reason: "push subscription \"\(a.subscriptionID ?? "")\"")) { try push.unsubscribe(a.subscriptionID ?? "") }
        let before = try push.pendingNotifications().count
        try store.timeSeries("prices/AAPL", of: JSON.self).append(["last_price": 2])
        #expect(try push.pendingNotifications().count == before)
    }

    @Test("bad input is a typed error that stores nothing")
    func badInput() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Self.open(dir, TestClock())
        defer { try? store.close() }
        let push = try store.pushNotifications(options: PushOptions(acceptedTriggers: [#"Double\.parseDouble\(\$\[2\]\) > [0-9.]+"#]))
        let device = try push.register(Self.apple)
        #expect(throws: StrataError.notFound(kind: .pushDevice, name: "D999", reason: "push device \"D999\"")) { try push.subscribe(Self.stockSubscription(), device: "D999") }
        #expect(throws: StrataError.self) { try push.register(PushDevice(platform: .apple, applicationID: "", deviceToken: "x")) }
        var bad: [PushSubscription] = []
        var s = Self.stockSubscription(); s.notificationFormat = nil; bad.append(s)
        s = Self.stockSubscription(); s.notificationFormat = "not json"; bad.append(s)
        s = Self.stockSubscription(); s.notificationFormat = #"{"a":"${nope}"}"#; bad.append(s)
        s = Self.stockSubscription(); s.notificationFormat = #"{"a":"$[3]"}"#; bad.append(s)
        s = Self.stockSubscription(); s.triggerExpression = "${last_price} >"; bad.append(s)
        s = Self.stockSubscription(); s.triggerExpression = "${nope} == \"x\""; bad.append(s)
        s = Self.stockSubscription(); s.triggerExpression = "${last_price}.isEmpty()"; bad.append(s)   // not accepted
        s = Self.stockSubscription(); s.items = ["two words"]; bad.append(s)
        s = Self.stockSubscription(); s.fields = []; bad.append(s)
        for sub in bad {
            do {
                _ = try push.subscribe(sub, device: device.id)
                Issue.record("accepted \(sub)")
            } catch StrataError.invalidArgument {
            }
        }
        var ok = Self.stockSubscription()
        ok.triggerExpression = "Double.parseDouble(${last_price}) > 500.0"
        _ = try push.subscribe(ok, device: device.id)
        #expect(try push.subscriptions(device: device.id).count == 1)
    }

    @Test("acknowledging a batch removes all of it; gone or repeated notifications are no error")
    func batchedAcknowledgement() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = TestClock()
        var store = try Self.open(dir, clock)
        let push = try store.pushNotifications()
        let device = try push.register(Self.apple)
        _ = try push.subscribe(Self.stockSubscription(.distinct), device: device.id)
        let prices = try store.timeSeries("prices/AAPL", of: JSON.self)
        for i in 0..<10 { try prices.append(["stock_name": "Apple", "last_price": .int(Int64(i))]) }
        let pending = try push.pendingNotifications()
        #expect(pending.count == 10)
        let before = store.engine.lastSequence
        try push.acknowledge(Array(pending[0..<6]) + [pending[2]])
        #expect(store.engine.lastSequence == before + 7, "one delete per notification given, in one batch")
        try push.acknowledge([])
        #expect(store.engine.lastSequence == before + 7, "an empty batch commits nothing")
        try push.acknowledge(Array(pending[4..<8]))
        try store.close()
        store = try Self.open(dir, clock)
        defer { try? store.close() }
        #expect(try store.pushNotifications().pendingNotifications().map(\.id) == pending[8...].map(\.id))
    }
}
