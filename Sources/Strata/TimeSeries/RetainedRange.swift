@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Which events a time series keeps: everything, the last `n`, those of the last `duration`, or
/// both limits at once.
///
/// Time is measured back from the **latest event's timestamp**, not from the wall clock: a series
/// that receives nothing keeps what it has. An event is retained while it is among the last
/// `count` events (originals and edits alike) and its timestamp is at least the latest event's
/// timestamp minus `duration`. The latest event is always retained.
///
/// ```swift
/// let options = TimeSeriesOptions(retainedRange: .limit(10_000, last: .seconds(3_600)))
/// ```
///
/// Retention is exact: from the append that pushes an event out, no query, ``TimeSeries/latest()``
/// or subscription shows it again. Its space comes back when compaction next meets it.
public struct RetainedRange: Sendable, Hashable, CustomStringConvertible {
    /// The most events kept, or nil for no count limit.
    public let count: Int?
    /// How far back from the latest event's timestamp events are kept, or nil for no time limit.
    public let duration: Duration?

    private init(count: Int?, duration: Duration?) {
        self.count = count
        self.duration = duration
    }

    /// Keep every event (the default).
    public static let all = RetainedRange(count: nil, duration: nil)

    /// Keep the last `count` events (`count` ≥ 1).
    public static func limit(_ count: Int) -> RetainedRange { RetainedRange(count: count, duration: nil) }

    /// Keep the events whose timestamp is at least the latest event's minus `duration` (≥ 0).
    public static func last(_ duration: Duration) -> RetainedRange { RetainedRange(count: nil, duration: duration) }

    /// Keep only events that satisfy both limits.
    public static func limit(_ count: Int, last duration: Duration) -> RetainedRange {
        RetainedRange(count: count, duration: duration)
    }

    public var description: String {
        switch (count, duration) {
        case (nil, nil): return "all"
        case let (n?, nil): return "limit \(n)"
        case let (nil, d?): return "last \(SeriesTime.milliseconds(d) ?? -1) ms"
        case let (n?, d?): return "limit \(n), last \(SeriesTime.milliseconds(d) ?? -1) ms"
        }
    }

    /// Throws ``StrataError/invalidArgument(argument:reason:)`` for a count below 1 or a negative duration.
    func validate() throws {
        if let count, count < 1 {
            throw StrataError.invalidArgument(argument: "retainedRange", reason: "retainedRange count \(count) is below 1")
        }
        if let duration, SeriesTime.milliseconds(duration) == nil {
            throw StrataError.invalidArgument(argument: "retainedRange", reason: "retainedRange duration \(duration) is negative or too large")
        }
    }
}
