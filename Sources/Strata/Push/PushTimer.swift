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
        image.model.withLock { m in
            guard m.mayWait else { return nil }
            let staging = PushStaging(m, now: 0)
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
        guard let earliest = nextDue(), earliest <= image.now else { return 0 }
        let pass = image.turnstile.enter()
        defer { pass.leave() }
        let m = image.model.withLock { $0 }
        var staging = PushStaging(m, now: image.now)
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
        image.model.withLock { staged.apply(&$0) }
        return released
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
