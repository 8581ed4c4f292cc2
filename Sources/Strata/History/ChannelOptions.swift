@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a channel keeps: every message (the default), the messages younger than a duration,
/// the newest `limit` messages, or both restrictions at once.
///
/// Messages that fall out are gone at once for every read (history, counts, fetches, the inspector)
/// and for good — a later change of the options does not bring them back; their space is given back
/// by compaction. Options passed to ``Store/channel(_:of:options:)`` replace the stored ones.
///
/// ```swift
/// let room = try store.channel("chat.room1", of: JSON.self,
///                              options: ChannelOptions(retention: .seconds(7 * 86_400), limit: 10_000))
/// ```
public struct ChannelOptions: Sendable, Equatable, Codable {
    /// Messages whose timetoken is older than this (measured against the store's clock) are
    /// gone. Nil keeps them regardless of age. Must be at least 100 ns.
    public var retention: Duration?
    /// Only the newest `limit` messages are kept. Nil keeps any number. Must be at least 1.
    public var limit: Int?

    /// Options keeping messages for `retention` and at most `limit` of them (nil: no restriction).
    public init(retention: Duration? = nil, limit: Int? = nil) {
        self.retention = retention
        self.limit = limit
    }

    /// `retention` in 100-ns units.
    var retentionUnits: UInt64? { retention.flatMap(Timetoken.units(of:)) }

    func validate(channel name: String) throws {
        if let retention, Timetoken.units(of: retention) == nil {
            throw StrataError.invalidArgument(argument: "retention", reason: "channel \"\(name)\": retention \(retention) must be at least 100 ns")
        }
        if let limit, limit < 1 {
            throw StrataError.invalidArgument(argument: "limit", reason: "channel \"\(name)\": limit \(limit) must be at least 1")
        }
    }
}
