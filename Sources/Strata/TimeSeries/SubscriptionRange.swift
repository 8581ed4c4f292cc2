@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The events a new subscriber receives before live events (see ``TimeSeries/subscribe()``).
///
/// The range is evaluated as a ``RangeQuery/edits(_:)`` query with ``RangeQuery/EditSelection/latest``
/// (originals plus only the latest edit of each) over the retained events:
/// ``latest`` is the latest event if there is one, ``limit(_:)`` the last `n` events of that view,
/// ``last(_:)`` those whose timestamp is at least the latest event's minus `duration`.
public struct SubscriptionRange: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case latest
        case none
        case limit(Int)
        case last(Duration)
    }

    let kind: Kind

    /// The latest event, if any (the default).
    public static let latest = SubscriptionRange(kind: .latest)
    /// No past events: live events only.
    public static let none = SubscriptionRange(kind: .none)
    /// The last `count` events (`count` ≥ 0).
    public static func limit(_ count: Int) -> SubscriptionRange { SubscriptionRange(kind: .limit(count)) }
    /// The events of the last `duration`, measured back from the latest event's timestamp.
    public static func last(_ duration: Duration) -> SubscriptionRange { SubscriptionRange(kind: .last(duration)) }

    public var description: String {
        switch kind {
        case .latest: return "latest"
        case .none: return "none"
        case .limit(let n): return "limit \(n)"
        case .last(let d): return "last \(SeriesTime.milliseconds(d) ?? -1) ms"
        }
    }

    /// Throws ``StrataError/invalidArgument(argument:reason:)`` for a negative count or duration.
    func validate() throws {
        switch kind {
        case .latest, .none: return
        case .limit(let n):
            if n < 0 { throw StrataError.invalidArgument(argument: "subscriptionRange", reason: "subscriptionRange count \(n) is negative") }
        case .last(let d):
            if SeriesTime.milliseconds(d) == nil {
                throw StrataError.invalidArgument(argument: "subscriptionRange", reason: "subscriptionRange duration \(d) is negative or too large")
            }
        }
    }

    /// The query that computes the range.
    var query: RangeQuery? {
        switch kind {
        case .latest: return RangeQuery.edits(.latest).fromLast(1)
        case .none: return nil
        case .limit(let n): return RangeQuery.edits(.latest).fromLast(n)
        case .last(let d): return RangeQuery.edits(.latest).fromLast(d)
        }
    }
}
