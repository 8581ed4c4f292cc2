import Foundation
import Synchronization

/// The push subscriptions of a store: devices, subscriptions with their compiled formats and
/// triggers, MERGE item states, counters — the in-memory image of keyspace 17 — and the commit
/// participant that turns each committed update of a subscribed item into outbox rows of the
/// same batch.
final class PushState: CollectionState, CommitParticipant {
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
    }

    struct Model: Sendable {
        var devices: [UInt64: DeviceEntry] = [:]
        var deviceByKey: [PushDevice: UInt64] = [:]
        var subscriptions: [UInt64: SubscriptionEntry] = [:]
        var byItem: [ItemKey: [UInt64]] = [:]
        var nextDevice: UInt64 = 1
        var nextSubscription: UInt64 = 1
        var nextNotification: UInt64 = 1
    }

    static let registryName = ""

    let engine: Engine
    let clock: @Sendable () -> Date
    let model: Mutex<Model>
    let turnstile = PushTurnstile()
    /// `model.subscriptions.count`, read without the lock on every commit.
    private let subscriptionCount = Atomic<Int>(0)

    init(store: Store) throws {
        engine = store.engine
        clock = store.options.clock
        model = Mutex(try Self.load(from: store.engine.snapshot()))
        subscriptionCount.store(model.withLock { $0.subscriptions.count }, ordering: .relaxed)
        engine.register(self)
    }

    func storeDidClose() {}
    func storeDidFail(_ error: StrataError) {}

    var now: Int64 { SeriesTime.milliseconds(clock()) ?? 0 }

    // MARK: Loading

    static func load(from snapshot: Snapshot) throws -> Model {
        var m = Model()
        if let bytes = try snapshot.get(PushLayout.countersKey) {
            var r = try PushLayout.Reader(bytes, what: "push counters")
            m.nextDevice = try r.varint()
            m.nextSubscription = try r.varint()
            m.nextNotification = try r.varint()
            try r.end()
        }
        try scan(snapshot, kind: 1) { n, bytes in
            let entry = try PushRecords.decodeDevice(bytes, number: n)
            m.devices[n] = entry
            m.deviceByKey[entry.device] = n
            m.nextDevice = max(m.nextDevice, n + 1)
        }
        var cache = PushRecords.CompileCache()
        try scan(snapshot, kind: 2) { n, bytes in
            let entry = try PushRecords.decodeSubscription(bytes, number: n, cache: &cache)
            guard m.devices[entry.device] != nil else {
                throw StrataError.corrupted(file: "push subscription \(n)", offset: 0, reason: "unknown device \(entry.device)")
            }
            m.subscriptions[n] = entry
            for key in Set(entry.subscription.items.map { ItemKey(adapter: entry.subscription.dataAdapter, item: $0) }) {
                m.byItem[key, default: []].append(n)
            }
            m.nextSubscription = max(m.nextSubscription, n + 1)
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
            var r = try PushLayout.Reader(Array(cursor.value), what: "push item state \(n)/\(item)")
            let values = try r.names()
            try r.end()
            guard values.count == entry.subscription.fields.count else {
                throw r.fail("\(values.count) merged fields for \(entry.subscription.fields.count)")
            }
            entry.merged[Int(item)] = values
            m.subscriptions[n] = entry
        }
        let outbox = PushLayout.prefix(4)
        let last = snapshot.cursor(lower: outbox, upper: TupleKey.prefixSuccessor(outbox), reverse: true)
        if try last.next() {
            let key = last.withKey { Array($0) }
            var d = TupleKeyDecoder(key[outbox.count...])
            if let n = try? d.nextUInt(), n < .max { m.nextNotification = max(m.nextNotification, n + 1) }
        }
        return m
    }

    private static func scan(_ snapshot: Snapshot, kind: UInt64, _ body: (UInt64, [UInt8]) throws -> Void) throws {
        let prefix = PushLayout.prefix(kind)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[prefix.count...])
            guard let n = try? d.nextUInt(), d.isAtEnd else {
                throw StrataError.corrupted(file: "push records", offset: 0, reason: "bad key \(TupleKey.describe(key))")
            }
            try body(n, Array(cursor.value))
        }
    }

    // MARK: Writes of the API

    /// Runs `body` holding the turnstile, commits the records it adds, then applies `after` to
    /// the model: the way every API write changes push state.
    func write<R>(_ body: (Model, inout WriteBatch) throws -> (R, (inout Model) -> Void)) throws -> R {
        let pass = turnstile.enter()
        defer { pass.leave() }
        let current = model.withLock { $0 }
        var batch = WriteBatch()
        let (result, apply) = try body(current, &batch)
        if !batch.isEmpty { try engine.commit(CommitBatch(records: batch)) }
        model.withLock { apply(&$0) }
        subscriptionCount.store(model.withLock { $0.subscriptions.count }, ordering: .relaxed)
        return result
    }

    static func putCounters(_ m: Model, into batch: inout WriteBatch) {
        batch.putRaw(PushLayout.countersKey, PushRecords.counters(m))
    }

    // MARK: Matching (the commit participant)

    /// One update of an item: its fields by name, computed when first needed.
    private struct Update {
        let key: ItemKey
        let fields: () throws -> [String: String]
    }

    func prepare(_ batch: inout CommitBatch) throws {
        guard subscriptionCount.load(ordering: .relaxed) > 0, !batch.changes.isEmpty else { return }
        let updates = model.withLock { m in Self.updates(in: batch.changes, subscribed: m.byItem) }
        guard !updates.isEmpty else { return }
        let pass = turnstile.enter()
        do {
            let staged = try model.withLock { m in try stage(updates, m) }
            guard !staged.records.isEmpty else {
                pass.leave()
                return
            }
            for (key, value) in staged.records { batch.records.putRaw(key, value) }
            let apply = staged.apply
            batch.onVisible.append { [self] _ in
                model.withLock { apply(&$0) }
                pass.leave()
            }
            batch.onAbort.append { pass.leave() }
        } catch {
            pass.leave()
            throw error
        }
    }

    /// The updates of subscribed items among `changes`, in order.
    private static func updates(in changes: [any CommitChange], subscribed: [ItemKey: [UInt64]]) -> [Update] {
        var result: [Update] = []
        for change in changes {
            if let events = change as? SeriesState.Events {
                let key = ItemKey(adapter: .timeSeries, item: events.path)
                guard subscribed[key] != nil else { continue }
                for (i, record) in events.records.enumerated() {
                    let sequence = events.first + UInt64(i)
                    result.append(Update(key: key) {
                        try PushRecords.fields(ofEvent: record, sequence: sequence, decoding: events.decoding,
                                               typeName: events.typeName, path: events.path)
                    })
                }
            } else if let messages = change as? ChannelState.Messages {
                let key = ItemKey(adapter: .history, item: messages.name)
                guard subscribed[key] != nil else { continue }
                for (tt, value) in zip(messages.timetokens, messages.values) {
                    result.append(Update(key: key) {
                        try PushRecords.fields(ofMessage: value, timetoken: tt, typeName: messages.typeName, name: messages.name)
                    })
                }
            }
        }
        return result
    }

    /// The records and the model change of matching `updates` against `m`.
    private func stage(_ updates: [Update], _ m: Model) throws -> (records: [([UInt8], [UInt8])], apply: @Sendable (inout Model) -> Void) {
        var subscriptions: [UInt64: SubscriptionEntry] = [:]
        var devices: [UInt64: DeviceEntry] = [:]
        var next = m.nextNotification
        var records: [([UInt8], [UInt8])] = []
        var changedStates = Set<[UInt64]>()
        var changedSubscriptions = Set<UInt64>()
        let created = now
        for update in updates {
            guard let numbers = m.byItem[update.key] else { continue }
            var fields: [String: String]?
            for n in numbers {
                guard var entry = subscriptions[n] ?? m.subscriptions[n], entry.subscription.status != .triggered,
                      var device = devices[entry.device] ?? m.devices[entry.device], !device.suspended else { continue }
                let sub = entry.subscription
                guard let itemIndex = sub.items.firstIndex(of: update.key.item) else { continue }
                let updateFields = try fields ?? update.fields()
                fields = updateFields
                let values: [String]
                switch sub.mode {
                case .merge:
                    var merged = entry.merged[itemIndex] ?? Array(repeating: "", count: sub.fields.count)
                    for (j, name) in sub.fields.enumerated() { if let v = updateFields[name] { merged[j] = v } }
                    entry.merged[itemIndex] = merged
                    changedStates.insert([n, UInt64(itemIndex)])
                    values = merged
                case .distinct:
                    values = sub.fields.map { updateFields[$0] ?? "" }
                }
                defer { subscriptions[n] = entry }
                if let trigger = entry.trigger {
                    guard trigger.evaluate(values) else { continue }
                    entry.subscription.status = .triggered
                    entry.subscription.statusTimestamp = SeriesTime.date(created)
                    changedSubscriptions.insert(n)
                }
                var badge: UInt64 = 0
                if entry.template.usesBadge {
                    device.badge &+= 1
                    badge = device.badge
                    devices[entry.device] = device
                }
                let id = PushLayout.subscriptionID(n)
                let payload = entry.template.render(values: values, subscriptionID: id, badge: { Int(clamping: badge) })
                let notification = PushNotification(id: next, deviceID: PushLayout.deviceID(entry.device), platform: device.device.platform,
                                                    applicationID: device.device.applicationID, deviceToken: device.device.deviceToken,
                                                    subscriptionID: id, item: update.key.item, payload: payload,
                                                    created: SeriesTime.date(created))
                records.append((PushLayout.notificationKey(next), PushRecords.encode(notification, device: entry.device, subscription: n)))
                next += 1
            }
        }
        for key in changedStates {
            guard let entry = subscriptions[key[0]], let merged = entry.merged[Int(key[1])] else { continue }
            var w = PushLayout.Writer()
            w.names(merged)
            records.append((PushLayout.itemStateKey(key[0], Int(key[1])), w.bytes))
        }
        for n in changedSubscriptions {
            guard let entry = subscriptions[n] else { continue }
            records.append((PushLayout.subscriptionKey(n), PushRecords.encode(entry)))
        }
        for (n, device) in devices { records.append((PushLayout.deviceKey(n), PushRecords.encode(device))) }
        if next != m.nextNotification {
            var counters = m
            counters.nextNotification = next
            records.append((PushLayout.countersKey, PushRecords.counters(counters)))
        }
        let (touched, touchedDevices, nextID) = (subscriptions, devices, next)
        return (records, { m in
            for (n, e) in touched where m.subscriptions[n] != nil { m.subscriptions[n] = e }
            for (n, d) in touchedDevices where m.devices[n] != nil { m.devices[n] = d }
            m.nextNotification = max(m.nextNotification, nextID)
        })
    }
}
