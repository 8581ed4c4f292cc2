import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Channels in a transaction (Store/Transaction.swift): the handle and the hold of a channel's
// writer lock.

extension Transaction {
    /// A write handle of the channel `name` (created with default options if missing; in a
    /// session's transaction that needs ``Permission/modifyTopic``).
    ///
    /// - Throws: ``StrataError/typeMismatch(_:)`` if it holds another message type.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) throws
        -> TransactionChannel<Message> {
        try checkOpen()
        return TransactionChannel(transaction: self, channel: try store.openChannel(name, of: type, options: nil, access: access))
    }
}

/// The handle of a channel inside a transaction (``Transaction/channel(_:of:)``): publishes,
/// committed with the transaction, and reads that see them before it commits.
public struct TransactionChannel<Message: Codable & Sendable> {
    let transaction: Transaction
    let channel: Channel<Message>

    /// The channel's name.
    public var name: String { channel.name }

    // MARK: Reading your own writes

    /// The messages the transaction published to the channel so far, oldest first (none are in
    /// the channel's history before it commits). Needs ``Permission/readTopic`` in a session.
    public func stagedMessages() throws -> [HistoryMessage<Message>] {
        try transaction.checkOpen()
        try transaction.access?.require(.readTopic, channel.name)
        guard let staged = transaction.staged(channel.state.writer) else { return [] }
        return try zip(staged.staged, staged.stagedValues).map { timetoken, value in
            try value.withUnsafeBytes {
                try HistoryQuery.message(timetoken, $0, keys: channel.state.keys, codec: channel.codec)
            }
        }
    }

    /// The newest message of the channel as the transaction sees it: the last one it published,
    /// else the newest in the committed history (nil if there is none). Needs
    /// ``Permission/readTopic`` in a session.
    public func lastMessage() throws -> HistoryMessage<Message>? {
        if let last = try stagedMessages().last { return last }
        return try channel.history(limit: 1).messages.last
    }

    // MARK: Writing

    /// Publishes a message; see ``Channel/publish(_:meta:publisher:)``. Its timetoken is larger
    /// than every timetoken the store assigned before; messages of other channels committed
    /// meanwhile may take timetokens between the transaction's.
    @discardableResult
    public func publish(_ message: Message, meta: JSON? = nil, publisher: String? = nil) throws -> Timetoken {
        try publish(contentsOf: [message], meta: meta, publisher: publisher)[0]
    }

    /// Publishes messages with consecutive timetokens, in order.
    @discardableResult
    public func publish(contentsOf messages: some Sequence<Message>, meta: JSON? = nil,
                        publisher: String? = nil) throws -> [Timetoken] {
        let state = channel.state
        let who = try channel.publisher(publisher)
        var values: [[UInt8]] = []
        for m in messages {
            var value: [UInt8] = []
            try channel.encode(m, meta: meta, publisher: who, into: &value)
            values.append(value)
        }
        guard !values.isEmpty else { return [] }
        let first = try transaction.stage(state.writer, make: { state.hold() }) { hold, batch in
            try state.stagePublish(&hold.writer, values, into: &batch)
        }
        return (0..<values.count).map { Timetoken(first + UInt64($0)) }
    }
}

extension ChannelState {
    func hold() -> Hold<Writer> {
        Hold(writer, seal: { w, batch in try self.seal(&w, into: &batch) }, committed: { before, w in
            if w.head.floor != before.head.floor { self.publishRules(w) }
            // After the commit, as a publish outside a transaction: the push finds the outbox entries.
            if w.descriptor.replicated { self.outboxSignal.bump() }
        })
    }
}
