import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
        return try state.writer.writeReporting { m, batch, statuses in
            var next = m
            let n: UInt64
            var entry: PushModel.DeviceEntry
            if let existing = m.deviceByKey[device], let e = m.devices[existing] {
                n = existing
                entry = e
                guard entry.suspended else { return (RegisteredDevice(id: PushLayout.deviceID(n), status: .registered, device: device), { _ in }) }
                entry.suspended = false
                statuses.append(.resumed(deviceID: PushLayout.deviceID(n)))
            } else {
                n = try CounterLimit.take(from: &next.nextDevice, "device number")
                entry = PushModel.DeviceEntry(device: device, suspended: false, badge: 0)
                PushWriter.putCounters(next, into: &batch)
            }
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(entry))
            let stored = entry
            return (RegisteredDevice(id: PushLayout.deviceID(n), status: .registered, device: device), { m in
                let resumed = m.devices[n]?.suspended == true
                m.devices[n] = stored
                m.deviceByKey[device] = n
                m.nextDevice = max(m.nextDevice, n + 1)
                if resumed { m.noteWaiting(device: n) }   // its waiting updates come due again
            })
        }
    }

    /// Suspends a device: no notifications are created for it until it registers again (its
    /// updates waiting for a frequency limit stay waiting until then).
    public func suspend(device id: String) throws {
        try state.writer.writeReporting { m, batch, statuses in
            let (n, entry) = try Self.device(id, in: m)
            var changed = entry
            if !entry.suspended { statuses.append(.suspended(deviceID: id)) }
            changed.suspended = true
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(changed))
            let stored = changed
            return ((), { $0.devices[n] = stored })
        }
    }

    /// Gives a device a new token; its subscriptions stay.
    public func updateToken(device id: String, to token: String) throws -> RegisteredDevice {
        try state.writer.write { m, batch in
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
        try state.writer.write { m, batch in
            let (n, entry) = try Self.device(id, in: m)
            var changed = entry
            changed.badge = 0
            batch.putRaw(PushLayout.deviceKey(n), PushRecords.encode(changed))
            let stored = changed
            return ((), { $0.devices[n] = stored })
        }
    }

    static func device(_ id: String, in m: PushModel) throws -> (UInt64, PushModel.DeviceEntry) {
        guard let n = PushLayout.number(id, prefix: "D"), let entry = m.devices[n] else {
            throw StrataError.notFound(kind: .pushDevice, name: id, reason: "push device \(id.debugDescription)")
        }
        return (n, entry)
    }

    // MARK: Subscriptions

    /// In a session, every item needs ``Permission/selectTopic``.
    ///
    /// Subscribes: compiles the format and trigger, stores the subscription with a new id (or,
    /// with `coalescing`, modifies a same-device subscription with the same adapter, items,
    /// fields and trigger), and returns it with status `.subscribed`. Nothing is sent until the
    /// next update. A coalesced subscription keeps its items' merged states, last-sent times and
    /// waiting updates (as many of the newest as its new buffer holds; none when it has no
    /// frequency limit any more).
    public func subscribe(_ subscription: PushSubscription, device id: String, coalescing: Bool = false) throws -> PushSubscription {
        try subscription.validate()
        if let access { for item in subscription.items { try access.require(.selectTopic, item) } }
        let template = try NotificationTemplate(subscription.notificationFormat ?? "", fields: subscription.fields)
        let trigger = try subscription.triggerExpression.map { try PushTrigger($0, fields: subscription.fields) }
        if let t = subscription.triggerExpression, !options.acceptedTriggers.isEmpty {
            guard try PushTrigger.accepts(PushTrigger.normalized(t, fields: subscription.fields), patterns: options.acceptedTriggers) else {
                throw StrataError.invalidArgument(argument: "triggerExpression", reason: "push subscription: the trigger \(t.debugDescription) is not among the accepted triggers")
            }
        }
        let now = SeriesTime.date(state.now)
        return try state.writer.writeReporting { m, batch, statuses in
            let (deviceNumber, _) = try Self.device(id, in: m)
            var next = m
            var number = m.nextSubscription
            var merged: [Int: [String]] = [:]
            var timing: [Int: PushModel.ItemTiming] = [:]
            if coalescing, let existing = m.subscriptions.values.first(where: {
                $0.device == deviceNumber && $0.spec.subscription.dataAdapter == subscription.dataAdapter
                    && $0.spec.subscription.items == subscription.items && $0.spec.subscription.fields == subscription.fields
                    && $0.spec.subscription.triggerExpression == subscription.triggerExpression
            }) {
                number = existing.number
                merged = existing.merged
                timing = existing.timing
                statuses.append(.modified(subscriptionID: PushLayout.subscriptionID(number), deviceID: id))
            } else {
                try CounterLimit.take(from: &next.nextSubscription, "subscription number")
                statuses.append(.subscribed(subscriptionID: PushLayout.subscriptionID(number), deviceID: id))
                PushWriter.putCounters(next, into: &batch)
            }
            var s = subscription
            s.subscriptionID = PushLayout.subscriptionID(number)
            s.status = .subscribed
            s.statusTimestamp = now
            var entry = PushModel.SubscriptionEntry(number: number, device: deviceNumber, subscription: s, template: template,
                                                    trigger: trigger, merged: merged, timing: timing)
            Self.fitWaiting(&entry, into: &batch)
            batch.putRaw(PushLayout.subscriptionKey(number), PushRecords.encode(entry))
            return (s, { m in
                let old = m.subscriptions[number]
                m.subscriptions[number] = entry
                m.noteWaiting(number, old: nil)   // a coalesced subscription keeps its waiting updates
                m.nextSubscription = max(m.nextSubscription, number + 1)
                if old == nil {
                    for key in Set(s.items.map { PushModel.ItemKey(adapter: s.dataAdapter, item: $0) }) {
                        m.byItem[key, default: []].append(number)
                    }
                }
            })
        }
    }

    /// Changes a subscription's trigger and format (nil keeps); a triggered subscription becomes
    /// subscribed again. Waiting updates stay (rendered with the new format when released), unless
    /// the subscription now has a trigger: then they are dropped (a trigger sends at once).
    public func modify(_ id: String, triggerExpression: String?, notificationFormat: String?) throws -> PushSubscription {
        try state.writer.writeReporting { m, batch, statuses in
            guard let n = PushLayout.number(id, prefix: "S"), var entry = m.subscriptions[n] else {
                throw StrataError.notFound(kind: .pushSubscription, name: id, reason: "push subscription \(id.debugDescription)")
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
            Self.fitWaiting(&entry, into: &batch)
            statuses.append(.modified(subscriptionID: id, deviceID: PushLayout.deviceID(entry.device)))
            let stored = entry
            return (s, { m in
                m.subscriptions[n] = stored
                m.noteWaiting(n, old: nil)
            })
        }
    }

    /// Deletes a subscription (its merged states too); its notifications already in the outbox stay.
    public func unsubscribe(_ id: String) throws {
        try state.writer.writeReporting { m, batch, statuses in
            guard let n = PushLayout.number(id, prefix: "S"), let entry = m.subscriptions[n] else {
                throw StrataError.notFound(kind: .pushSubscription, name: id, reason: "push subscription \(id.debugDescription)")
            }
            Self.remove(entry, into: &batch)
            statuses.append(.deleted(subscriptionID: id, deviceID: PushLayout.deviceID(entry.device)))
            return ((), { Self.forget(n, in: &$0) })
        }
    }

    /// Deletes every subscription of a device, or those with exactly `status`; returns how many.
    @discardableResult
    public func unsubscribeAll(device id: String, status: PushSubscription.Status? = nil) throws -> Int {
        try state.writer.writeReporting { m, batch, statuses in
            let (deviceNumber, _) = try Self.device(id, in: m)
            let doomed = m.subscriptions.values.filter { $0.device == deviceNumber && (status == nil || $0.status == status) }
                .sorted { $0.number < $1.number }
            for entry in doomed {
                Self.remove(entry, into: &batch)
                statuses.append(.deleted(subscriptionID: PushLayout.subscriptionID(entry.number), deviceID: id))
            }
            let numbers = doomed.map(\.number)
            return (numbers.count, { m in for n in numbers { Self.forget(n, in: &m) } })
        }
    }

    /// The subscriptions of a device (with exactly `status` if given), in id order.
    public func subscriptions(device id: String, status: PushSubscription.Status? = nil) throws -> [PushSubscription] {
        let m = state.image.model.withLock { $0 }
        let (n, _) = try Self.device(id, in: m)
        return m.subscriptions.values.filter { $0.device == n && (status == nil || $0.status == status) }
            .sorted { $0.number < $1.number }.map(\.subscription)
    }

    /// Holds an entry's waiting updates to what it can keep now: none with a trigger or without a
    /// frequency limit (and no last-sent time either), else the newest its buffer holds; writes
    /// the item states it changes.
    private static func fitWaiting(_ entry: inout PushModel.SubscriptionEntry, into batch: inout WriteBatch) {
        let timed = entry.trigger == nil && entry.subscription.frequencyInterval != nil
        let capacity = entry.subscription.waitingCapacity
        for (item, timing) in entry.timing {
            var fitted = timing
            if !timed {
                fitted = PushModel.ItemTiming()
            } else if fitted.waiting.count > capacity {
                fitted.waiting.removeFirst(fitted.waiting.count - capacity)
            }
            guard fitted != timing else { continue }
            entry.timing[item] = fitted == PushModel.ItemTiming() ? nil : fitted
            batch.putRaw(PushLayout.itemStateKey(entry.number, item), PushRecords.encodeItemState(merged: entry.merged[item], timing: fitted))
        }
    }

    private static func remove(_ entry: PushModel.SubscriptionEntry, into batch: inout WriteBatch) {
        batch.deleteRaw(PushLayout.subscriptionKey(entry.number))
        let states = PushLayout.prefix(3, entry.number)
        batch.deleteRangeRaw(states, TupleKey.prefixSuccessor(states) ?? states + [0xFF])
    }

    private static func forget(_ n: UInt64, in m: inout PushModel) {
        guard let entry = m.subscriptions.removeValue(forKey: n) else { return }
        for item in Set(entry.subscription.items) {
            let key = PushModel.ItemKey(adapter: entry.subscription.dataAdapter, item: item)
            m.byItem[key]?.removeAll { $0 == n }
            if m.byItem[key]?.isEmpty == true { m.byItem[key] = nil }
        }
    }

    // MARK: The outbox

    /// The due, unacknowledged notifications at `clock()`, oldest first, at most `limit`. First
    /// releases the waiting (throttled) updates whose time has come: their notifications are
    /// written to the outbox, in one batch, and returned here too.
    public func pendingNotifications(limit: Int = 100) throws -> [PushNotification] {
        guard limit >= 1 else { throw StrataError.invalidArgument(argument: "limit", reason: "pendingNotifications: limit \(limit) must be at least 1") }
        try state.timer.releaseDue()
        return try Self.outbox(try state.engine.snapshot(), limit: limit)
    }

    /// The notifications in the outbox of `snapshot`, oldest first, at most `limit`.
    static func outbox(_ snapshot: Snapshot, limit: Int) throws -> [PushNotification] {
        let prefix = PushLayout.prefix(4)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var result: [PushNotification] = []
        while result.count < limit, try cursor.next() {
            let id = try PushLayout.number(ofKey: cursor.withKey { Array($0) }, kind: 4)
            result.append(try PushRecords.decodeNotification(Array(cursor.value), id: id))
        }
        return result
    }

    /// Removes a notification from the outbox (it was sent). Acknowledging one that is gone
    /// already does nothing.
    public func acknowledge(_ notification: PushNotification) throws {
        try acknowledge([notification])
    }

    /// Removes notifications from the outbox in one atomic commit (a delivery loop's batched
    /// acknowledgements): after a crash either all of them are gone or none. Acknowledging
    /// notifications that are gone already does nothing; an empty batch commits nothing.
    public func acknowledge(_ notifications: [PushNotification]) throws {
        guard !notifications.isEmpty else { return }
        var batch = WriteBatch()
        for n in notifications { batch.deleteRaw(PushLayout.notificationKey(n.id)) }
        try state.engine.commit(CommitBatch(records: batch))
    }

    /// The outbox as a stream: first every pending due notification (releasing the waiting
    /// updates whose time has come), then each new one as it commits, oldest first. Notifications
    /// stay in the outbox until ``acknowledge(_:)``, so a stream made after a reopen yields the
    /// unacknowledged ones again (at least once). While a stream is open, a timer releases
    /// waiting updates as they come due, deciding on `StoreOptions.clock`. The stream ends by
    /// throwing ``StrataError/closed`` when the store closes, or
    /// ``StrataError/subscriberOverflow(_:)`` when its consumer falls more than `bufferSize`
    /// notifications behind.
    public func notifications(bufferSize: Int = 4_096) -> AsyncThrowingStream<PushNotification, any Error> {
        do {
            guard bufferSize >= 1 else { throw StrataError.invalidArgument(argument: "bufferSize", reason: "notifications: buffer size \(bufferSize) must be at least 1") }
            try state.timer.releaseDue()
            let broadcaster = state.broadcaster
            let engine = state.engine
            // Every commit that adds notifications holds the turnstile until it is visible and queued
            // for delivery: holding it here, none is half-way between the snapshot and the stream.
            let pass = state.image.turnstile.enter()
            defer { pass.leave() }
            let stream = try broadcaster.synchronized {
                let snapshot = try engine.snapshot()
                return try broadcaster.subscribe(
                    after: snapshot.sequence, buffering: .bounded(bufferSize),
                    initial: { try Self.outbox(snapshot, limit: .max) },
                    overflow: { "push notifications: a subscriber fell more than \(bufferSize) notifications behind" }
                ) { commit in
                    commit.changes.flatMap { ($0 as? NotificationsAdded)?.notifications ?? [] }
                }
            }
            state.timer.start()
            return stream
        } catch {
            return Self.failed(error)
        }
    }

    /// A stream that ends at once by throwing `error` (how a stream reports a failed start).
    static func failed<Element>(_ error: any Error) -> AsyncThrowingStream<Element, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Element, any Error>.makeStream()
        continuation.finish(throwing: error)
        return stream
    }

    /// The status changes of subscriptions and devices from now on, as Lightstreamer's MPN
    /// delegates report them, in commit order: a subscription subscribed, triggered, modified
    /// or deleted; a device suspended or resumed. Ends like ``notifications(bufferSize:)``.
    public func statusChanges(bufferSize: Int = 4_096) -> AsyncThrowingStream<PushStatusChange, any Error> {
        do {
            guard bufferSize >= 1 else { throw StrataError.invalidArgument(argument: "bufferSize", reason: "statusChanges: buffer size \(bufferSize) must be at least 1") }
            let broadcaster = state.broadcaster
            let engine = state.engine
            let pass = state.image.turnstile.enter()
            defer { pass.leave() }
            return try broadcaster.synchronized {
                try broadcaster.subscribe(
                    after: try engine.snapshot().sequence, buffering: .bounded(bufferSize),
                    overflow: { "push status changes: a subscriber fell more than \(bufferSize) changes behind" }
                ) { commit in
                    commit.changes.flatMap { ($0 as? PushStatusChanged)?.changes ?? [] }
                }
            }
        } catch {
            return Self.failed(error)
        }
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
