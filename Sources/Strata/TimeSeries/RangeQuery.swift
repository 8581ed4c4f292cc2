import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A query of a time series' retained events: a view, an anchor, a span and an optional limit.
///
/// ```swift
/// let last100 = try prices.query(RangeQuery.values.fromLast(100))
/// let window = try prices.query(RangeQuery.values.from(start).next(.seconds(60)))
/// let history = try prices.query(RangeQuery.edits(.all).from(sequence: 10).to(sequence: 20))
/// ```
///
/// ## Views
/// - ``values``: the merged view, one event per retained original in sequence order, each
///   replaced by its latest edit (an edited original appears as that edit event, with
///   ``Event/originalEvent`` set). Edits of originals that are no longer retained do not appear.
/// - ``edits(_:)`` with ``EditSelection/all``: every retained event, originals and edits, in
///   sequence order; with ``EditSelection/latest``: originals plus only the latest edit of each.
///
/// ## Positions
/// The selected events form one contiguous stretch of the view. Anchor and span are inclusive:
/// a point that falls on an event includes it. ``fromStart()`` is a point before the first event,
/// the end a point after the last; ``from(sequence:)`` falls on event `s` (or, when the view has no
/// event `s`, between the events below and above it); ``from(_:)-(Date)`` falls on every event
/// with exactly that timestamp (or between events); ``fromLast(_:)-(Int)`` falls on the `n`-th
/// event from the end. Counts are of the view's events: originals for ``values``, events of any
/// kind for edit views. A span may run backwards from its anchor (``previous(_:)-(Int)``,
/// ``toStart()``, or a ``to(sequence:)`` below the anchor); events always come in sequence order.
/// A span whose end (``to(_:)-(Date)``, ``untilLast(_:)-(Duration)``, or any other) reaches the
/// anchor's first event or beyond runs forward, to the end's last event; otherwise it runs
/// backwards, from the end's first event to the anchor's last. So a span that ends on a
/// timestamp the anchor's event shares runs forward over the rest of the events with that
/// timestamp: with three events at time `T`, `fromLast(2).untilLast(.zero)` and
/// `from(sequence: 1).to(T)` both select events 1 and 2.
///
/// Durations run from the anchor's time (the timestamp it falls on; for a point between events,
/// the next event's), or, for ``fromLast(_:)-(Duration)`` and ``untilLast(_:)-(Duration)``, back
/// from the latest event's timestamp. In the ``values`` view an event's time is its original's.
///
/// Counts and durations must not be negative, and a date must be a number (not NaN):
/// ``TimeSeries/query(_:)`` throws ``StrataError/invalidArgument(argument:reason:)`` naming the argument for
/// them. Every other value is accepted, however large: a count or duration beyond the retained
/// events reaches the end (or the start) of the series — `next(Int.max)` and
/// `next(.seconds(Int64.max))` run to the end, `untilLast(Int.max)` and
/// `fromLast(.seconds(Int64.max))` reach before the first event — and a date before or after
/// every event (`Date.distantPast`, `Date(timeIntervalSince1970: 1e300)`, `±infinity`) is a point
/// before the first or after the last one.
public struct RangeQuery: Sendable, Hashable {
    /// Which events of an edit view appear.
    public enum EditSelection: Sendable, Hashable {
        /// Originals and all their edits.
        case all
        /// Originals and only the latest edit of each.
        case latest
    }

    enum View: Hashable, Sendable {
        case values
        case allEdits
        case latestEdits
    }

    enum Anchor: Hashable, Sendable {
        case start
        case sequence(UInt64)
        case date(Date)
        case last(Int)
        case lastDuration(Duration)
    }

    enum Span: Hashable, Sendable {
        case untilLast(Int)
        case untilLastDuration(Duration)
        case toSequence(UInt64)
        case toDate(Date)
        case toStart
        case next(Int)
        case nextDuration(Duration)
        case previous(Int)
        case previousDuration(Duration)
    }

    let view: View
    private(set) var anchor: Anchor = .start
    private(set) var span: Span = .untilLast(0)
    private(set) var limitCount: Int?

    private init(view: View) { self.view = view }

    /// The merged view: each retained original replaced by its latest edit.
    public static let values = RangeQuery(view: .values)

    /// The unmerged view: originals with all their edits, or with only the latest edit of each.
    public static func edits(_ selection: EditSelection) -> RangeQuery {
        RangeQuery(view: selection == .all ? .allEdits : .latestEdits)
    }

    private func with(_ change: (inout RangeQuery) -> Void) -> RangeQuery {
        var copy = self
        change(&copy)
        return copy
    }

    // MARK: Anchors

