import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The events a ``RangeQuery`` selected, as one array per column (``TimeSeries/columns(_:)``):
/// for charting and analytics, without an ``Event`` per event.
///
/// Element `i` of every array is the `i`-th selected event, in sequence order; the edit
/// information is kept for the edit events only, in ``edits``.
///
/// ```swift
/// let prices = try store.timeSeries("prices/ACME", of: Double.self)
/// let columns = try prices.columns(.values.fromLast(.seconds(3_600)))
/// let mean = columns.values.reduce(0, +) / Double(max(columns.count, 1))
/// ```
public struct SeriesColumns<Value: Sendable>: Sendable {
    /// The sequence number of each event.
    public internal(set) var sequences: [UInt64] = []
    /// The timestamp of each event, in milliseconds since 1970 (``Event/timestamp`` as an integer).
    public internal(set) var timestamps: [Int64] = []
    /// The value of each event.
    public internal(set) var values: [Value] = []
    /// The author of each event.
    public internal(set) var authors: [String] = []
    /// The edit events among them, by increasing ``Edit/index``: what each one edits.
    public internal(set) var edits: [Edit] = []
    /// How many events the range selected before the limit applied (as
    /// ``QueryResult/selectedCount``).
    public internal(set) var selectedCount = 0

    /// An edit event's place in the columns and the original event it edits.
    public struct Edit: Sendable, Hashable {
        /// The edit event's index in the columns.
        public let index: Int
        /// The original event: its sequence number, timestamp and author.
        public let original: EventMetadata
    }

    /// The number of events returned.
    public var count: Int { sequences.count }

    /// Whether every selected event was returned (`selectedCount == count`).
    public var isComplete: Bool { selectedCount == count }

    /// The original that event `index` edits, or nil when it is an original.
    public func original(at index: Int) -> EventMetadata? {
        var lo = 0, hi = edits.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if edits[mid].index < index { lo = mid + 1 } else { hi = mid }
        }
        return lo < edits.count && edits[lo].index == index ? edits[lo].original : nil
    }

    /// Event `index` as an ``Event``, as ``TimeSeries/query(_:)`` returns it.
    /// REQUIRES: `0 <= index < count`.
    public func event(at index: Int) -> Event<Value> {
        Event(metadata: EventMetadata(sequence: sequences[index], milliseconds: timestamps[index], author: authors[index]),
              originalEvent: original(at: index), value: values[index])
    }

    mutating func reserve(_ n: Int) {
        sequences.reserveCapacity(sequences.count + n)
        timestamps.reserveCapacity(timestamps.count + n)
        values.reserveCapacity(values.count + n)
        authors.reserveCapacity(authors.count + n)
    }
}

extension SeriesColumns: Equatable where Value: Equatable {}
