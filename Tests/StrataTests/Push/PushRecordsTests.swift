import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The records of keyspace 17 as FORMAT.md §18 specifies them.
@Suite struct PushRecordsTests {
    static func hex(_ text: String) -> [UInt8] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { UInt8($0, radix: 16) }
    }

    /// The `key:` / `value:` records of §18's example, each line's bytes being the text before
    /// its first run of three spaces.
    static func documentedRecords() throws -> [(key: [UInt8], value: [UInt8])] {
        let format = try String(contentsOfFile: #filePath.components(separatedBy: "/Tests/")[0] + "/FORMAT.md", encoding: .utf8)
        let section = format.components(separatedBy: "## 18. Push subscriptions")[1]
        let example = section.components(separatedBy: "Example:")[1]
        func code(_ line: Substring) -> [UInt8] {
            hex(line.trimmingCharacters(in: .whitespaces).components(separatedBy: "   ")[0])
        }
        return example.components(separatedBy: "    key:    ").dropFirst().map { block in
            let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
            let valueLines = block.components(separatedBy: "value:  ")[1].split(separator: "\n", omittingEmptySubsequences: false)
                .prefix(while: { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
            return (code(lines[0]), valueLines.flatMap(code))
        }
    }

    @Test("FORMAT.md §18's worked example: every key and record of keyspace 17, byte for byte, as a store writes them")
    func workedExample() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = StoreOptions(durability: .buffered)
        options.clock = { Date(timeIntervalSince1970: 1) }
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .apple, applicationID: "com.example", deviceToken: "ab12"))
        var subscription = PushSubscription(mode: .merge, items: ["AAPL"], fields: ["value"])
        subscription.notificationFormat = PushFormat.apple(alert: "AAPL ${value}")
        _ = try push.subscribe(subscription, device: device.id)
        try store.timeSeries("AAPL", of: Double.self).append(9.5)

        let prefix = Keyspace.push.prefix
        let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var stored: [(key: [UInt8], value: [UInt8])] = []
        while try cursor.next() { stored.append((cursor.withKey { Array($0) }, Array(cursor.value))) }
        let documented = try Self.documentedRecords()
        #expect(documented.map(\.key) == stored.map(\.key))
        #expect(documented.map(\.value) == stored.map(\.value))
        #expect(stored.map(\.key) == [PushLayout.countersKey, PushLayout.deviceKey(1), PushLayout.subscriptionKey(1),
                                      PushLayout.itemStateKey(1, 0), PushLayout.notificationKey(1)])

        // The records decode to what the API returned.
        let notification = try #require(try push.pendingNotifications().first)
        #expect(try PushRecords.decodeNotification(stored[4].value, id: 1) == notification)
        #expect(notification.payload == #"{"aps":{"alert":"AAPL 9.5"}}"#)
        let counters = try PushRecords.decodeCounters(stored[0].value)
        #expect(counters.device == 2 && counters.subscription == 2 && counters.notification == 2)
        let (owner, decoded) = try PushRecords.decodeSubscriptionRecord(stored[2].value, number: 1)
        let listed = try push.subscriptions(device: device.id)
        #expect(owner == 1 && [decoded] == listed)
    }

    @Test("a reopen recovers the next notification id from the outbox's last key when it is past the counters")
    func nextNotificationFromOutbox() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            let push = try store.pushNotifications()
            let device = try push.register(PushDevice(platform: .google, applicationID: "app", deviceToken: "t"))
            var subscription = PushSubscription(mode: .distinct, items: ["s"], fields: ["value"])
            subscription.notificationFormat = PushFormat.google(body: "${value}")
            _ = try push.subscribe(subscription, device: device.id)
            try store.timeSeries("s", of: Double.self).append(contentsOf: [1, 2, 3])
            // Counters that lag behind the outbox (what an older writer could leave).
            var batch = WriteBatch()
            var w = PushLayout.Writer()
            w.varint(2)
            w.varint(2)
            w.varint(1)
            batch.putRaw(PushLayout.countersKey, w.bytes)
            try store.engine.commit(CommitBatch(records: batch))
            try store.close()
        }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let push = try store.pushNotifications()
        try store.timeSeries("s", of: Double.self).append(4)
        #expect(try push.pendingNotifications().map(\.id) == [1, 2, 3, 4])
    }
}
