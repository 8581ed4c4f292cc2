import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The in-memory image of keyspace 17 (``PushLayout``): devices, subscriptions with their
/// compiled formats and triggers, MERGE item states, the frequency state of each item, counters.
/// Read once at open (``load(from:)``); then changed, under ``PushImage``'s lock, only by the
/// API writes (``PushWriter``), the commit-time matching (``PushMatcher``) and the release of
/// waiting updates (``PushTimer``).
struct PushModel: Sendable {
    struct DeviceEntry: Sendable {
        var device: PushDevice
        var suspended: Bool
        /// The last badge number given (0: none since the last reset).
        var badge: UInt64
    }

    struct ItemKey: Hashable, Sendable {
        let adapter: PushSubscription.DataAdapter
        let item: String
    }

    struct SubscriptionEntry: Sendable {
        var number: UInt64
        var device: UInt64
        var subscription: PushSubscription
        var template: NotificationTemplate
        var trigger: PushTrigger?
        /// MERGE: each item's merged field texts, by item index.
        var merged: [Int: [String]] = [:]
        /// Each item's frequency state (last notification, waiting updates), by item index.
        var timing: [Int: ItemTiming] = [:]
    }

    /// The frequency state of a subscription's item.
    struct ItemTiming: Sendable, Hashable {
        /// When the last notification for the item was sent (ms; a released waiting update counts
        /// as sent at the instant it became due); nil before the first, and always nil without a
        /// frequency limit (no state to keep).
        var lastSent: Int64?
        /// The updates waiting for the frequency limit, oldest first: their field texts.
        var waiting: [[String]] = []
    }

    var devices: [UInt64: DeviceEntry] = [:]
    var deviceByKey: [PushDevice: UInt64] = [:]
    var subscriptions: [UInt64: SubscriptionEntry] = [:]
    var byItem: [ItemKey: [UInt64]] = [:]
    var nextDevice: UInt64 = 1
    var nextSubscription: UInt64 = 1
    var nextNotification: UInt64 = 1
    /// False only when a scan found no waiting update and nothing could have added one since
    /// (so that a poll with nothing waiting costs no scan of the subscriptions).
    var mayWait = true

    // MARK: Loading

    static func load(from snapshot: Snapshot) throws -> PushModel {
        var m = PushModel()
        if let bytes = try snapshot.get(PushLayout.countersKey) {
            let counters = try PushRecords.decodeCounters(bytes)
            m.nextDevice = try CounterLimit.checkNext(counters.device, "next device number", file: "push counters")
            m.nextSubscription = try CounterLimit.checkNext(counters.subscription, "next subscription number", file: "push counters")
            m.nextNotification = try CounterLimit.checkNext(counters.notification, "next notification number", file: "push counters")
        }
        try PushLayout.scan(snapshot, kind: 1) { n, bytes in
            let entry = try PushRecords.decodeDevice(bytes, number: n)
            m.devices[n] = entry
            m.deviceByKey[entry.device] = n
            m.nextDevice = max(m.nextDevice, try CounterLimit.next(after: n, "device number", file: "push device \(n)"))
        }
        var cache = PushRecords.CompileCache()
        try PushLayout.scan(snapshot, kind: 2) { n, bytes in
            let entry = try PushRecords.decodeSubscription(bytes, number: n, cache: &cache)
            guard m.devices[entry.device] != nil else {
                throw StrataError.corrupted(file: "push subscription \(n)", offset: 0, reason: "unknown device \(entry.device)")
            }
            m.subscriptions[n] = entry
            for key in Set(entry.subscription.items.map { ItemKey(adapter: entry.subscription.dataAdapter, item: $0) }) {
                m.byItem[key, default: []].append(n)
            }
            m.nextSubscription = max(m.nextSubscription, try CounterLimit.next(after: n, "subscription number",
                                                                                file: "push subscription \(n)"))
        }
        let statePrefix = PushLayout.prefix(3)
        let cursor = snapshot.cursor(lower: statePrefix, upper: TupleKey.prefixSuccessor(statePrefix))
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[statePrefix.count...])
            guard let n = try? d.nextUInt(), let item = try? d.nextUInt(), d.isAtEnd else {
                throw StrataError.corrupted(file: "push item state", offset: 0, reason: "bad key \(TupleKey.describe(key))")
            }
            guard var entry = m.subscriptions[n], item < UInt64(entry.subscription.items.count) else { continue }
            let (merged, timing) = try PushRecords.decodeItemState(Array(cursor.value), subscription: n, item: item,
                                                                    fieldCount: entry.subscription.fields.count)
            if let merged { entry.merged[Int(item)] = merged }
            if timing != ItemTiming() { entry.timing[Int(item)] = timing }
            m.subscriptions[n] = entry
        }
        let outbox = PushLayout.prefix(4)
        let last = snapshot.cursor(lower: outbox, upper: TupleKey.prefixSuccessor(outbox), reverse: true)
        if try last.next() {
            let n = try PushLayout.number(ofKey: last.withKey { Array($0) }, kind: 4)
            m.nextNotification = max(m.nextNotification, try CounterLimit.next(after: n, "notification number",
                                                                                file: "push notification \(n)"))
        }
        return m
    }
}
