import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The store-wide source of timetokens (one per open store): strictly increasing whatever the
/// clock does.
///
/// `allocate(n)` returns the first of `n` consecutive timetokens starting at
/// `max(clock now, last + 1)`, so two publishes in the same 100 ns, or after the clock went back,
/// still get increasing timetokens. `last` starts at the largest timetoken the store has persisted
/// (the channel heads of FORMAT.md §15), so a reopen never hands one out again.
final class TimetokenClock: Sendable {
    private let clock: @Sendable () -> Date
    /// The last timetoken handed out, and the largest clock reading seen.
    private let state: Mutex<(last: UInt64, seen: UInt64)>

    init(clock: @escaping @Sendable () -> Date, last: UInt64) {
        self.clock = clock
        self.state = Mutex((last, last))
    }

    /// The first of `count` (≥ 1) new consecutive timetokens.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` in the (theoretical) case that the range
    ///   would pass `UInt64.max`.
    func allocate(_ count: Int) throws -> UInt64 {
        let reading = Timetoken(date: clock()).rawValue
        return try state.withLock { state in
            let (next, overflow) = state.last.addingReportingOverflow(1)
            let first = max(reading, next)
            let (last, past) = first.addingReportingOverflow(UInt64(count - 1))
            guard !overflow, !past else {
                throw StrataError.invalidArgument(argument: "timetoken", reason: "timetokens are exhausted (the last one is \(state.last))")
            }
            state.last = last
            state.seen = max(state.seen, reading)
            return first
        }
    }

    /// "Now" as a timetoken for retention: the largest of the clock, every earlier reading, and
    /// the last timetoken handed out — so it never goes back while the store is open.
    func now() -> UInt64 {
        let reading = Timetoken(date: clock()).rawValue
        return state.withLock { state in
            state.seen = max(state.seen, reading)
            return max(state.seen, state.last)
        }
    }

    /// The last timetoken handed out.
    var last: UInt64 { state.withLock { $0.last } }
}
