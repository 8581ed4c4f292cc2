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

    /// A subscription in memory: its number, device, shared spec, status and the states of its
    /// items. Kept small (56 bytes, the spec shared), since a store may hold millions.
    struct SubscriptionEntry: Sendable {
        var number: UInt64
        var device: UInt64
        var spec: PushSubscriptionSpec
        /// The status time in milliseconds, when ``hasStatusTime``.
        var statusTime: Int64
        /// MERGE: each item's merged field texts, by item index.
        var merged: [Int: [String]] = [:]
        /// Each item's frequency state (last notification, waiting updates), by item index.
        var timing: [Int: ItemTiming] = [:]
        var status: PushSubscription.Status
        var hasStatusTime: Bool

        init(number: UInt64, device: UInt64, spec: PushSubscriptionSpec, status: PushSubscription.Status, statusTime: Int64?,
             merged: [Int: [String]] = [:], timing: [Int: ItemTiming] = [:]) {
            self.number = number
            self.device = device
            self.spec = spec
            self.status = status
            self.statusTime = statusTime ?? 0
            self.hasStatusTime = statusTime != nil
            self.merged = merged
            self.timing = timing
        }

        init(number: UInt64, device: UInt64, subscription: PushSubscription, template: NotificationTemplate, trigger: PushTrigger?,
             merged: [Int: [String]] = [:], timing: [Int: ItemTiming] = [:]) {
            self.init(number: number, device: device, spec: PushSubscriptionSpec(subscription, template: template, trigger: trigger),
                      status: subscription.status, statusTime: subscription.statusTimestamp.flatMap(SeriesTime.milliseconds),
                      merged: merged, timing: timing)
        }

        /// The subscription as the API shows it: the spec's, with its id, status and status time.
        /// Setting it replaces the spec (keeping the compiled template and trigger).
        var subscription: PushSubscription {
            get {
                var s = spec.subscription
                s.subscriptionID = PushLayout.subscriptionID(number)
                s.status = status
                s.statusTimestamp = hasStatusTime ? SeriesTime.date(statusTime) : nil
                return s
            }
            set {
                spec = spec.with(subscription: newValue)
                status = newValue.status
                let time = newValue.statusTimestamp.flatMap(SeriesTime.milliseconds)
                statusTime = time ?? 0
                hasStatusTime = time != nil
            }
        }

        var template: NotificationTemplate {
            get { spec.template }
            set { spec = spec.with(template: newValue) }
        }

        var trigger: PushTrigger? {
            get { spec.trigger }
            set { spec = spec.with(trigger: newValue) }
        }
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
    var subscriptions = PushSubscriptionTable()
    var byItem: [ItemKey: [UInt64]] = [:]
    var nextDevice: UInt64 = 1
    var nextSubscription: UInt64 = 1
    var nextNotification: UInt64 = 1
    /// The items with waiting updates by due time (stale entries included, see ``PushDueIndex``).
    var due = PushDueIndex()
    /// The live entries of ``due`` when it was last rebuilt: it is rebuilt when it doubles.
    var dueBaseline = 0

    // MARK: Waiting updates

    /// When subscription `n`'s item `item` has its oldest waiting update due; nil when nothing of
    /// it waits, or it cannot be released (a trigger, no frequency limit, a suspended device).
    func dueTime(subscription n: UInt64, item: Int) -> Int64? {
        guard let entry = subscriptions[n], let t = Self.due(entry, item: item),
              let device = devices[entry.device], !device.suspended else { return nil }
        return t
    }

    /// When `entry`'s item `item` has its oldest waiting update due, whatever its device.
    static func due(_ entry: SubscriptionEntry, item: Int) -> Int64? {
        guard entry.spec.trigger == nil, let interval = entry.spec.frequencyInterval,
              let timing = entry.timing[item], !timing.waiting.isEmpty else { return nil }
        return timing.lastSent.map { $0 &+ interval } ?? .min
    }

    /// Whether `e` is the current due time of its item.
    func validDue(_ e: PushDueIndex.Entry) -> Bool {
        dueTime(subscription: e.subscription, item: e.item) == e.due
    }

    /// Adds the due times of `entry`'s waiting items that differ from those in `old`.
    mutating func noteWaiting(_ n: UInt64, old: SubscriptionEntry?) {
        guard let entry = subscriptions[n], !entry.timing.isEmpty else { return }
        for item in entry.timing.keys {
            guard let t = dueTime(subscription: n, item: item) else { continue }
            if let old, Self.due(old, item: item) == t { continue }
            due.insert(PushDueIndex.Entry(due: t, subscription: n, item: item))
        }
        compactDueIndex()
    }

    /// Adds the due times of every waiting item of the device's subscriptions (when it resumes).
    mutating func noteWaiting(device: UInt64) {
        for (n, entry) in subscriptions where entry.device == device && !entry.timing.isEmpty { noteWaiting(n, old: nil) }
    }

    /// The earliest valid due time, dropping stale entries from the top.
    mutating func nextDue() -> Int64? {
        while let top = due.min {
            if validDue(top) { return top.due }
            due.popMin()
        }
        return nil
    }

    /// Rebuilds ``due`` from the subscriptions when stale entries have made it more than twice
    /// as large as it was when last rebuilt (and at least 1,024 entries).
    mutating func compactDueIndex() {
        guard due.count >= 1_024, due.count > 2 * dueBaseline else { return }
        rebuildDueIndex()
    }

    mutating func rebuildDueIndex() {
        var fresh = PushDueIndex()
        for (n, entry) in subscriptions where !entry.timing.isEmpty {
            for item in entry.timing.keys {
                if let t = dueTime(subscription: n, item: item) { fresh.insert(PushDueIndex.Entry(due: t, subscription: n, item: item)) }
            }
        }
        due = fresh
        dueBaseline = fresh.count
    }

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
        // The item index is built per shared spec (no hashing of item names per subscription),
        // then sorted.
        var entries: [SubscriptionEntry] = []
        var bySpec: [ObjectIdentifier: (spec: PushSubscriptionSpec, numbers: [UInt64])] = [:]
        var lastDevice: UInt64?
        try PushLayout.scan(snapshot, kind: 2) { n, bytes in
            let entry = try PushRecords.decodeSubscription(bytes, number: n, cache: &cache)
            if entry.device != lastDevice {
                guard m.devices[entry.device] != nil else {
                    throw StrataError.corrupted(file: "push subscription \(n)", offset: 0, reason: "unknown device \(entry.device)")
                }
                lastDevice = entry.device
            }
            bySpec[ObjectIdentifier(entry.spec), default: (entry.spec, [])].numbers.append(n)
            entries.append(entry)
        }
        if let last = entries.last?.number {
            m.nextSubscription = max(m.nextSubscription, try CounterLimit.next(after: last, "subscription number",
                                                                                file: "push subscription \(last)"))
        }
        m.subscriptions = PushSubscriptionTable(sorted: entries)   // the scan is in number order
        entries = []
        var shared = Set<ItemKey>()
        for (spec, numbers) in bySpec.values {
            for key in spec.itemKeys {
                if m.byItem[key] != nil { shared.insert(key) }
                m.byItem[key, default: []].append(contentsOf: numbers)
            }
        }
        for key in shared { m.byItem[key]!.sort() }
        let statePrefix = PushLayout.prefix(3)
        let cursor = snapshot.cursor(lower: statePrefix, upper: TupleKey.prefixSuccessor(statePrefix), fillCache: false)
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[statePrefix.count...])
            guard let n = try? d.nextUInt(), let item = try? d.nextUInt(), d.isAtEnd else {
                throw StrataError.corrupted(file: "push item state", offset: 0, reason: "bad key \(TupleKey.describe(key))")
            }
            guard var entry = m.subscriptions[n], item < UInt64(entry.spec.subscription.items.count) else { continue }
            let (merged, timing) = try PushRecords.decodeItemState(Array(cursor.value), subscription: n, item: item,
                                                                    fieldCount: entry.spec.subscription.fields.count)
            if let merged { entry.merged[Int(item)] = merged }
            if timing != ItemTiming() { entry.timing[Int(item)] = timing }
            m.subscriptions[n] = entry
        }
        m.rebuildDueIndex()
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
