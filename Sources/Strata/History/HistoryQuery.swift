@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The reads of message history, over a ``Snapshot`` so that the store and the inspector of
/// `strata-dump` share them: the bound rules of API.md turned into key ranges, pages and counts.
package enum HistoryQuery {
    /// The largest `limit` of a history call (``HistoryPage/maximumLimit``).
    static let maximumLimit = 100

    /// The half-open timetoken range `[lower, upper)` (nil `upper`: no upper bound) that the
    /// bounds select, clipped below at `floor`; nil when it is empty.
    ///
    /// `start` is exclusive and `end` inclusive: only `start` → older than `start`; only `end` →
    /// `end` and newer; both → between them whichever is larger; neither → everything.
    static func range(start: Timetoken?, end: Timetoken?, floor: UInt64) -> (lower: UInt64, upper: UInt64?)? {
        var lower: UInt64 = 0
        var upper: UInt64?
        switch (start?.rawValue, end?.rawValue) {
        case (nil, nil):
            break
        case (let s?, nil):
            upper = s
        case (nil, let e?):
            lower = e
        case (let s?, let e?):
            if s < e {
                lower = s + 1
                upper = e == .max ? nil : e + 1
            } else if s > e {
                lower = e
                upper = s
            } else {
                return nil
            }
        }
        lower = max(lower, floor)
        if let upper, upper <= lower { return nil }
        return (lower, upper)
    }

    /// The oldest timetoken a channel still shows: its persisted floor, raised by its retention
    /// measured at `now`.
    package static func floor(head: ChannelHead, retention: UInt64?, now: UInt64) -> UInt64 {
        guard let retention else { return head.floor }
        return max(head.floor, now >= retention ? now - retention : 0)
    }

    /// Checks a `limit` argument.
    static func check(limit: Int, _ what: @autoclosure () -> String) throws {
        guard (1...maximumLimit).contains(limit) else {
            throw StrataError.invalidArgument(argument: "limit", reason: "\(what()): limit \(limit) is outside 1…\(maximumLimit)")
        }
    }

    /// A page of history: the newest `limit` messages of the range (the oldest with `reverse`,
    /// unless both bounds are given), oldest first; `decode` turns a record into a message, with
    /// the page's memo of the last publisher.
    static func page<Message>(
        in snapshot: Snapshot, keys: ChannelKeys, floor: UInt64,
        start: Timetoken?, end: Timetoken?, limit: Int, reverse: Bool,
        decode: (_ timetoken: UInt64, _ value: UnsafeRawBufferPointer,
                 _ publishers: inout MessageRecord.PublisherMemo) throws -> HistoryMessage<Message>
    ) throws -> HistoryPage<Message> {
        guard let range = range(start: start, end: end, floor: floor) else {
            return HistoryPage(messages: [], hasMore: false)
        }
        let oldestFirst = reverse && !(start != nil && end != nil)
        let cursor = snapshot.cursor(lower: keys.key(range.lower), upper: range.upper.map(keys.key) ?? keys.end,
                                     reverse: !oldestFirst)
        var messages: [HistoryMessage<Message>] = []
        messages.reserveCapacity(min(limit, 128))
        var hasMore = false
        var publishers = MessageRecord.PublisherMemo()
        while try cursor.next() {
            if messages.count == limit {
                hasMore = true
                break
            }
            guard let tt = cursor.withKey({ MessageRecord.timetoken(ofKey: $0, prefixLength: keys.prefix.count) }) else {
                throw StrataError.corrupted(file: "channel \"\(keys.name)\"", offset: 0,
                                            reason: "bad message key \(TupleKey.describe(cursor.key))")
            }
            messages.append(try decode(tt, cursor.value, &publishers))
        }
        // Reversed through the buffer: its swaps move the messages, where the array's own retain
        // and release each one's strings.
        if !oldestFirst { messages.withUnsafeMutableBufferPointer { $0.reverse() } }
        return HistoryPage(messages: messages, hasMore: hasMore)
    }

    /// The number of messages with a timetoken of at least `lower` (and below `upper`), without
    /// decoding one: whole data blocks are summed from the segments' index counts, only the
    /// blocks at the ends and what other layers overlap are read (``Snapshot/count(lower:upper:)``).
    static func count(in snapshot: Snapshot, keys: ChannelKeys, lower: UInt64, upper: UInt64? = nil) throws -> Int {
        try snapshot.count(lower: keys.key(lower), upper: upper.map(keys.key) ?? keys.end)
    }

    /// The timetokens of the first `count` messages at or after `lower` (oldest first).
    static func timetokens(in snapshot: Snapshot, keys: ChannelKeys, lower: UInt64, reverse: Bool = false,
                           count: Int) throws -> [UInt64] {
        let cursor = snapshot.cursor(lower: keys.key(lower), upper: keys.end, reverse: reverse)
        var out: [UInt64] = []
        while out.count < count, try cursor.next() {
            guard let tt = cursor.withKey({ MessageRecord.timetoken(ofKey: $0, prefixLength: keys.prefix.count) }) else {
                throw StrataError.corrupted(file: "channel \"\(keys.name)\"", offset: 0,
                                            reason: "bad message key \(TupleKey.describe(cursor.key))")
            }
            out.append(tt)
        }
        return out
    }

    /// A page of a channel's messages decoded with a typed codec (``page(in:keys:floor:start:end:limit:reverse:decode:)``).
    ///
    /// For the native message types, `Channel.history` calls this with the concrete type, so that
    /// the optimizer specializes the whole per-message path: unspecialized, every message costs
    /// generic metadata lookups (`HistoryMessage<Message>`, the array's element), and more than
    /// reading the record does.
    static func typedPage<Message>(
        in snapshot: Snapshot, keys: ChannelKeys, floor: UInt64,
        start: Timetoken?, end: Timetoken?, limit: Int, reverse: Bool, codec: ValueCodec<Message>
    ) throws -> HistoryPage<Message> {
        try page(in: snapshot, keys: keys, floor: floor, start: start, end: end, limit: limit,
                 reverse: reverse) { tt, value, publishers in
            try message(tt, value, keys: keys, codec: codec, publishers: &publishers)
        }
    }

    /// Decodes a message record of a channel with a typed codec.
    @inline(__always)
    static func message<Message>(_ timetoken: UInt64, _ value: UnsafeRawBufferPointer, keys: ChannelKeys,
                                 codec: ValueCodec<Message>) throws -> HistoryMessage<Message> {
        var publishers = MessageRecord.PublisherMemo()
        return try message(timetoken, value, keys: keys, codec: codec, publishers: &publishers)
    }

    /// Decodes a message record of a channel with a typed codec, taking the publisher from
    /// `publishers` when it is the last one seen.
    @inline(__always)
    static func message<Message>(_ timetoken: UInt64, _ value: UnsafeRawBufferPointer, keys: ChannelKeys,
                                 codec: ValueCodec<Message>,
                                 publishers: inout MessageRecord.PublisherMemo) throws -> HistoryMessage<Message> {
        let parts = try MessageRecord.decode(value, what: "channel \"\(keys.name)\" message \(timetoken)",
                                             publishers: &publishers)
        let message: Message
        do {
            if Message.self == String.self {
                // What the codec does, inlined: its decode is not specialized across the module.
                guard let s = UTF8Text.string(parts.message) else {
                    throw StrataError.corrupted(file: "value", offset: 0, reason: "invalid UTF-8 in a String value")
                }
                message = unsafeBitCast(s, to: Message.self)
            } else {
                message = try codec.decode(parts.message)
            }
        } catch StrataError.corrupted(_, _, let reason) {
            throw StrataError.corrupted(file: "channel \"\(keys.name)\" message \(timetoken)", offset: 0, reason: reason)
        }
        return HistoryMessage(message: message, timetoken: Timetoken(timetoken), meta: parts.meta, publisher: parts.publisher,
                              isProvisional: parts.uploadID != nil)
    }

    /// Decodes a message record of a channel as JSON, given the type name the channel stored.
    package static func json(_ timetoken: UInt64, _ value: UnsafeRawBufferPointer, keys: ChannelKeys,
                             typeName: String) throws -> HistoryMessage<JSON> {
        var publishers = MessageRecord.PublisherMemo()
        return try json(timetoken, value, keys: keys, typeName: typeName, publishers: &publishers)
    }

    /// Decodes a message record of a channel as JSON, taking the publisher from `publishers` when
    /// it is the last one seen.
    @inline(__always)
    package static func json(_ timetoken: UInt64, _ value: UnsafeRawBufferPointer, keys: ChannelKeys,
                     typeName: String, publishers: inout MessageRecord.PublisherMemo) throws -> HistoryMessage<JSON> {
        let parts = try MessageRecord.decode(value, what: "channel \"\(keys.name)\" message \(timetoken)",
                                             publishers: &publishers)
        let message: JSON
        do {
            message = try ValueCodec<JSON>.json(typeName: typeName, bytes: parts.message)
        } catch StrataError.corrupted(_, _, let reason) {
            throw StrataError.corrupted(file: "channel \"\(keys.name)\" message \(timetoken)", offset: 0, reason: reason)
        }
        return HistoryMessage(message: message, timetoken: Timetoken(timetoken), meta: parts.meta, publisher: parts.publisher,
                              isProvisional: parts.uploadID != nil)
    }
}

/// The engine keys of one channel.
package struct ChannelKeys: Sendable {
    let name: String
    package let id: UInt64
    /// `(3, id)`.
    package let prefix: [UInt8]
    /// `(3, id + 1)`: above every key of the channel.
    package let end: [UInt8]

    package init(name: String, id: UInt64) {
        self.name = name
        self.id = id
        prefix = MessageRecord.channelPrefix(id)
        end = id == .max ? Keyspace.channelMessages.end : MessageRecord.channelPrefix(id + 1)
    }

    /// The key of the message at `timetoken`.
    package func key(_ timetoken: UInt64) -> [UInt8] {
        var suffix: [UInt8] = []
        MessageRecord.encodeTimetoken(timetoken, into: &suffix)
        return prefix + suffix
    }
}
