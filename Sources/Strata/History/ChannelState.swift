import Synchronization

/// The shared state of one open channel (every ``Channel`` handle of it uses the same object):
/// its id and keys, its options, the writer state that keeps timetoken order equal to commit
/// order, and the subscribers of its live messages.
///
/// Publishes and deletions of a channel are serialized by `writer`, held from the timetoken
/// allocation through the engine write to the delivery to subscribers: a reader paging by
/// timetoken never sees a message appear below one it has already seen in the same channel.
final class ChannelState: CollectionState {
    let keys: ChannelKeys
    let typeName: String
    let history: HistoryStoreState
    private let headKey: [UInt8]

    private struct Writer {
        var head: ChannelHead
        var descriptor: ChannelDescriptor
        /// With a limit: the number of messages at or above `head.floor`, never above the limit
        /// after a publish. Without a limit: unused.
        var count: Int
    }

    private let writer: Mutex<Writer>
    /// The retention readers apply (a copy of the descriptor's, changed under `writer`).
    private let retention: Mutex<UInt64?>

    /// A subscriber of ``Channel/messages(bufferSize:)``: `deliver` returns false when the
    /// subscriber ended (overflow).
    struct Subscriber: Sendable {
        let deliver: @Sendable (PublishedMessages) -> Bool
        /// Ends the stream: normally (nil) or by throwing the error.
        let finish: @Sendable ((any Error)?) -> Void
    }

    /// Messages just committed, for subscribers: `typed` is the publisher's
    /// `[HistoryMessage<Message>]`; `values` the encoded records, for a subscriber of another type.
    struct PublishedMessages: Sendable {
        let typed: any Sendable
        let first: UInt64
        let values: [[UInt8]]
    }

    private struct Subscribers {
        var byId: [Int: Subscriber] = [:]
        var nextId = 0
        var closed = false
        /// The engine failed: streams ended by throwing this, and new subscriptions throw it.
        var failure: StrataError?
    }

    private let subscribers = Mutex(Subscribers())
    /// `subscribers.byId.count`, read without the lock on every publish.
    private let subscriberCount = Atomic<Int>(0)

    init(name: String, entry: CatalogEntry, history: HistoryStoreState) throws {
        let descriptor = try ChannelDescriptor(decoding: entry.payload, channel: name)
        keys = ChannelKeys(name: name, id: entry.id)
        typeName = descriptor.typeName
        self.history = history
        headKey = ChannelHead.key(entry.id)
        let snapshot = try history.engine.snapshot()
        var head = try ChannelHead.read(entry.id, in: snapshot)
        var count = 0
        if let limit = descriptor.limit {
            let stored = head
            (head.floor, count) = try Self.limitFloor(in: snapshot, keys: keys, floor: head.floor, limit: limit)
            if head != stored {
                var batch = WriteBatch()
                batch.putRaw(headKey, head.encoded)
                try history.engine.write(batch)
            }
        }
        writer = Mutex(Writer(head: head, descriptor: descriptor, count: count))
        retention = Mutex(descriptor.retention)
        history.rules.set(entry.id, .init(floor: head.floor, retention: descriptor.retention, limited: descriptor.limit != nil))
    }

    /// The floor that keeps the newest `limit` messages at or above `floor`, and how many
    /// messages are at or above it. Reads at most `limit` keys.
    private static func limitFloor(in snapshot: Snapshot, keys: ChannelKeys, floor: UInt64,
                                   limit: UInt64) throws -> (floor: UInt64, count: Int) {
        let cursor = snapshot.cursor(lower: keys.key(floor), upper: keys.end, reverse: true)
        var n: UInt64 = 0
        var oldest = floor
        while n < limit, try cursor.next() {
            n += 1
            guard let tt = cursor.withKey({ MessageRecord.timetoken(ofKey: $0, prefixLength: keys.prefix.count) }) else {
                throw StrataError.corrupted(file: "channel \"\(keys.name)\"", offset: 0,
                                            reason: "bad message key \(TupleKey.describe(cursor.key))")
            }
            oldest = tt
        }
        return (n == limit ? max(floor, oldest) : floor, Int(n))
    }

    var descriptor: ChannelDescriptor { writer.withLock { $0.descriptor } }

    /// The oldest timetoken readers of `snapshot` see.
    func floor(in snapshot: Snapshot) throws -> UInt64 {
        let head = try ChannelHead.read(keys.id, in: snapshot)
        return HistoryQuery.floor(head: head, retention: retention.withLock { $0 }, now: history.clock.now())
    }

    // MARK: Writes

    /// Commits `values` (encoded records) as consecutive new messages; returns the first
    /// timetoken. `notify(first)` runs after the commit, before another write of the channel.
    func publish(_ values: [[UInt8]], notify: (UInt64) -> PublishedMessages?) throws -> UInt64 {
        precondition(!values.isEmpty, "publish of no messages")
        return try writer.withLock { w in
            let k = values.count
            let first = try history.clock.allocate(k)
            var batch = WriteBatch()
            var suffix: [UInt8] = []
            suffix.reserveCapacity(9)
            var tt = first
            for v in values {
                MessageRecord.encodeTimetoken(tt, into: &suffix)
                batch.putRaw(keys.prefix, suffix, v)
                tt &+= 1
            }
            var head = w.head
            head.last = first + UInt64(k - 1)
            var count = w.count
            if let limit = w.descriptor.limit {
                (head.floor, count) = try advance(floor: head.floor, count: w.count, adding: k, first: first, limit: limit)
            } else if let retention = w.descriptor.retention {
                // Persist the retention floor too, so that expired messages stay gone across a
                // reopen with a clock that went back.
                head.floor = HistoryQuery.floor(head: head, retention: retention, now: history.clock.now())
            }
            batch.putRaw(headKey, head.encoded)
            try history.engine.write(batch)
            let floorChanged = head.floor != w.head.floor
            w.head = head
            w.count = count
            if floorChanged {
                history.rules.set(keys.id, .init(floor: head.floor, retention: w.descriptor.retention,
                                                 limited: w.descriptor.limit != nil))
            }
            if subscriberCount.load(ordering: .relaxed) > 0, let published = notify(first) {
                deliver(published)
            }
            return first
        }
    }