    /// Anchors the range before the first event (the default).
    public func fromStart() -> RangeQuery { with { $0.anchor = .start } }
    /// Anchors the range on the event with sequence number `sequence`.
    public func from(sequence: UInt64) -> RangeQuery { with { $0.anchor = .sequence(sequence) } }
    /// Anchors the range at a time: on the events with that timestamp, or between events.
    public func from(_ date: Date) -> RangeQuery { with { $0.anchor = .date(date) } }
    /// Anchors the range on the `count`-th event from the end (0: after the last event).
    public func fromLast(_ count: Int) -> RangeQuery { with { $0.anchor = .last(count) } }
    /// Anchors the range at the latest event's timestamp minus `duration`.
    public func fromLast(_ duration: Duration) -> RangeQuery { with { $0.anchor = .lastDuration(duration) } }

    // MARK: Spans

    /// Ends the range `count` events before the end: all but the last `count` (0, the default: to
    /// the end).
    public func untilLast(_ count: Int) -> RangeQuery { with { $0.span = .untilLast(count) } }
    /// Ends the range at the latest event's timestamp minus `duration`.
    public func untilLast(_ duration: Duration) -> RangeQuery { with { $0.span = .untilLastDuration(duration) } }
    /// Ends the range on the event with sequence number `sequence` (before the anchor: backwards).
    public func to(sequence: UInt64) -> RangeQuery { with { $0.span = .toSequence(sequence) } }
    /// Ends the range at a time: forward to the last event with that timestamp when the time is
    /// the anchor's or later, else backwards to the first event at or after it.
    public func to(_ date: Date) -> RangeQuery { with { $0.span = .toDate(date) } }
    /// Ends the range at the start: from the anchor back to the first event.
    public func toStart() -> RangeQuery { with { $0.span = .toStart } }
    /// Ends the range `count` events after the anchor.
    public func next(_ count: Int) -> RangeQuery { with { $0.span = .next(count) } }
    /// Ends the range `duration` after the anchor's time.
    public func next(_ duration: Duration) -> RangeQuery { with { $0.span = .nextDuration(duration) } }
    /// Ends the range `count` events before the anchor.
    public func previous(_ count: Int) -> RangeQuery { with { $0.span = .previous(count) } }
    /// Ends the range `duration` before the anchor's time.
    public func previous(_ duration: Duration) -> RangeQuery { with { $0.span = .previousDuration(duration) } }

    // MARK: Limit

    /// Returns at most `count` events: when the range selects more, the last `count` of them
    /// (highest sequence numbers). ``QueryResult/selectedCount`` still counts all.
    public func limit(_ count: Int) -> RangeQuery { with { $0.limitCount = count } }

    /// Milliseconds beyond every stored timestamp (they lie within ±``SeriesTime/limit``): what a
    /// larger duration or a date further out is clamped to, so that the evaluation's sums of a
    /// timestamp and a duration never overflow.
    static let clampedMilliseconds: Int64 = 1 << 60

    /// Whole milliseconds of a query's duration, clamped to ``clampedMilliseconds``; nil if negative.
    static func milliseconds(_ duration: Duration) -> Int64? {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return nil }
        if seconds >= clampedMilliseconds / 1000 { return clampedMilliseconds }
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole milliseconds since 1970 of a query's date, clamped to ±``clampedMilliseconds``; nil
    /// for NaN.
    static func milliseconds(_ date: Date) -> Int64? {
        let t = date.timeIntervalSince1970
        if t.isNaN { return nil }
        if let ms = SeriesTime.milliseconds(date) { return ms }
        return t < 0 ? -clampedMilliseconds : clampedMilliseconds
    }

    /// Throws ``StrataError/invalidArgument(argument:reason:)`` for negative counts or durations and NaN dates.
    func validate() throws {
        func count(_ n: Int, _ what: String) throws {
            if n < 0 { throw StrataError.invalidArgument(argument: "query", reason: "RangeQuery \(what) count \(n) is negative") }
        }
        func duration(_ d: Duration, _ what: String) throws {
            if Self.milliseconds(d) == nil {
                throw StrataError.invalidArgument(argument: "query", reason: "RangeQuery \(what) duration \(d) is negative")
            }
        }
        func date(_ d: Date, _ what: String) throws {
            if Self.milliseconds(d) == nil {
                throw StrataError.invalidArgument(argument: "query", reason: "RangeQuery \(what) date is not a number (NaN)")
            }
        }
        switch anchor {
        case .start, .sequence: break
        case .date(let d): try date(d, "from")
        case .last(let n): try count(n, "fromLast")
        case .lastDuration(let d): try duration(d, "fromLast")
        }
        switch span {
        case .untilLast(let n): try count(n, "untilLast")
        case .untilLastDuration(let d): try duration(d, "untilLast")
        case .toSequence, .toStart: break
        case .toDate(let d): try date(d, "to")
        case .next(let n): try count(n, "next")
        case .nextDuration(let d): try duration(d, "next")
        case .previous(let n): try count(n, "previous")
        case .previousDuration(let d): try duration(d, "previous")
        }
        if let limitCount { try count(limitCount, "limit") }
    }
}
