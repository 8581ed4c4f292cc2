@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One page of a channel's history: at most `limit` messages, oldest first.
///
/// Page back through a whole channel (newest pages first) with `start: page.start`, or forward
/// (oldest pages first) with `end: page.end + 1, reverse: true`; either way every message comes
/// exactly once:
///
/// ```swift
/// var page = try room.history(limit: 100)
/// while true {
///     for m in page.messages.reversed() { print(m.timetoken, m.message) }
///     guard page.hasMore, let oldest = page.start else { break }
///     page = try room.history(start: oldest, limit: 100)
/// }
/// ```
public struct HistoryPage<Message: Sendable>: Sendable {
    /// The messages, oldest first.
    public var messages: [HistoryMessage<Message>]
    /// The timetoken of the oldest message in the page; nil for an empty page.
    public var start: Timetoken?
    /// The timetoken of the newest message in the page; nil for an empty page.
    public var end: Timetoken?
    /// Whether the requested range holds messages beyond this page (older ones, or newer ones
    /// with `reverse: true`).
    public var hasMore: Bool

    /// A page of `messages` (oldest first); `start` and `end` are taken from them.
    public init(messages: [HistoryMessage<Message>], hasMore: Bool) {
        self.messages = messages
        self.start = messages.first?.timetoken
        self.end = messages.last?.timetoken
        self.hasMore = hasMore
    }

    /// The largest `limit` a history call accepts: 100 messages, as PubNub's single-channel
    /// fetch (``Store/fetchHistory(channels:limit:)`` accepts the same, where PubNub stops at 25).
    public static var maximumLimit: Int { HistoryQuery.maximumLimit }
}

extension HistoryPage: Equatable where Message: Equatable {}
