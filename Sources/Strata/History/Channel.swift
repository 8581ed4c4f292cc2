@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A channel of a store: a named, persistent, append-only stream of messages ordered by
/// ``Timetoken``, with PubNub Storage & Playback semantics — paged history, range deletion,
/// counts, retention — and the live messages as they are published.
///
/// ```swift
/// let room = try store.channel("chat.room1", of: JSON.self)
/// let tt = try room.publish(["text": "hello"], meta: ["lang": "en"], publisher: "alice")
/// let page = try room.history(limit: 100)                 // the newest 100, oldest first
/// let older = try room.history(start: page.start, limit: 100)
/// let unread = try room.messageCount(since: tt)
/// for try await message in try room.messages() { print(message.timetoken, message.message) }
/// ```
///
/// Handles are cheap values; every handle of a channel shares one state. All methods are
/// thread-safe. Publishes and deletions of one channel are serialized (one at a time, each
/// committed before the next gets its timetoken); different channels commit concurrently.
public struct Channel<Message: Codable & Sendable>: Sendable {
    let state: ChannelState
    let codec = ValueCodec<Message>()
    /// The session's checks, or nil for the store's own handle.
    let access: SessionAccess?

    init(state: ChannelState, access: SessionAccess? = nil) {
        self.state = state
        self.access = access
    }

    /// The publisher of a write: the caller's (nil: the store's principal, if any), or in a
    /// session its principal after checking ``Permission/updateTopic``.
    @inline(__always)
    func publisher(_ given: String?) throws -> String? {
        guard let access else { return given ?? state.history.principal }
        return try access.writer(given, state.keys.name)
    }

    /// The channel's name.
    public var name: String { state.keys.name }

    /// The channel's current options.
    public var options: ChannelOptions { state.descriptor.options }

    // MARK: Publishing

    /// Stores `message` with a new timetoken and hands it to the live subscribers.
    ///
    /// - Parameters:
    ///   - message: the message to store.
    ///   - meta: metadata kept with the message (PubNub's `meta`), returned by history.
    ///   - publisher: who published it; nil uses the store's ``StoreOptions/principal`` (none if
    ///     that is empty). In a session it is the session's principal; another publisher is
    ///     ``StrataError/permissionDenied(principal:permission:path:)`` naming
    ///     ``Permission/updateTopic``, which every publish needs.
    /// - Returns: the message's timetoken, larger than every timetoken the store assigned before.
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if the message cannot be encoded;
    ///   ``StrataError/closed`` after the store closed; the store's failure after it failed.
    @discardableResult
    public func publish(_ message: Message, meta: JSON? = nil, publisher: String? = nil) throws -> Timetoken {
        let who = try self.publisher(publisher)
        var value: [UInt8] = []
        try encode(message, meta: meta, publisher: who, into: &value)
        let first = try state.publish([value])
        return Timetoken(first)
    }

