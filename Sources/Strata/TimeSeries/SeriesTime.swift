import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Milliseconds, the unit time series store time in (FORMAT.md §14).
enum SeriesTime {
    /// The largest magnitude accepted: ±2^53 ms (beyond that Double loses whole milliseconds).
    static let limit: Int64 = 1 << 53

    /// Whole milliseconds since 1970 of `date`, truncated toward the past; nil out of range.
    /// A date made by ``date(_:)`` maps back to the same number.
    static func milliseconds(_ date: Date) -> Int64? {
        let t = date.timeIntervalSince1970 * 1000
        guard t.isFinite, abs(t) < Double(limit) else { return nil }
        let nearest = t.rounded()
        // Within a microsecond of a whole millisecond: that millisecond (a Date made from whole
        // milliseconds may come back a hair below it).
        if abs(t - nearest) < 0.001 { return Int64(nearest) }
        return Int64(t.rounded(.down))
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// `t − duration`, clamped to `Int64` (the earliest time an event within `duration` of `t` may
    /// have). A stored latest timestamp is the base plus a delta modulo 2⁶⁴ (§14.2), so in a
    /// damaged file it may be near `Int64.min`: the difference must clamp, not trap.
    static func minus(_ t: Int64, _ duration: Int64) -> Int64 {
        let (r, overflow) = t.subtractingReportingOverflow(duration)
        return overflow ? (duration > 0 ? .min : .max) : r
    }

    /// Whole milliseconds of a non-negative duration (truncated); nil if negative or huge.
    static func milliseconds(_ duration: Duration) -> Int64? {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0, seconds < limit / 1000 else { return nil }
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
