import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One event of a time series: an original value, or an edit of an earlier original.
///
/// ```swift
/// for event in try prices.query(RangeQuery.values.fromLast(10)).events {
///     print(event.sequence, event.value, event.isEditEvent ? "edited" : "")
/// }
/// ```
public struct Event<Value: Sendable>: Sendable {
    /// The event's own sequence number, timestamp and author.
    public let metadata: EventMetadata
    /// For an edit event, the metadata of the original event it edits; nil for an original.
    public let originalEvent: EventMetadata?
    /// The value (for an edit event, the replacement value).
    public let value: Value

    /// An event with its metadata, the original's metadata for an edit event (nil for an
    /// original), and its value.
    public init(metadata: EventMetadata, originalEvent: EventMetadata?, value: Value) {
        self.metadata = metadata
        self.originalEvent = originalEvent
        self.value = value
    }

    /// Whether this event edits an earlier one.
    public var isEditEvent: Bool { originalEvent != nil }
    /// ``EventMetadata/sequence`` of ``metadata``.
    public var sequence: UInt64 { metadata.sequence }
    /// ``EventMetadata/timestamp`` of ``metadata``.
    public var timestamp: Date { metadata.timestamp }
    /// ``EventMetadata/author`` of ``metadata``.
    public var author: String { metadata.author }
}

extension Event: Equatable where Value: Equatable {}
extension Event: Hashable where Value: Hashable {}
