import Foundation

/// Options of ``Store/pushNotifications(options:)``.
public struct PushOptions: Sendable {
    /// Regular expressions a trigger (with named arguments rewritten to `$[n]`) must match whole
    /// to be accepted; empty accepts everything the language parses.
    public var acceptedTriggers: [String] = []

    /// Options accepting the triggers that match `acceptedTriggers` (all if empty).
    public init(acceptedTriggers: [String] = []) {
        self.acceptedTriggers = acceptedTriggers
    }
}

/// The push subscriptions of a store (Lightstreamer's MPN module, embedded): devices,
/// subscriptions on time series and channels, and the outbox their matches fill.
public struct PushNotifications: Sendable {
    let state: PushState
    let options: PushOptions
    /// The checks of the session that gave this handle, or nil for the store's own: in a
    /// session, subscribing to an item needs ``Permission/selectTopic`` on it.
    var access: SessionAccess? = nil

    // MARK: Devices

    /// Registers `device`, or returns the registered device with the same platform, application
    /// and token (resuming it if suspended).
    public func register(_ device: PushDevice) throws -> RegisteredDevice {
        try device.validate()
        return try state.write { m, batch in
            var next = m
            let n: UInt64
            var entry: PushState.DeviceEntry
            if let existing = m.deviceByKey[device], let e = m.devices[existing] {
                n = existing
                entry = e
                guard entry.suspended else { return (RegisteredDevice(id: PushLayout.deviceID(n), status: .registered, device: device), { _ in }) }
                entry.suspended = false
            } else {
                n = m.nextDevice
                next.nextDevice += 1
                entry = PushState.DeviceEntry(device: device, suspended: false, badge: 0)
                PushState.putCounters(next, into: &batch)
            }
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(entry))
            let stored = entry
            return (RegisteredDevice(id: PushLayout.deviceID(n), status: .registered, device: device), { m in
                m.devices[n] = stored
                m.deviceByKey[device] = n
                m.nextDevice = max(m.nextDevice, n + 1)
            })
        }
    }

    /// Suspends a device: no notifications are created for it until it registers again.
    public func suspend(device id: String) throws {
        try state.write { m, batch in
            let (n, entry) = try Self.device(id, in: m)
            var changed = entry
            changed.suspended = true
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(changed))
            let stored = changed
            return ((), { $0.devices[n] = stored })
        }
    }

    /// Gives a device a new token; its subscriptions stay.
    public func updateToken(device id: String, to token: String) throws -> RegisteredDevice {
        try state.write { m, batch in
            let (n, entry) = try Self.device(id, in: m)
            var changed = entry
            changed.device.deviceToken = token
            try changed.device.validate()
            if let other = m.deviceByKey[changed.device], other != n {
                throw StrataError.conflict("push device \(id): the token is registered to device \(PushLayout.deviceID(other))")
            }
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(changed))
            let stored = changed
            return (RegisteredDevice(id: id, status: changed.suspended ? .suspended : .registered, device: changed.device), { m in
                m.deviceByKey[entry.device] = nil
                m.deviceByKey[stored.device] = n
                m.devices[n] = stored
            })
        }
    }

    /// Makes the next badge number of a device 1.
    public func resetBadge(device id: String) throws {
        try state.write { m, batch in
            let (n, entry) = try Self.device(id, in: m)
            var changed = entry
            changed.badge = 0
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(changed))
            let stored = changed
            return ((), { $0.devices[n] = stored })
        }
    }

    static func device(_ id: String, in m: PushState.Model) throws -> (UInt64, PushState.DeviceEntry) {
        guard let n = PushLayout.number(id, prefix: "D"), let entry = m.devices[n] else {
            throw StrataError.notFound("push device \(id.debugDescription)")
        }
        return (n, entry)
    }

    // MARK: Subscriptions

    /// In a session, every item needs ``Permission/selectTopic``.
    ///
    /// Subscribes: compiles the format and trigger, stores the subscription with a new id (or,
    /// with `coalescing`, modifies a same-device subscription with the same adapter, items,
    /// fields and trigger), and returns it with status `.subscribed`. Nothing is sent until the
    /// next update.
    public func subscribe(_ subscription: PushSubscription, device id: String, coalescing: Bool = false) throws -> PushSubscription {
        try subscription.validate()
        if let access { for item in subscription.items { try access.require(.selectTopic, item) } }
        if case .limited? = subscription.requestedMaxFrequency {
            throw StrataError.invalidArgument("push subscription: frequency limits are not supported yet")
        }
        if case .limited? = subscription.requestedBufferSize {
            throw StrataError.invalidArgument("push subscription: buffer sizes are not supported yet")
        }
        let template = try NotificationTemplate(subscription.notificationFormat ?? "", fields: subscription.fields)
        let trigger = try subscription.triggerExpression.map { try PushTrigger($0, fields: subscription.fields) }
        if let t = subscription.triggerExpression, !options.acceptedTriggers.isEmpty {
            guard try PushTrigger.accepts(PushTrigger.normalized(t, fields: subscription.fields), patterns: options.acceptedTriggers) else {
                throw StrataError.invalidArgument("push subscription: the trigger \(t.debugDescription) is not among the accepted triggers")
            }
        }
        let now = SeriesTime.date(state.now)
        return try state.write { m, batch in
            let (deviceNumber, _) = try Self.device(id, in: m)
            var next = m
            var number = m.nextSubscription
            var merged: [Int: [String]] = [:]
            if coalescing, let existing = m.subscriptions.values.first(where: {
                $0.device == deviceNumber && $0.subscription.dataAdapter == subscription.dataAdapter
                    && $0.subscription.items == subscription.items && $0.subscription.fields == subscription.fields
                    && $0.subscription.triggerExpression == subscription.triggerExpression
            }) {
                number = existing.number
                merged = existing.merged
            } else {
                next.nextSubscription += 1
                PushState.putCounters(next, into: &batch)
            }
            var s = subscription
            s.subscriptionID = PushLayout.subscriptionID(number)
            s.status = .subscribed
            s.statusTimestamp = now
            let entry = PushState.SubscriptionEntry(number: number, device: deviceNumber, subscription: s, template: template,
                                                    trigger: trigger, merged: merged)
            batch.putRaw(PushLayout.subscriptionKey(number), PushRecords.encode(entry))
            return (s, { m in
                let old = m.subscriptions[number]
                m.subscriptions[number] = entry
                m.nextSubscription = max(m.nextSubscription, number + 1)
                if old == nil {
                    for key in Set(s.items.map { PushState.ItemKey(adapter: s.dataAdapter, item: $0) }) {
                        m.byItem[key, default: []].append(number)
                    }
                }
            })
        }
    }

    /// Changes a subscription's trigger and format (nil keeps); a triggered subscription becomes
    /// subscribed again.
    public func modify(_ id: String, triggerExpression: String?, notificationFormat: String?) throws -> PushSubscription {
        try state.write { m, batch in
            guard let n = PushLayout.number(id, prefix: "S"), var entry = m.subscriptions[n] else {
                throw StrataError.notFound("push subscription \(id.debugDescription)")
            }
            var s = entry.subscription
            if let t = triggerExpression {
                entry.trigger = try PushTrigger(t, fields: s.fields)
                s.triggerExpression = t
            }
            if let f = notificationFormat {
                entry.template = try NotificationTemplate(f, fields: s.fields)
                s.notificationFormat = f
            }
            s.status = .subscribed
            s.statusTimestamp = SeriesTime.date(state.now)
            entry.subscription = s
            batch.putRaw(PushLayout.subscriptionKey(n), PushRecords.encode(entry))
            let stored = entry
            return (s, { $0.subscriptions[n] = stored })
        }
    }

    /// Deletes a subscription (its merged states too); its notifications already in the outbox stay.
    public func unsubscribe(_ id: String) throws {
        try state.write { m, batch in
            guard let n = PushLayout.number(id, prefix: "S"), let entry = m.subscriptions[n] else {
                throw StrataError.notFound("push subscription \(id.debugDescription)")
            }
            Self.remove(entry, into: &batch)
            return ((), { Self.forget(n, in: &$0) })
        }
    }

    /// Deletes every subscription of a device, or those with exactly `status`; returns how many.
    @discardableResult
    public func unsubscribeAll(device id: String, status: PushSubscription.Status? = nil) throws -> Int {
        try state.write { m, batch in
            let (deviceNumber, _) = try Self.device(id, in: m)
            let doomed = m.subscriptions.values.filter { $0.device == deviceNumber && (status == nil || $0.subscription.status == status) }
            for entry in doomed { Self.remove(entry, into: &batch) }
            let numbers = doomed.map(\.number)
            return (numbers.count, { m in for n in numbers { Self.forget(n, in: &m) } })
        }
    }

    /// The subscriptions of a device (with exactly `status` if given), in id order.
    public func subscriptions(device id: String, status: PushSubscription.Status? = nil) throws -> [PushSubscription] {
        let m = state.model.withLock { $0 }
        let (n, _) = try Self.device(id, in: m)
        return m.subscriptions.values.filter { $0.device == n && (status == nil || $0.subscription.status == status) }
            .sorted { $0.number < $1.number }.map(\.subscription)
    }

    private static func remove(_ entry: PushState.SubscriptionEntry, into batch: inout WriteBatch) {
        batch.deleteRaw(PushLayout.subscriptionKey(entry.number))
        let states = PushLayout.prefix(3, entry.number)
        batch.deleteRangeRaw(states, TupleKey.prefixSuccessor(states) ?? states + [0xFF])
    }

    private static func forget(_ n: UInt64, in m: inout PushState.Model) {
        guard let entry = m.subscriptions.removeValue(forKey: n) else { return }
        for item in Set(entry.subscription.items) {
            let key = PushState.ItemKey(adapter: entry.subscription.dataAdapter, item: item)
            m.byItem[key]?.removeAll { $0 == n }
            if m.byItem[key]?.isEmpty == true { m.byItem[key] = nil }
        }
    }

    // MARK: The outbox

    /// The unacknowledged notifications, oldest first, at most `limit`.
    public func pendingNotifications(limit: Int = 100) throws -> [PushNotification] {
        guard limit >= 1 else { throw StrataError.invalidArgument("pendingNotifications: limit \(limit) must be at least 1") }
        let snapshot = try state.engine.snapshot()
        let prefix = PushLayout.prefix(4)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var result: [PushNotification] = []
        while result.count < limit, try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[prefix.count...])
            guard let id = try? d.nextUInt(), d.isAtEnd else {
                throw StrataError.corrupted(file: "push outbox", offset: 0, reason: "bad key \(TupleKey.describe(key))")
            }
            result.append(try PushRecords.decodeNotification(Array(cursor.value), id: id))
        }
        return result
    }

    /// Removes a notification from the outbox (it was sent). Acknowledging one that is gone
    /// already does nothing.
    public func acknowledge(_ notification: PushNotification) throws {
        var batch = WriteBatch()
        batch.deleteRaw(PushLayout.notificationKey(notification.id))
        try state.engine.commit(CommitBatch(records: batch))
    }
}

extension Store {
    /// The push subscriptions of the store.
    public func pushNotifications(options: PushOptions = PushOptions()) throws -> PushNotifications {
        let state = try collections.state(kind: .push, name: PushState.registryName, as: PushState.self) {
            try PushState(store: self)
        }
        return PushNotifications(state: state, options: options)
    }
}

extension Store {
    /// Starts, at open, what must see every commit from the first: the push subscriptions'
    /// matching, when the store has any subscription, so that an update made before the program
    /// asks for ``pushNotifications(options:)`` still creates its notifications.
    func startParticipants() throws {
        let prefix = PushLayout.prefix(2)
        let cursor = try engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        if try cursor.next() { _ = try pushNotifications() }
    }
}
