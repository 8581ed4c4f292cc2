@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The commit participant of push subscriptions: it matches each committed update of a
/// subscribed item (a change conforming to ``PushItemUpdates``) against the item's subscriptions
/// and adds what follows — outbox rows, item states, triggered statuses, counters — to the same
/// batch, so that they exist if and only if the update does.
final class PushMatcher: CommitParticipant {
    let image: PushImage

    init(image: PushImage) {
        self.image = image
    }

    /// Only writes of subscribed items need describing: a series or channel nobody subscribes to
    /// commits without building its changes for push (API.md: no cost where nothing listens).
    func wantsChanges(of kind: CollectionKind, name: String) -> Bool {
        guard let adapter = StoreCollections.pushAdapter(of: kind) else { return false }
        return image.model.withLock { $0.byItem[PushModel.ItemKey(adapter: adapter, item: name)] != nil }
    }

    /// One update of an item: its fields by name, computed when first needed.
    private struct Update {
        let key: PushModel.ItemKey
        let fields: () throws -> [String: String]
    }

    func prepare(_ batch: inout CommitBatch) throws {
        guard image.subscriptionCount.load(ordering: .relaxed) > 0, !batch.changes.isEmpty else { return }
        let updates = image.model.withLock { m in Self.updates(in: batch.changes, subscribed: m.byItem) }
        guard !updates.isEmpty else { return }
        let pass = image.turnstile.enter()
        do {
            let staged = try image.model.withLock { m in try stage(updates, m) }
            guard !staged.records.isEmpty else {
                pass.leave()
                return
            }
            for (key, value) in staged.records { batch.records.putRaw(key, value) }
            if !staged.notifications.isEmpty { batch.changes.append(NotificationsAdded(notifications: staged.notifications)) }
            if !staged.statuses.isEmpty { batch.changes.append(PushStatusChanged(changes: staged.statuses)) }
            let apply = staged.apply
            batch.onVisible.append { [image] _ in
                image.model.withLock { apply(&$0) }
                pass.leave()
            }
            batch.onAbort.append { pass.leave() }
        } catch {
            pass.leave()
            throw error
        }
    }

    /// The updates of subscribed items among `changes`, in order.
    private static func updates(in changes: [any CommitChange], subscribed: [PushModel.ItemKey: [UInt64]]) -> [Update] {
        var result: [Update] = []
        for case let change as any PushItemUpdates in changes {
            let key = PushModel.ItemKey(adapter: change.pushAdapter, item: change.pushItem)
            guard subscribed[key] != nil else { continue }
            for fields in change.pushUpdates() { result.append(Update(key: key, fields: fields)) }
        }
        return result
    }

    /// The records and the model change of matching `updates` against `m`.
    ///
    /// Each matched subscription is copied into the staging once per batch and then changed in
    /// place (its merged states, timing, status), so that an update costs no copy of its entry.
    private func stage(_ updates: [Update], _ m: PushModel) throws -> PushStaging.Staged {
        var staging = PushStaging(m, now: image.now)
        for update in updates {
            guard let numbers = m.byItem[update.key] else { continue }
            var fields: [String: String]?
            for n in numbers {
                if staging.subscriptions[n] == nil {
                    guard let e = m.subscriptions[n] else { continue }
                    staging.subscriptions[n] = e
                }
                // One read of the entry per update (a dictionary read copies the whole entry).
                guard let e = staging.subscriptions[n], e.status != .triggered,
                      let itemIndex = e.spec.subscription.items.firstIndex(of: update.key.item),
                      let device = staging.devices[e.device] ?? m.devices[e.device], !device.suspended else { continue }
                let sub = e.spec.subscription
                let updateFields = try fields ?? update.fields()
                fields = updateFields
                let values: [String]
                switch sub.mode {
                case .merge:
                    values = staging.merge(updateFields, names: sub.fields, subscription: n, item: itemIndex)
                    staging.changedStates.insert(PushStaging.StateKey(subscription: n, item: itemIndex))
                case .distinct:
                    values = sub.fields.map { updateFields[$0] ?? "" }
                }
                let emitting = PushStaging.Emitter(subscription: n, device: e.device, template: e.template,
                                               id: PushLayout.subscriptionID(n), item: update.key.item)
                if let trigger = e.trigger {
                    // Triggered notifications ignore the frequency limit.
                    guard trigger.evaluate(values) else { continue }
                    staging.subscriptions[n]!.status = .triggered
                    staging.subscriptions[n]!.statusTime = staging.now
                    staging.subscriptions[n]!.hasStatusTime = true
                    staging.changedSubscriptions.insert(n)
                    staging.statuses.append(.triggered(subscriptionID: emitting.id, deviceID: PushLayout.deviceID(e.device)))
                    staging.emit(values, emitting)
                    continue
                }
                guard let interval = e.spec.frequencyInterval else {
                    staging.emit(values, emitting)
                    continue
                }
                // Whatever became due before this update is released first, as the timer would have.
                staging.releaseDue(subscription: n, item: itemIndex, interval: interval)
                staging.changedStates.insert(PushStaging.StateKey(subscription: n, item: itemIndex))
                var timing = staging.subscriptions[n]!.timing.removeValue(forKey: itemIndex) ?? PushModel.ItemTiming()
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
}