    /// Stores `messages` atomically (all or none, also across a crash) with consecutive new
    /// timetokens, in order, each with the same `meta` and `publisher`.
    ///
    /// - Returns: the timetokens, in the order of `messages` (empty for no messages).
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if a message cannot be encoded (then nothing
    ///   is stored) or the batch exceeds the engine's batch size limit (64 MiB or so).
    @discardableResult
    public func publish(contentsOf messages: some Sequence<Message>, meta: JSON? = nil,
                        publisher: String? = nil) throws -> [Timetoken] {
        let who = try self.publisher(publisher)
        let list = Array(messages)
        guard !list.isEmpty else {
            _ = try state.history.engine.snapshot()  // report a closed store
            return []
        }
        var values: [[UInt8]] = []
        values.reserveCapacity(list.count)
        var scratch: [UInt8] = []
        for m in list {
            scratch.removeAll(keepingCapacity: true)
            try encode(m, meta: meta, publisher: who, into: &scratch)
            values.append(scratch)
        }
        let first = try state.publish(values)
        return (0..<list.count).map { Timetoken(first + UInt64($0)) }
    }

    func encode(_ message: Message, meta: JSON?, publisher: String?, into out: inout [UInt8]) throws {
        do {
            try MessageRecord.encode(message: { try codec.encode(message, into: &$0) }, meta: meta,
                                     publisher: publisher, into: &out)
        } catch let error as StrataError {
            throw error
        } catch {
            throw StrataError.invalidArgument(argument: "message", reason: "channel \"\(name)\": the message cannot be encoded: \(error)")
        }
    }

    // MARK: Reading

    /// One page of the channel's history, oldest message first.
    ///
    /// Bounds: `start` is exclusive, `end` inclusive. Only `start`: the messages older than
    /// `start`. Only `end`: `end` and newer. Both: the messages between them, whichever is the
    /// larger (so `start: tt - 1, end: tt` is exactly the message at `tt`). Neither: all.
    /// The page holds the newest `limit` messages of that range, or with `reverse: true` the
    /// oldest `limit` (`reverse` is ignored when both bounds are given). Needs
    /// ``Permission/readTopic`` in a session.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for a `limit` outside
    ///   1…``HistoryPage/maximumLimit``; ``StrataError/typeMismatch(_:)`` or
    ///   ``StrataError/corrupted(file:offset:reason:)`` for a stored message that does not decode.
    public func history(start: Timetoken? = nil, end: Timetoken? = nil, limit: Int = 100,
                        reverse: Bool = false) throws -> HistoryPage<Message> {
        try access?.require(.readTopic, name)
        try HistoryQuery.check(limit: limit, "history of channel \"\(name)\"")
        let snapshot = try state.history.engine.snapshot()
        let keys = state.keys
        let floor = try state.floor(in: snapshot)
        // The native types get a specialized page: typedPage is called with a concrete type (a
        // generic helper here would keep Message generic and stay unspecialized); the casts are of
        // a type to itself.
        if Message.self == String.self {
            let page = try HistoryQuery.typedPage(in: snapshot, keys: keys, floor: floor, start: start, end: end,
                                                  limit: limit, reverse: reverse, codec: ValueCodec<String>())
            return unsafeBitCast(page, to: HistoryPage<Message>.self)
        }
        if Message.self == JSON.self {
            let page = try HistoryQuery.typedPage(in: snapshot, keys: keys, floor: floor, start: start, end: end,
                                                  limit: limit, reverse: reverse, codec: ValueCodec<JSON>())
            return unsafeBitCast(page, to: HistoryPage<Message>.self)
        }
        return try HistoryQuery.typedPage(in: snapshot, keys: keys, floor: floor, start: start, end: end,
                                          limit: limit, reverse: reverse, codec: codec)
    }

    /// Deletes the messages the bounds select — the same rules as
    /// ``history(start:end:limit:reverse:)``, without a limit: `deleteMessages()` empties the
    /// channel, `deleteMessages(start: tt - 1, end: tt)` deletes exactly the message at `tt`.
    /// The deletion is one range tombstone; compaction gives the space back. Needs
    /// ``Permission/modifyTopic`` in a session.
    public func deleteMessages(start: Timetoken? = nil, end: Timetoken? = nil) throws {
        try access?.require(.modifyTopic, name)
        try state.deleteMessages(start: start, end: end)
    }

    /// The number of messages with a timetoken strictly greater than `since`, counted from the
    /// keys without decoding a message. Needs ``Permission/readTopic`` in a session.
    public func messageCount(since: Timetoken) throws -> Int {
        try access?.require(.readTopic, name)
        let snapshot = try state.history.engine.snapshot()
        guard since.rawValue < .max else { return 0 }
        let lower = max(since.rawValue + 1, try state.floor(in: snapshot))
        return try HistoryQuery.count(in: snapshot, keys: state.keys, lower: lower)
    }

    // MARK: Live messages

    /// The messages published to the channel from now on, in timetoken order, as they commit (the
    /// live half of the channel: no second messaging system needed).
    ///
    /// Each subscriber has its own buffer of `bufferSize` messages. A subscriber that falls that
    /// far behind is not allowed to grow memory or miss messages silently: its stream ends with
    /// ``StrataError/subscriberOverflow(_:)`` (after the messages buffered before). Catch up with
    /// ``history(start:end:limit:reverse:)`` from the last timetoken seen, then subscribe again.
    /// The stream ends by throwing ``StrataError/closed`` when the store closes, and by throwing the
    /// error when the store fails (a failed log sync, rotation or publish: see ``StoreStatistics/writeError``);
    /// cancelling the iterating task ends the subscription.
    ///
    /// ```swift
    /// for try await m in try room.messages() {
    ///     print(m.timetoken, m.message)
    /// }
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for `bufferSize` < 1,
    ///   ``StrataError/closed`` after the store closed; in a session without
    ///   ``Permission/selectTopic``, ``StrataError/permissionDenied(principal:permission:path:)``.
    public func messages(bufferSize: Int = 1_000) throws -> AsyncThrowingStream<HistoryMessage<Message>, any Error> {
        try access?.require(.selectTopic, name)
        guard bufferSize >= 1 else {
            throw StrataError.invalidArgument(argument: "bufferSize", reason: "channel \"\(name)\": bufferSize \(bufferSize) must be at least 1")
        }
        let keys = state.keys
        let codec = self.codec
        return try state.subscribe(bufferSize: bufferSize) { timetoken, record in
            try HistoryQuery.message(timetoken, record, keys: keys, codec: codec)
        }
    }
}
