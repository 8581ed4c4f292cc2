@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How a time series keeps and delivers its events.
///
/// ```swift
/// let prices = try store.timeSeries("prices/AAPL", of: Double.self,
///                                   options: TimeSeriesOptions(retainedRange: .limit(10_000)))
/// ```
///
/// The retained and subscription ranges are stored with the series; the options given to a later
/// ``Store/timeSeries(_:of:options:)`` replace them (also the defaults, when none are given), and a
/// smaller retained range applies at once. ``subscriberBufferSize`` is not stored.
public struct TimeSeriesOptions: Sendable, Hashable {
    /// The events the series keeps. Default ``RetainedRange/all`` (Diffusion's own default is the
    /// last 10 events; a storage engine keeps everything unless told otherwise).
    public var retainedRange: RetainedRange
    /// The events a new subscriber receives first. Default ``SubscriptionRange/latest``.
    public var subscriptionRange: SubscriptionRange
    /// Events a subscriber may fall behind by before its stream ends with
    /// ``StrataError/subscriberOverflow(_:)`` (1…1,048,576; the initial range comes on top).
    /// Default 1,024.
    public var subscriberBufferSize: Int

    /// Options with the given retained range, subscription range and subscriber buffer size.
    public init(retainedRange: RetainedRange = .all, subscriptionRange: SubscriptionRange = .latest,
                subscriberBufferSize: Int = 1_024) {
        self.retainedRange = retainedRange
        self.subscriptionRange = subscriptionRange
        self.subscriberBufferSize = subscriberBufferSize
    }

    func validate() throws {
        try retainedRange.validate()
        try subscriptionRange.validate()
        guard (1...(1 << 20)).contains(subscriberBufferSize) else {
            throw StrataError.invalidArgument(argument: "subscriberBufferSize", reason: "subscriberBufferSize \(subscriberBufferSize) is outside 1…1048576")
        }
    }
}
