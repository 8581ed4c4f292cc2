@_spi(Layers) import StrataFormat

/// The one rule for every number a store hands out from a counter — sequence numbers, file
/// numbers, push device, subscription and notification numbers, change-feed sequences — and for
/// every "largest stored number + 1" a loader derives a counter from (FORMAT.md 2, "Limit").
///
/// A reader refuses a stored number above ``max`` (2⁶³ − 1) as corruption, so that the number
/// after it, at most 2⁶³, never overflows. A writer refuses, with
/// ``StrataError/invalidArgument(argument:reason:)`` and before anything is written, to hand out a number the
/// reader would refuse: so a store at its limit stays readable instead of holding records that
/// brick it.
package enum CounterLimit {
    /// The largest number a reader accepts in a stored counter or key (2⁶³ − 1).
    package static let max: UInt64 = LogFormat.maxCounter

    /// The number after `n`, the largest stored number of `what` (a key's number, a replayed
    /// sequence): corruption in `file` at `offset` when `n` exceeds ``max``.
    package static func next(after n: UInt64, _ what: @autoclosure () -> String,
                             file: @autoclosure () -> String, offset: Int = 0) throws -> UInt64 {
        guard n <= max else {
            throw StrataError.corrupted(file: file(), offset: offset,
                                        reason: "\(what()) \(n) exceeds the limit \(max)")
        }
        return n + 1
    }

    /// A stored counter that holds the next number to give (`what`): at most ``max`` + 1 (every
    /// number given). Corruption in `file` at `offset` otherwise.
    package static func checkNext(_ next: UInt64, _ what: @autoclosure () -> String,
                                  file: @autoclosure () -> String, offset: Int = 0) throws -> UInt64 {
        guard next <= max + 1 else {
            throw StrataError.corrupted(file: file(), offset: offset,
                                        reason: "\(what()) \(next) exceeds the limit \(max + 1)")
        }
        return next
    }

    /// Takes `count` numbers of `what` from `next` (the next number to give) and returns the
    /// first; `next` then follows the last. Refuses with ``StrataError/invalidArgument(argument:reason:)``,
    /// changing nothing, when the last number would exceed `last` (``max`` unless a counter stored
    /// after it must itself stay within ``max``, as the manifest's `nextFileNumber` does).
    @discardableResult
    package static func take(_ count: UInt64 = 1, from next: inout UInt64, _ what: @autoclosure () -> String,
                             last: UInt64 = max) throws -> UInt64 {
        guard count > 0 else { return next }
        guard next <= last, count - 1 <= last - next else {
            throw StrataError.invalidArgument(argument: what(), reason:
                "no \(what()) is left: \(count) more from \(next) would pass the limit \(last) (FORMAT.md 2, \"Limit\")")
        }
        let first = next
        next += count
        return first
    }
}
