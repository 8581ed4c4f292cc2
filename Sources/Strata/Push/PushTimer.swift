import Dispatch
import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Delivers the updates that a frequency limit keeps waiting: releases those due by the store's
/// clock as notifications, in batches through the turnstile, from a timer that the first
/// ``PushNotifications/notifications(bufferSize:)`` stream starts and the store's close cancels.
final class PushTimer: Sendable {
    let image: PushImage
    let engine: Engine
    /// The timer that releases waiting updates when they become due, once started.
    let source = Mutex<(any DispatchSourceTimer)?>(nil)

    init(image: PushImage, engine: Engine) {
        self.image = image
        self.engine = engine
    }

    /// Stops the timer (at close, or when the store fails).
    func cancel() {
        source.withLock { $0?.cancel() }
    }

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
        image.model.withLock { $0.nextDue() }
    }

    /// Releases up to ``releaseBatchLimit`` due updates in one batch, each item's in order and the
    /// items by due time: the due items are taken from the model's ``PushDueIndex`` (put back if
    /// the commit fails), and each item's next due time goes back in with the commit.
    private func releaseBatch() throws -> Int {
        guard let earliest = nextDue(), earliest <= image.now else { return 0 }
        let pass = image.turnstile.enter()
        defer { pass.leave() }
        let now = image.now
        let taken = image.model.withLock { m in
            var taken: [PushDueIndex.Entry] = []
            while taken.count < Self.releaseBatchLimit, m.nextDue().map({ $0 <= now }) == true, let top = m.due.popMin() {
                taken.append(top)
            }
            return taken
        }
        // The staging and its copy of the model (a temporary, never bound; the turnstile keeps
        // the model as it is) end with `stage`, before the model changes: the change then copies
        // none of the model's tables.
        let release: (staged: PushStaging.Staged, leftover: [PushDueIndex.Entry], released: Int)?
        do {
            release = try Self.stage(taken, image.model.withLock { $0 }, now: now)
        } catch {
            image.model.withLock { m in for e in taken { m.due.insert(e) } }
            throw error
        }
        guard let release else {
            image.model.withLock { m in for e in taken { m.due.insert(e) } }
            return 0
        }
        do {
            var batch = CommitBatch(records: WriteBatch())
            for (key, value) in release.staged.records { batch.records.putRaw(key, value) }
            batch.changes.append(NotificationsAdded(notifications: release.staged.notifications))
            try engine.commit(batch)
        } catch {
            image.model.withLock { m in for e in taken { m.due.insert(e) } }
            throw error
        }
        image.model.withLock { m in
            release.staged.apply(&m)
            for e in release.leftover { m.due.insert(e) }
        }
        return release.released
    }

    /// Releases the `taken` items' due updates against `base`, one per item and turn in due order,
    /// up to ``releaseBatchLimit``: what to commit, the entries not reached (still due), and how
    /// many were released; nil when none was.
    private static func stage(_ taken: [PushDueIndex.Entry], _ base: PushModel, now: Int64) throws
        -> (staged: PushStaging.Staged, leftover: [PushDueIndex.Entry], released: Int)? {
        var staging = PushStaging(base, now: now)
        var due = PushDueIndex()
        for e in taken { due.insert(e) }
        var released = 0
        while released < releaseBatchLimit, let top = due.popMin() {
            guard let interval = (staging.subscriptions[top.subscription] ?? base.subscriptions[top.subscription])?.spec.frequencyInterval else { continue }
            released += staging.releaseDue(subscription: top.subscription, item: top.item, interval: interval, limit: 1)
            if let next = staging.due(subscription: top.subscription, item: top.item), next <= now {
                due.insert(PushDueIndex.Entry(due: next, subscription: top.subscription, item: top.item))
            }
        }
        guard released > 0 else { return nil }
        return (try staging.finish(base), due.heap, released)
    }

    /// Starts the timer that releases waiting updates when due (once per store): it wakes up
    /// every `period` of real time on a queue of its own (not the cooperative pool, which callers
    /// may keep busy) and releases what has come due by the clock, so a fake clock is honoured.
    func start(period: DispatchTimeInterval = .milliseconds(100)) {
        source.withLock { source in
            guard source == nil else { return }
            let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "strata.push.timer"))
            t.schedule(deadline: .now() + period, repeating: period)
            t.setEventHandler { [weak self] in
                // A failure is retried at the next wake-up, and recorded as damage (a failed
                // engine's own error is reported to the streams); close cancels the timer.
                guard let self else { return }
                do { _ = try releaseDue() } catch {
                    engine.recordDamage(.pushTimer, Engine.strataError(error, path: engine.directory, operation: "push timer"))
                }
            }
            t.resume()
            source = t
        }
    }
}
