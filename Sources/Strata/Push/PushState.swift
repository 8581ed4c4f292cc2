import Dispatch
import Foundation
import Synchronization
import StrataFormat
import StrataFiles
import StrataEngine

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

    struct Model: Sendable {
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
    }

    static let registryName = ""

    let engine: Engine

    /// The store's executor, for the `async` twins.

    let executor: StoreExecutor
    let broadcaster: CommitBroadcaster
    let clock: @Sendable () -> Date
    let model: Mutex<Model>
    let turnstile = PushTurnstile()
    /// The task that releases waiting updates when they become due, started by the first
    /// ``PushNotifications/notifications(bufferSize:)`` stream and cancelled at close.
    let timer = Mutex<(any DispatchSourceTimer)?>(nil)
    /// `model.subscriptions.count`, read without the lock on every commit.
    private let subscriptionCount = Atomic<Int>(0)

    /// `loaded`: the model open read in recovery's first phase (``Store/loadAtOpen(_:)``), if any.
    init(store: Store, loaded: Model? = nil) throws {
        engine = store.engine
        executor = store.executor
        broadcaster = store.broadcaster
        clock = store.options.clock
        model = Mutex(try loaded ?? Self.load(from: store.engine.snapshot()))
        subscriptionCount.store(model.withLock { $0.subscriptions.count }, ordering: .relaxed)
        engine.register(self)
    }

    func storeDidClose() {
        timer.withLock { $0?.cancel() }
    }

    func storeDidFail(_ error: StrataError) {
        timer.withLock { $0?.cancel() }
    }

    var now: Int64 { SeriesTime.milliseconds(clock()) ?? 0 }

    // MARK: Loading

    static func load(from snapshot: Snapshot) throws -> Model {
        var m = Model()
        if let bytes = try snapshot.get(PushLayout.countersKey) {
            var r = try PushLayout.Reader(bytes, what: "push counters")
            m.nextDevice = try CounterLimit.checkNext(try r.varint(), "next device number", file: "push counters")
            m.nextSubscription = try CounterLimit.checkNext(try r.varint(), "next subscription number", file: "push counters")
            m.nextNotification = try CounterLimit.checkNext(try r.varint(), "next notification number", file: "push counters")
            try r.end()
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
            let key = last.withKey { Array($0) }
            var d = TupleKeyDecoder(key[outbox.count...])
            guard let n = try? d.nextUInt(), d.isAtEnd else {
                throw StrataError.corrupted(file: "push outbox", offset: 0, reason: "bad key \(TupleKey.describe(key))")
            }
            m.nextNotification = max(m.nextNotification, try CounterLimit.next(after: n, "notification number",
                                                                                file: "push notification \(n)"))
        }
        return m
    }


    // MARK: Writes of the API

    /// Runs `body` holding the turnstile, commits the records it adds, then applies `after` to
    /// the model: the way every API write changes push state.
    func write<R>(_ body: (Model, inout WriteBatch) throws -> (R, (inout Model) -> Void)) throws -> R {
        try writeReporting { m, batch, _ in try body(m, &batch) }
    }

    /// ``write(_:)`` whose body also reports the status changes it makes (to
    /// ``PushNotifications/statusChanges(bufferSize:)`` streams, with the commit).
    func writeReporting<R>(_ body: (Model, inout WriteBatch, inout [PushStatusChange]) throws -> (R, (inout Model) -> Void)) throws -> R {
        let pass = turnstile.enter()
        defer { pass.leave() }
        let current = model.withLock { $0 }
        var batch = WriteBatch()
        var statuses: [PushStatusChange] = []
        let (result, apply) = try body(current, &batch, &statuses)
        if !batch.isEmpty {
            var commit = CommitBatch(records: batch)
            if !statuses.isEmpty { commit.changes.append(PushStatusChanged(changes: statuses)) }
            try engine.commit(commit)
        }
        model.withLock {
            apply(&$0)
            $0.mayWait = true   // a coalescing subscribe keeps waiting updates
        }
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
            if !staged.notifications.isEmpty { batch.changes.append(NotificationsAdded(notifications: staged.notifications)) }
            if !staged.statuses.isEmpty { batch.changes.append(PushStatusChanged(changes: staged.statuses)) }
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
        for case let change as any PushItemUpdates in changes {
            let key = ItemKey(adapter: change.pushAdapter, item: change.pushItem)
            guard subscribed[key] != nil else { continue }
            for fields in change.pushUpdates() { result.append(Update(key: key, fields: fields)) }
        }
        return result
    }

    /// The records and the model change of matching `updates` against `m`.
    ///
    /// Each matched subscription is copied into the staging once per batch and then changed in
    /// place (its merged states, timing, status), so that an update costs no copy of its entry.
    private func stage(_ updates: [Update], _ m: Model) throws -> Staged {
        var staging = Staging(m, now: now)
        for update in updates {
            guard let numbers = m.byItem[update.key] else { continue }
            var fields: [String: String]?
            for n in numbers {
                if staging.subscriptions[n] == nil {
                    guard let e = m.subscriptions[n] else { continue }
                    staging.subscriptions[n] = e
                }
                // One read of the entry per update (a dictionary read copies the whole entry).
                guard let e = staging.subscriptions[n], e.subscription.status != .triggered,
                      let itemIndex = e.subscription.items.firstIndex(of: update.key.item),
                      let device = staging.devices[e.device] ?? m.devices[e.device], !device.suspended else { continue }
                let sub = e.subscription
                let updateFields = try fields ?? update.fields()
                fields = updateFields
                let values: [String]
                switch sub.mode {
                case .merge:
                    values = staging.merge(updateFields, names: sub.fields, subscription: n, item: itemIndex)
                    staging.changedStates.insert(Staging.StateKey(subscription: n, item: itemIndex))
                case .distinct:
                    values = sub.fields.map { updateFields[$0] ?? "" }
                }
                let emitting = Staging.Emitter(subscription: n, device: e.device, template: e.template,
                                               id: sub.subscriptionID ?? PushLayout.subscriptionID(n), item: update.key.item)
                if let trigger = e.trigger {
                    // Triggered notifications ignore the frequency limit.
                    guard trigger.evaluate(values) else { continue }
                    staging.subscriptions[n]!.subscription.status = .triggered
                    staging.subscriptions[n]!.subscription.statusTimestamp = SeriesTime.date(staging.now)
                    staging.changedSubscriptions.insert(n)
                    staging.statuses.append(.triggered(subscriptionID: emitting.id, deviceID: PushLayout.deviceID(e.device)))
                    staging.emit(values, emitting)
                    continue
                }
                guard let interval = sub.frequencyInterval else {
                    staging.emit(values, emitting)
                    continue
                }
                // Whatever became due before this update is released first, as the timer would have.
                staging.releaseDue(subscription: n, item: itemIndex, interval: interval)
                staging.changedStates.insert(Staging.StateKey(subscription: n, item: itemIndex))
                var timing = staging.subscriptions[n]!.timing.removeValue(forKey: itemIndex) ?? ItemTiming()
                if timing.waiting.isEmpty, timing.lastSent.map({ $0 &+ interval <= staging.now }) ?? true {
                    timing.lastSent = staging.now
                    staging.subscriptions[n]!.timing[itemIndex] = timing
                    staging.emit(values, emitting)
                    continue
                }
                if timing.waiting.count >= sub.waitingCapacity {
                    switch sub.mode {
                    case .merge: timing.waiting.removeLast()       // the newest state replaces the newest waiting one
                    case .distinct: timing.waiting.removeFirst()   // the oldest waiting update is dropped
                    }
                }
                timing.waiting.append(values)
                staging.subscriptions[n]!.timing[itemIndex] = timing
            }
        }
        return try staging.finish(m)
    }

    /// What a commit's matching (or a release of waiting updates) adds to a batch, and the
    /// model change it makes once visible.
    struct Staged {
        var records: [([UInt8], [UInt8])]
        var notifications: [PushNotification]
        var statuses: [PushStatusChange]
        var apply: @Sendable (inout Model) -> Void
    }

    /// The changes a batch makes to push state, computed against a model `base`.
    struct Staging {
        let base: Model
        let now: Int64
        var subscriptions: [UInt64: SubscriptionEntry] = [:]
        var devices: [UInt64: DeviceEntry] = [:]
        var next: UInt64
        var records: [([UInt8], [UInt8])] = []
        var notifications: [PushNotification] = []
        /// An emit found no notification number left (``CounterLimit``): ``finish(_:)`` refuses.
        var exhausted = false
        var statuses: [PushStatusChange] = []
        var changedStates = Set<StateKey>()
        var changedSubscriptions = Set<UInt64>()

        /// A subscription's item whose state changed.
        struct StateKey: Hashable {
            let subscription: UInt64
            let item: Int
        }

        /// Merges `fields` into the item's state of staged subscription `n` (in place) and
        /// returns the merged texts.
        mutating func merge(_ fields: [String: String], names: [String], subscription n: UInt64, item: Int) -> [String] {
            var merged = subscriptions[n]!.merged.removeValue(forKey: item) ?? Array(repeating: "", count: names.count)
            for (j, name) in names.enumerated() { if let v = fields[name] { merged[j] = v } }
            subscriptions[n]!.merged[item] = merged
            return merged
        }

        init(_ base: Model, now: Int64) {
            self.base = base
            self.now = now
            next = base.nextNotification
        }

        /// What a notification of one subscription's item needs, read once from its entry.
        struct Emitter {
            let subscription: UInt64
            let device: UInt64
            let template: NotificationTemplate
            let id: String
            let item: String
        }

        /// Writes the notification of `values` for subscription `n`'s item (its badge taken now).
        mutating func emit(_ values: [String], subscription n: UInt64, item: Int) {
            guard let e = subscriptions[n] ?? base.subscriptions[n] else { return }
            emit(values, Emitter(subscription: n, device: e.device, template: e.template,
                                 id: e.subscription.subscriptionID ?? PushLayout.subscriptionID(n), item: e.subscription.items[item]))
        }

        mutating func emit(_ values: [String], _ x: Emitter) {
            guard next <= CounterLimit.max else {
                exhausted = true
                return
            }
            guard var device = devices[x.device] ?? base.devices[x.device] else { return }
            var badge: UInt64 = 0
            if x.template.usesBadge {
                device.badge &+= 1
                badge = device.badge
                devices[x.device] = device
            }
            let payload = x.template.render(values: values, subscriptionID: x.id, badge: { Int(clamping: badge) })
            let notification = PushNotification(id: next, deviceID: PushLayout.deviceID(x.device), platform: device.device.platform,
                                                applicationID: device.device.applicationID, deviceToken: device.device.deviceToken,
                                                subscriptionID: x.id, item: x.item, payload: payload, created: SeriesTime.date(now))
            records.append((PushLayout.notificationKey(next), PushRecords.encode(notification, device: x.device, subscription: x.subscription)))
            notifications.append(notification)
            next += 1
        }

        /// The instant subscription `n`'s item `item` has its oldest waiting update due, if any.
        func due(subscription n: UInt64, item: Int) -> Int64? {
            guard let entry = subscriptions[n] ?? base.subscriptions[n], let interval = entry.subscription.frequencyInterval,
                  let timing = entry.timing[item], !timing.waiting.isEmpty else { return nil }
            return timing.lastSent.map { $0 &+ interval } ?? .min
        }

        /// Releases the item's waiting updates that are due at `now`, oldest first, each counted
        /// as sent at the instant it became due; returns how many. Nothing is released for a
        /// suspended device or a subscription with a trigger.
        @discardableResult
        mutating func releaseDue(subscription n: UInt64, item: Int, interval: Int64, limit: Int = .max) -> Int {
            guard var entry = subscriptions[n] ?? base.subscriptions[n], entry.trigger == nil,
                  let device = devices[entry.device] ?? base.devices[entry.device], !device.suspended,
                  var timing = entry.timing[item] else { return 0 }
            var released = 0
            while released < limit, let values = timing.waiting.first {
                let due = timing.lastSent.map { $0 &+ interval } ?? now
                guard due <= now else { break }
                timing.waiting.removeFirst()
                timing.lastSent = due
                entry.timing[item] = timing
                subscriptions[n] = entry
                emit(values, subscription: n, item: item)
                released += 1
            }
            if released > 0 { changedStates.insert(StateKey(subscription: n, item: item)) }
            return released
        }

        /// The records of everything staged, and the model change.
        func finish(_ m: Model) throws -> Staged {
            if exhausted {
                throw StrataError.invalidArgument(argument: "notificationID", reason: "no notification number is left: the next, \(next), would pass the limit \(CounterLimit.max) (FORMAT.md 2, \"Limit\")")
            }
            var records = self.records
            for key in changedStates {
                guard let entry = subscriptions[key.subscription] else { continue }
                let item = key.item
                records.append((PushLayout.itemStateKey(key.subscription, item),
                                PushRecords.encodeItemState(merged: entry.merged[item], timing: entry.timing[item] ?? ItemTiming())))
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
            return Staged(records: records, notifications: notifications, statuses: statuses, apply: { m in
                for (n, e) in touched where m.subscriptions[n] != nil { m.subscriptions[n] = e }
                for (n, d) in touchedDevices where m.devices[n] != nil { m.devices[n] = d }
                m.nextNotification = max(m.nextNotification, nextID)
                if touched.values.contains(where: { $0.timing.values.contains { !$0.waiting.isEmpty } }) { m.mayWait = true }
            })
        }
    }

    // MARK: Releasing waiting updates

    /// The most notifications one release batch writes.
    static let releaseBatchLimit = 1_024

    /// Releases every waiting update due at `clock()`, in batches through the turnstile, oldest
    /// due first; returns how many notifications it wrote.
    @discardableResult
    func releaseDue() throws -> Int {
        var total = 0
        while true {
            let written = try releaseBatch()
            total += written
            if written < Self.releaseBatchLimit { return total }
        }
    }

    /// The earliest instant (ms) at which a waiting update is or will be due; nil when nothing waits.
    func nextDue() -> Int64? {
        model.withLock { m in
            guard m.mayWait else { return nil }
            let staging = Staging(m, now: 0)
            var earliest: Int64?
            for (n, entry) in m.subscriptions where entry.trigger == nil {
                for item in entry.timing.keys {
                    guard let due = staging.due(subscription: n, item: item) else { continue }
                    earliest = min(earliest ?? due, due)
                }
            }
            if earliest == nil { m.mayWait = false }
            return earliest
        }
    }

    private func releaseBatch() throws -> Int {
        guard let earliest = nextDue(), earliest <= now else { return 0 }
        let pass = turnstile.enter()
        defer { pass.leave() }
        let m = model.withLock { $0 }
        var staging = Staging(m, now: now)
        var released = 0
        while released < Self.releaseBatchLimit {
            // One update per item and round, the items in the order their updates became due.
            var due: [(Int64, UInt64, Int)] = []
            for (n, entry) in m.subscriptions where entry.trigger == nil {
                guard let device = m.devices[entry.device], !device.suspended else { continue }
                for item in entry.timing.keys {
                    if let t = staging.due(subscription: n, item: item), t <= staging.now { due.append((t, n, item)) }
                }
            }
            guard !due.isEmpty else { break }
            due.sort { ($0.0, $0.1, $0.2) < ($1.0, $1.1, $1.2) }
            let before = released
            for (_, n, item) in due where released < Self.releaseBatchLimit {
                guard let interval = (staging.subscriptions[n] ?? m.subscriptions[n])?.subscription.frequencyInterval else { continue }
                released += staging.releaseDue(subscription: n, item: item, interval: interval, limit: 1)
            }
            if released == before { break }
        }
        guard released > 0 else { return 0 }
        let staged = try staging.finish(m)
        var batch = CommitBatch(records: WriteBatch())
        for (key, value) in staged.records { batch.records.putRaw(key, value) }
        batch.changes.append(NotificationsAdded(notifications: staged.notifications))
        try engine.commit(batch)
        model.withLock { staged.apply(&$0) }
        return released
    }

    /// Starts the timer that releases waiting updates when due (once per store): it wakes up
    /// every `period` of real time on a queue of its own (not the cooperative pool, which callers
    /// may keep busy) and releases what has come due by the clock, so a fake clock is honoured.
    func startTimer(period: DispatchTimeInterval = .milliseconds(100)) {
        timer.withLock { source in
            guard source == nil else { return }
            let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "strata.push.timer"))
            t.schedule(deadline: .now() + period, repeating: period)
            t.setEventHandler { [weak self] in
                // A failure is retried at the next wake-up (the engine reports it to the streams);
                // close cancels the timer.
                _ = try? self?.releaseDue()
            }
            t.resume()
            source = t
        }
    }
}

/// Notifications a commit added to the outbox, in id order (for ``PushNotifications/notifications(bufferSize:)``).
struct NotificationsAdded: CommitChange {
    let notifications: [PushNotification]
}

/// Status changes a commit made (for ``PushNotifications/statusChanges(bufferSize:)``).
struct PushStatusChanged: CommitChange {
    let changes: [PushStatusChange]
}
