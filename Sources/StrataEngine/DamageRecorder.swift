import Dispatch
import Foundation
import Logging
import Synchronization
@_spi(Layers) import StrataFormat

/// Where background work reports the damage it meets (``BackgroundDamage``), one per engine: the
/// one policy for what no caller is there to be told of. Background work never drops what it
/// cannot read and never swallows an error: it keeps the data (a record is copied through as it
/// is) or tries again later (the push timer), and records the damage here, which counts it (in
/// all and by ``DamageComponent``) for ``StoreStatistics``, keeps the latest
/// ``recentLimit``, and logs it at `.error` (``StoreOptions/logger``).
///
/// Logging is limited per component, so that damage met on every wake-up of a timer or by every
/// compaction does not flood the log: the first occurrence is logged, then at most one message
/// per `logInterval`, which says how many occurrences went unlogged since the last one. The
/// counts are exact whatever is logged.
package final class DamageRecorder: Sendable {
    /// How many of the latest damages ``StoreStatistics/recentDamage`` keeps.
    package static let recentLimit = 16

    private struct State {
        var total: UInt64 = 0
        var byComponent: [DamageComponent: UInt64] = [:]
        /// Oldest first, at most `recentLimit`.
        var recent: [BackgroundDamage] = []
        /// When each component last logged (uptime, ns), and what it met since without logging.
        var lastLogged: [DamageComponent: UInt64] = [:]
        var unlogged: [DamageComponent: UInt64] = [:]
    }

    private let state = Mutex(State())
    private let log: EngineLog
    private let logInterval: UInt64
    private let uptime: @Sendable () -> UInt64

    /// A recorder logging to `log`, each component at most once per `logInterval` after its first
    /// message; `uptime` (nanoseconds, monotonic) measures that interval.
    package init(log: EngineLog, logInterval: Duration = .seconds(60),
                 uptime: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.log = log
        let (seconds, attoseconds) = logInterval.components
        self.logInterval = UInt64(max(seconds, 0)) &* 1_000_000_000 &+ UInt64(max(attoseconds, 0) / 1_000_000_000)
        self.uptime = uptime
    }

    /// Records `error`, met by `component` at `subject` (a file or a key, where known).
    /// ``StrataError/closed`` is not damage (work stopped by close) and is not recorded.
    package func record(_ component: DamageComponent, at subject: String? = nil, _ error: StrataError) {
        if error == .closed { return }
        let damage = BackgroundDamage(component: component, subject: subject, error: error, date: Date())
        let now = uptime()
        let logged: (count: UInt64, unlogged: UInt64)? = state.withLock { s in
            s.total += 1
            s.byComponent[component, default: 0] += 1
            s.recent.append(damage)
            if s.recent.count > Self.recentLimit { s.recent.removeFirst(s.recent.count - Self.recentLimit) }
            if let last = s.lastLogged[component], now &- last < logInterval {
                s.unlogged[component, default: 0] += 1
                return nil
            }
            s.lastLogged[component] = now
            return (s.byComponent[component]!, s.unlogged.removeValue(forKey: component) ?? 0)
        }
        guard let logged else { return }
        var metadata: Logger.Metadata = [
            "component": "\(component)", "error": "\(error)", "count": "\(logged.count)",
            "unlogged": "\(logged.unlogged)",
        ]
        if let subject { metadata["subject"] = "\(subject)" }
        log(.error, "Background work met damage: it kept what it could not read and goes on; counted in the store's statistics",
            metadata)
    }

    /// Damages recorded: in all, by component, and the latest (oldest first).
    package var counts: (total: UInt64, byComponent: [DamageComponent: UInt64], recent: [BackgroundDamage]) {
        state.withLock { ($0.total, $0.byComponent, $0.recent) }
    }

    /// ``record(_:at:_:)`` bound to `component`, for work that reports damage without knowing its
    /// name (a ``RecordRewriter``).
    package func reporter(for component: DamageComponent) -> DamageReporter {
        DamageReporter(recorder: self, component: component)
    }
}

/// A ``DamageRecorder`` bound to one component: what a ``RecordRewriter`` is given.
package struct DamageReporter: Sendable {
    /// The recorder reported to.
    package let recorder: DamageRecorder
    /// The component every report names.
    package let component: DamageComponent

    /// Records `error` met at `subject` (a file or a key, where known).
    package func callAsFunction(_ error: StrataError, at subject: String?) {
        recorder.record(component, at: subject, error)
    }
}
