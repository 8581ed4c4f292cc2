@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One stored message of a channel, as ``Channel/history(start:end:limit:reverse:)`` and
/// ``Channel/messages(bufferSize:)`` return it.
public struct HistoryMessage<Message: Sendable>: Sendable {
    /// The message as published.
    public var message: Message
    /// The message's timetoken: the one the store assigned when it was published, or, in a
    /// channel that replicates, the one the gateway gave it (see ``isProvisional``).
    public var timetoken: Timetoken
    /// The metadata published with it, if any.
    public var meta: JSON?
    /// Who published it: the `publisher` argument, else the store's
    /// ``StoreOptions/principal`` if not empty, else nil.
    public var publisher: String?
    /// Whether the message is provisional: published on this store to a channel that replicates,
    /// and not yet ordered by the gateway. It sorts at the timetoken this store's clock gave it;
    /// when the gateway accepts it, it moves to the timetoken the gateway assigned, in the commit
    /// that applies the gateway's copy, and is no longer provisional. A provisional timetoken is
    /// not a cursor to keep: it changes. Always false in a channel that never replicated.
    public var isProvisional: Bool

    /// A message with its timetoken, metadata and publisher.
    public init(message: Message, timetoken: Timetoken, meta: JSON? = nil, publisher: String? = nil,
                isProvisional: Bool = false) {
        self.message = message
        self.timetoken = timetoken
        self.meta = meta
        self.publisher = publisher
        self.isProvisional = isProvisional
    }
}

extension HistoryMessage: Equatable where Message: Equatable {}
