@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The changes a batch makes to push state, computed against a model `base`: what ``PushMatcher``
/// stages for a commit's updates, and ``PushTimer`` for a release of waiting updates.
struct PushStaging {
    /// What a commit's matching (or a release of waiting updates) adds to a batch, and the
    /// model change it makes once visible.
    struct Staged {
        var records: [([UInt8], [UInt8])]
        var notifications: [PushNotification]
        var statuses: [PushStatusChange]
        var apply: @Sendable (inout PushModel) -> Void
    }

    let base: PushModel
    let now: Int64
    var subscriptions: [UInt64: PushModel.SubscriptionEntry] = [:]
    var devices: [UInt64: PushModel.DeviceEntry] = [:]
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

    init(_ base: PushModel, now: Int64) {
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
                             id: PushLayout.subscriptionID(n), item: e.spec.subscription.items[item]))
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
        guard let entry = subscriptions[n] ?? base.subscriptions[n], let interval = entry.spec.frequencyInterval,
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
    func finish(_ m: PushModel) throws -> Staged {
        if exhausted {
            throw StrataError.invalidArgument(argument: "notificationID", reason: "no notification number is left: the next, \(next), would pass the limit \(CounterLimit.max) (FORMAT.md 2, \"Limit\")")
        }
        var records = self.records
        for key in changedStates {
            guard let entry = subscriptions[key.subscription] else { continue }
            let item = key.item
            records.append((PushLayout.itemStateKey(key.subscription, item),
                            PushRecords.encodeItemState(merged: entry.merged[item], timing: entry.timing[item] ?? PushModel.ItemTiming())))
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
            for (n, d) in touchedDevices where m.devices[n] != nil { m.devices[n] = d }
            for (n, e) in touched {
                guard let old = m.subscriptions[n] else { continue }
                m.subscriptions[n] = e
                if !e.timing.isEmpty { m.noteWaiting(n, old: old) }
            }
            m.nextNotification = max(m.nextNotification, nextID)
        })
    }
}
