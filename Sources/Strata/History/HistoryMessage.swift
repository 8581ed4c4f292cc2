@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One stored message of a channel, as ``Channel/history(start:end:limit:reverse:)`` and
/// ``Channel/messages(bufferSize:)`` return it.
public struct HistoryMessage<Message: Sendable>: Sendable {
    /// The message as published.
    public var message: Message
    /// The timetoken the store assigned when it was published.
    public var timetoken: Timetoken
    /// The metadata published with it, if any.
    public var meta: JSON?
    /// Who published it: the `publisher` argument, else the store's
    /// ``StoreOptions/principal`` if not empty, else nil.
    public var publisher: String?

    /// A message with its timetoken, metadata and publisher.
    public init(message: Message, timetoken: Timetoken, meta: JSON? = nil, publisher: String? = nil) {
        self.message = message
        self.timetoken = timetoken
        self.meta = meta
        self.publisher = publisher
    }
}

extension HistoryMessage: Equatable where Message: Equatable {}
