@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The events a ``RangeQuery`` selected, in sequence order, at most its limit.
public struct QueryResult<Value: Sendable>: Sendable {
    /// The events returned: the last `limit` of the selection when it held more.
    public let events: [Event<Value>]
    /// How many events the range selected before the limit applied.
    public let selectedCount: Int

    /// A result of `events`, of the `selectedCount` events the query selected.
    public init(events: [Event<Value>], selectedCount: Int) {
        self.events = events
        self.selectedCount = selectedCount
    }

    /// Whether every selected event was returned (`selectedCount == events.count`).
    public var isComplete: Bool { selectedCount == events.count }
}

extension QueryResult: Equatable where Value: Equatable {}
