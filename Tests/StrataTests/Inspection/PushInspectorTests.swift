import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// `PushInspector` (behind `strata-dump push`): devices, subscriptions and the outbox, read from the files.
@Suite struct PushInspectorTests {
    @Test("devices, subscriptions with pending counts and the oldest notifications, read without opening the store")
    func devicesSubscriptionsOutbox() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = StoreOptions(durability: .buffered)
        options.clock = { Date(timeIntervalSince1970: 1_700_000_000) }
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let empty = try PushInspector.push(ofStoreAt: dir.path)
        #expect(empty.devices.isEmpty && empty.subscriptions.isEmpty && empty.outbox.isEmpty && empty.pending == 0)
        #expect(empty.nextNotification == 1)

        let push = try store.pushNotifications()
        let phone = try push.register(PushDevice(platform: .apple, applicationID: "com.example.stocks", deviceToken: "a1b2"))
        let tablet = try push.register(PushDevice(platform: .google, applicationID: "com.example.stocks", deviceToken: "f00d"))
        var merge = PushSubscription(mode: .merge, items: ["prices/AAPL"], fields: ["value"])
        merge.notificationFormat = PushFormat.apple(alert: "AAPL ${value}", badge: "AUTO")
        let s1 = try push.subscribe(merge, device: phone.id)
        var alert = PushSubscription(mode: .distinct, items: ["prices/AAPL", "prices/MSFT"], fields: ["value"])
        alert.notificationFormat = PushFormat.google(title: "${value}")
        alert.triggerExpression = "Double.parseDouble(${value}) > 500.0"
        let s2 = try push.subscribe(alert, device: tablet.id)
        try push.suspend(device: tablet.id)
        let prices = try store.timeSeries("prices/AAPL", of: Double.self)
        try prices.append(contentsOf: [101.5, 102, 103])
        try push.acknowledge(try push.pendingNotifications(limit: 1)[0])
        try store.sync()

        let inspected = try PushInspector.push(ofStoreAt: dir.path, limit: 1)
        #expect(inspected.devices == [
            .init(id: phone.id, platform: "Apple", applicationID: "com.example.stocks", deviceToken: "a1b2", status: "registered", badge: 3),
            .init(id: tablet.id, platform: "Google", applicationID: "com.example.stocks", deviceToken: "f00d", status: "suspended", badge: 0),
        ])
        #expect(inspected.subscriptions.map(\.id) == [s1.subscriptionID, s2.subscriptionID])
        let first = inspected.subscriptions[0]
        #expect(first.device == phone.id && first.mode == "MERGE" && first.adapter == "timeSeries" && first.items == ["prices/AAPL"])
        #expect(first.status == "SUBSCRIBED" && first.statusTime == 1_700_000_000_000 && first.trigger == nil)
        #expect(first.format == merge.notificationFormat && first.bufferSize == "default" && first.maxFrequency == "default")
        #expect(first.pending == 2)
        let second = inspected.subscriptions[1]
        #expect(second.trigger == alert.triggerExpression && second.items == ["prices/AAPL", "prices/MSFT"] && second.pending == 0)
        #expect(inspected.pending == 2 && inspected.nextNotification == 4)
        #expect(inspected.nextDevice == 3 && inspected.nextSubscription == 3)
        #expect(inspected.outbox == [
            .init(id: 2, device: phone.id, subscription: s1.subscriptionID!, item: "prices/AAPL", created: 1_700_000_000_000,
                  payload: #"{"aps":{"alert":"AAPL 102.0","badge":2}}"#),
        ])
        #expect(try PushInspector.push(ofStoreAt: dir.path).outbox.map(\.id) == [2, 3])
    }

    @Test("a damaged record is reported as corruption naming it")
    func corruptRecord() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.pushNotifications().register(PushDevice(platform: .apple, applicationID: "app", deviceToken: "t"))
        var batch = WriteBatch()
        batch.putRaw(PushLayout.deviceKey(1), [1, 9])
        try store.engine.commit(CommitBatch(records: batch))
        try store.sync()
        #expect {
            try PushInspector.push(ofStoreAt: dir.path)
        } throws: { error in
            guard case StrataError.corrupted(let file, _, let reason)? = error as? StrataError else { return false }
            return file.contains("D1") && reason.contains("platform 9")
        }
    }
}
