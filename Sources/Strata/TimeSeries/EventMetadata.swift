import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What identifies a time-series event: its sequence number, timestamp and author.
///
/// Timestamps are kept in whole milliseconds since 1970: ``TimeSeries/append(_:timestamp:)``
/// truncates the given date and returns the truncated one, so the metadata an append returns is
/// equal to what queries return later.
public struct EventMetadata: Sendable, Hashable, CustomStringConvertible {
    /// The event's position in its series: 0 for the first event, contiguous, never reused.
    public let sequence: UInt64
    /// When the event happened (millisecond precision).
    public let timestamp: Date
    /// Who wrote it (``StoreOptions/principal`` unless given explicitly).
    public let author: String

    /// Metadata of the event `sequence`, with its timestamp and author.
    public init(sequence: UInt64, timestamp: Date, author: String) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.author = author
    }

    init(sequence: UInt64, milliseconds: Int64, author: String) {
        self.init(sequence: sequence, timestamp: SeriesTime.date(milliseconds), author: author)
    }

    public var description: String {
        "#\(sequence) @\(SeriesTime.milliseconds(timestamp) ?? 0)ms by \"\(author)\""
    }
}