    /// The floor and count after `adding` messages from `first` on to a limited channel whose
    /// `count` messages are at or above `floor`.
    private func advance(floor: UInt64, count: Int, adding k: Int, first: UInt64,
                         limit: UInt64) throws -> (UInt64, Int) {
        let total = UInt64(count) + UInt64(k)
        guard total > limit else { return (floor, Int(total)) }
        let excess = total - limit  // the oldest messages at or above the floor that fall out
        if excess >= UInt64(count) {
            // Every existing message falls out, and some new ones too.
            return (first + (excess - UInt64(count)), Int(limit))
        }
        let snapshot = try history.engine.snapshot()
        let tts = try HistoryQuery.timetokens(in: snapshot, keys: keys, lower: floor, count: Int(excess) + 1)
        if tts.count == Int(excess) + 1 { return (tts[Int(excess)], Int(limit)) }
        // The count was off (it cannot be, unless the files changed under the store): recount.
        let exact = try HistoryQuery.count(in: snapshot, keys: keys, lower: floor)
        return try advance(floor: floor, count: exact, adding: k, first: first, limit: limit)
    }

    /// Deletes the messages the bounds select (start exclusive, end inclusive, as for history).
    func deleteMessages(start: Timetoken?, end: Timetoken?) throws {
        try writer.withLock { w in
            guard let range = HistoryQuery.range(start: start, end: end, floor: 0) else {
                // Nothing selected; still report a closed store.
                _ = try history.engine.snapshot()
                return
            }
            var count = w.count
            if w.descriptor.limit != nil, range.upper.map({ $0 > w.head.floor }) ?? true {
                let snapshot = try history.engine.snapshot()
                count -= try HistoryQuery.count(in: snapshot, keys: keys, lower: max(range.lower, w.head.floor),
                                                upper: range.upper)
            }
            var batch = WriteBatch()
            if range.lower == 0 && range.upper == nil {
                batch.deleteRangeRaw(keys.prefix, keys.end)
            } else {
                batch.deleteRangeRaw(keys.key(range.lower), range.upper.map(keys.key) ?? keys.end)
            }
            try history.engine.write(batch)
            w.count = max(0, count)
        }
    }

    /// Replaces the channel's options (a later open with options). Messages the old options had
    /// removed stay removed.
    func update(options: ChannelOptions) throws {
        try writer.withLock { w in
            var descriptor = w.descriptor
            descriptor.retention = options.retentionUnits
            descriptor.limit = options.limit.map { UInt64($0) }
            guard descriptor != w.descriptor else { return }
            var head = w.head
            head.floor = HistoryQuery.floor(head: head, retention: w.descriptor.retention, now: history.clock.now())
            var count = 0
            if let limit = descriptor.limit {
                (head.floor, count) = try Self.limitFloor(in: try history.engine.snapshot(), keys: keys,
                                                          floor: head.floor, limit: limit)
            }
            var batch = WriteBatch()
            Catalog.put(CatalogEntry(id: keys.id, payload: descriptor.encoded), kind: .channel, name: keys.name, into: &batch)
            batch.putRaw(headKey, head.encoded)
            try history.engine.write(batch)
            w.head = head
            w.descriptor = descriptor
            w.count = count
            retention.withLock { $0 = descriptor.retention }
            history.rules.set(keys.id, .init(floor: head.floor, retention: descriptor.retention,
                                             limited: descriptor.limit != nil))
        }
    }

    // MARK: Subscribers

    /// Adds a subscriber; throws ``StrataError/closed`` if the store has closed, or the engine's
    /// failure if it failed.
    func subscribe(_ subscriber: Subscriber) throws -> Int {
        if let e = history.engine.failure { throw e }
        return try subscribers.withLock { s in
            if let e = s.failure { throw e }
            guard !s.closed else { throw StrataError.closed }
            let id = s.nextId
            s.nextId += 1
            s.byId[id] = subscriber
            subscriberCount.store(s.byId.count, ordering: .relaxed)
            return id
        }
    }

    /// The number of live subscribers.
    var subscriberCountForTesting: Int { subscriberCount.load(ordering: .relaxed) }

    func unsubscribe(_ id: Int) {
        subscribers.withLock { s in
            s.byId[id] = nil
            subscriberCount.store(s.byId.count, ordering: .relaxed)
        }
    }

    /// Hands committed messages to every subscriber (called under `writer`, so in commit order).
    private func deliver(_ published: PublishedMessages) {
        let current = subscribers.withLock { Array($0.byId) }
        for (id, subscriber) in current where !subscriber.deliver(published) {
            unsubscribe(id)
        }
    }

    func storeDidClose() {
        let all = subscribers.withLock { s -> [Subscriber] in
            s.closed = true
            defer { s.byId.removeAll() }
            subscriberCount.store(0, ordering: .relaxed)
            return Array(s.byId.values)
        }
        for s in all { s.finish(nil) }
    }

    func storeDidFail(_ error: StrataError) {
        let all = subscribers.withLock { s -> [Subscriber] in
            if s.failure == nil { s.failure = error }
            defer { s.byId.removeAll() }
            subscriberCount.store(0, ordering: .relaxed)
            return Array(s.byId.values)
        }
        for s in all { s.finish(error) }
    }
}
