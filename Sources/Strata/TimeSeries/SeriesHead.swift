@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The state of a series that reads need besides its records: which sequences exist and are
/// retained, the latest timestamp, whether edits may be retained.
package struct SeriesHead: Sendable, Equatable {
    /// The sequence the next event gets.
    package var next: UInt64
    /// The first retained sequence; `cutoff ..< next` are the retained events.
    package var cutoff: UInt64
    /// The latest event's timestamp (ms since 1970), nil for an empty series.
    var latestTimestamp: Int64?
    /// The sequence of the latest edit event ever appended.
    var lastEditSequence: UInt64?

    /// Whether some retained event may be an edit (else every view is every retained event).
    var hasRetainedEdits: Bool {
        guard let e = lastEditSequence else { return false }
        return e >= cutoff
    }

    /// The number of retained events.
    package var count: UInt64 { next - cutoff }
}
