/// The retained part of a time series: how many events it keeps and which sequence numbers they
/// span (``TimeSeries/bounds()``).
///
/// Sequence numbers are contiguous, so the retained events are `firstRetained ..< next`, and
/// `count == next - firstRetained`.
public struct SeriesBounds: Sendable, Hashable, CustomStringConvertible {
    /// The number of retained events (originals and edits).
    public var count: UInt64
    /// The sequence number of the oldest retained event (equal to ``next`` when none is retained).
    public var firstRetained: UInt64
    /// The sequence number the next append or edit takes.
    public var next: UInt64

    /// Bounds with the given count and sequence numbers.
    public init(count: UInt64, firstRetained: UInt64, next: UInt64) {
        self.count = count
        self.firstRetained = firstRetained
        self.next = next
    }

    /// `count` events, `firstRetained ..< next`.
    public var description: String { "\(count) events, \(firstRetained)..<\(next)" }
}
