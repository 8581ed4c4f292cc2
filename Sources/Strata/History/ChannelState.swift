import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The shared state of one open channel (every ``Channel`` handle of it uses the same object):
/// its id and keys, its options, and the writer state that keeps timetoken order equal to commit
/// order.
///
/// Publishes and deletions of a channel are serialized by `writer` (a ``CollectionLock``), held
/// from the timetoken allocation through the commit (by a ``Transaction`` until it commits): a
/// reader paging by timetoken never sees a message appear below one it has already seen in the
/// same channel. Readers read the channel's head from their snapshot. Live messages are streams of
/// the store's ``CommitBroadcaster``.
final class ChannelState: CollectionState {
    let keys: ChannelKeys
    let typeName: String
    let history: HistoryStoreState
    let broadcaster: CommitBroadcaster
    let headKey: [UInt8]
    /// The channel's keys in keyspace 11, for replication (FORMAT.md §15.7).
    let replica: ChannelReplicaKeys
    /// Bumped when the outbox grows (a replicating channel's publish or deletion).
    let outboxSignal = ReplicationSignal()

    struct Writer {
        var head: ChannelHead
        var descriptor: ChannelDescriptor
        /// With a limit: the number of committed messages at or above `head.floor`, never above
        /// the limit after a publish. Without a limit: unused.
        var count: Int
        /// The timetokens of messages staged and not sealed yet (a transaction's publishes), in
        /// order; ``seal(_:into:)`` moves the floor for them and writes the head.
        var staged: [UInt64] = []
        /// The records of `staged` when a transaction published them (for its handle's reads);
        /// empty outside a transaction.
        var stagedValues: [[UInt8]] = []
    }

    let writer: CollectionLock<Writer>
    /// The retention readers apply (a copy of the descriptor's, changed under `writer`).
    let retention: Mutex<UInt64?>
    /// The descriptor, for readers (a copy of the writer's, changed under `writer`).
    let publishedDescriptor: Mutex<ChannelDescriptor>
    /// The head read last, with the sequence of the snapshot it was read in. The engine commits
    /// with increasing sequences only, so every snapshot of that sequence reads the same head:
    /// readers at an unchanged sequence (no commit since) skip the point read.
    private let lastHead = Mutex<(sequence: UInt64, head: ChannelHead)?>(nil)

    /// Messages a commit of the channel adds, for subscribers: their timetokens and records.
    struct Messages: CommitChange {
        let channelID: UInt64
        /// The channel's name and message type (what push subscriptions match and decode).
        var name: String = ""
        var typeName: String = ""
        let timetokens: [UInt64]
        let values: [[UInt8]]
    }

    init(name: String, entry: CatalogEntry, history: HistoryStoreState, broadcaster: CommitBroadcaster) throws {
        let descriptor = try ChannelDescriptor(decoding: entry.payload, channel: name)
        keys = ChannelKeys(name: name, id: entry.id)
        typeName = descriptor.typeName
        self.history = history
        self.broadcaster = broadcaster
        headKey = ChannelHead.key(entry.id)
        replica = ChannelReplicaKeys(channelID: entry.id)
        let snapshot = try history.engine.snapshot()
        var head = try ChannelHead.read(entry.id, in: snapshot)
        var count = 0
        if let limit = descriptor.limit {
            let stored = head
            (head.floor, count) = try Self.limitFloor(in: snapshot, keys: keys, floor: head.floor, limit: limit)
            if head != stored {
                var batch = CommitBatch()
                batch.records.putRaw(headKey, head.encoded)
                try history.engine.commit(batch)
            }
        }
        writer = CollectionLock(Writer(head: head, descriptor: descriptor, count: count), what: "channel \"\(name)\"")
        retention = Mutex(descriptor.retention)
        publishedDescriptor = Mutex(descriptor)
        history.rules.set(entry.id, .init(floor: head.floor, retention: descriptor.retention, limited: descriptor.limit != nil))
    }

    /// The floor that keeps the newest `limit` messages at or above `floor`, and how many
    /// messages are at or above it. Reads at most `limit` keys.
    static func limitFloor(in snapshot: Snapshot, keys: ChannelKeys, floor: UInt64,
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

    var descriptor: ChannelDescriptor { publishedDescriptor.withLock { $0 } }

    /// The oldest timetoken readers of `snapshot` (a snapshot of `history.engine`) see.
    func floor(in snapshot: Snapshot) throws -> UInt64 {
        HistoryQuery.floor(head: try head(in: snapshot), retention: retention.withLock { $0 }, now: history.clock.now())
    }

    /// The channel's head in `snapshot` (of `history.engine`), from `lastHead` when it was read
    /// at the same sequence.
    func head(in snapshot: Snapshot) throws -> ChannelHead {
        let sequence = snapshot.sequence
        if let last = lastHead.withLock({ $0 }), last.sequence == sequence { return last.head }
        let head = try ChannelHead.read(keys.id, in: snapshot)
        lastHead.withLock { $0 = (sequence, head) }
        return head
    }

    // MARK: Writes

    /// Commits `values` (encoded records) as consecutive new messages; returns the first
    /// timetoken.
    func publish(_ values: [[UInt8]]) throws -> UInt64 {
        precondition(!values.isEmpty, "publish of no messages")
        return try writer.withLock { w in
            var staged = w
            var batch = CommitBatch()
            let first = try stagePublish(&staged, values, into: &batch)
            try seal(&staged, into: &batch)
            try history.engine.commit(batch)
            let floorChanged = staged.head.floor != w.head.floor
            w = staged
            if floorChanged { publishRules(w) }
            if w.descriptor.replicated { outboxSignal.bump() }
            return first
        }
    }

    /// Adds `values` as new messages to `batch` with newly allocated consecutive timetokens;
    /// returns the first. The head is written by ``seal(_:into:)``.
    func stagePublish(_ w: inout Writer, _ values: [[UInt8]], into batch: inout CommitBatch) throws -> UInt64 {
        let k = values.count
        let first = try history.clock.allocate(k)
        // A replicating channel's publishes are provisional: each carries an upload id and has an
        // outbox entry, in the same batch (§15.7).
        let values = w.descriptor.replicated ? stageOutbox(values, first: first, into: &batch) : values
        var suffix: [UInt8] = []
        suffix.reserveCapacity(9)
        var tt = first
        var timetokens: [UInt64] = []
        timetokens.reserveCapacity(k)
        for v in values {
            MessageRecord.encodeTimetoken(tt, into: &suffix)
            batch.records.putRaw(keys.prefix, suffix, v)
            timetokens.append(tt)
            tt &+= 1
        }
        w.staged += timetokens
        if TransactionScope.current != nil { w.stagedValues += values }
        if broadcaster.wantsChanges(of: history.engine, kind: .channel, name: keys.name) {
            batch.changes.append(Messages(channelID: keys.id, name: keys.name, typeName: typeName, timetokens: timetokens, values: values))
        }
        return first
    }

    /// Moves the head over the staged messages (the last timetoken, and the floor that the limit
    /// or retention gives) and adds the head record to `batch`.
    func seal(_ w: inout Writer, into batch: inout CommitBatch) throws {
        guard let last = w.staged.last else { return }
        var head = w.head
        head.last = last
        var count = w.count
        if let limit = w.descriptor.limit {
            (head.floor, count) = try advance(floor: head.floor, count: w.count, adding: w.staged, limit: limit)
        } else if let retention = w.descriptor.retention {
            // Persist the retention floor too, so that expired messages stay gone across a
            // reopen with a clock that went back.
            head.floor = HistoryQuery.floor(head: head, retention: retention, now: history.clock.now())
        }
        batch.records.putRaw(headKey, head.encoded)
        w.head = head
        w.count = count
        w.staged = []
        w.stagedValues = []
    }

    /// Tells the compaction filter the floor and retention of the committed writer state.
    func publishRules(_ w: Writer) {
        history.rules.set(keys.id, .init(floor: w.head.floor, retention: w.descriptor.retention,
                                         limited: w.descriptor.limit != nil))
    }

    /// The floor and count after adding the messages `new` (ascending timetokens, all above every
    /// committed one) to a limited channel whose `count` committed messages are at or above `floor`.
    private func advance(floor: UInt64, count: Int, adding new: [UInt64], limit: UInt64) throws -> (UInt64, Int) {
        let total = UInt64(count) + UInt64(new.count)
        guard total > limit else { return (floor, Int(total)) }
        let excess = total - limit  // the oldest messages at or above the floor that fall out
        if excess >= UInt64(count) {
            // Every committed message falls out, and some new ones too.
            return (new[Int(excess - UInt64(count))], Int(limit))
        }
        let snapshot = try history.engine.snapshot()
        let tts = try HistoryQuery.timetokens(in: snapshot, keys: keys, lower: floor, count: Int(excess) + 1)
        if tts.count == Int(excess) + 1 { return (tts[Int(excess)], Int(limit)) }
        // The count was off (it cannot be, unless the files changed under the store): recount.
        let exact = try HistoryQuery.count(in: snapshot, keys: keys, lower: floor)
        return try advance(floor: floor, count: exact, adding: new, limit: limit)
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
            var batch = CommitBatch()
            if w.descriptor.replicated {
                try stageReplicatedDeletion(&w, lower: range.lower, upper: range.upper, into: &batch)
            }
            if range.lower == 0 && range.upper == nil {
                batch.records.deleteRangeRaw(keys.prefix, keys.end)
            } else {
                batch.records.deleteRangeRaw(keys.key(range.lower), range.upper.map(keys.key) ?? keys.end)
            }
            try history.engine.commit(batch)
            w.count = max(0, count)
            if w.descriptor.replicated { outboxSignal.bump() }
        }
    }

    /// Replaces the channel's options (a later open with options). Messages the old options had
    /// removed stay removed. `authorize` (a session's check) runs before stored options change.
    func update(options: ChannelOptions, authorize: (() throws -> Void)? = nil) throws {
        try writer.withLock { w in
            var descriptor = w.descriptor
            descriptor.retention = options.retentionUnits
            descriptor.limit = options.limit.map { UInt64($0) }
            guard descriptor != w.descriptor else { return }
            try authorize?()
            var head = w.head
            head.floor = HistoryQuery.floor(head: head, retention: w.descriptor.retention, now: history.clock.now())
            var count = 0
            if let limit = descriptor.limit {
                (head.floor, count) = try Self.limitFloor(in: try history.engine.snapshot(), keys: keys,
                                                          floor: head.floor, limit: limit)
            }
            var batch = CommitBatch()
            Catalog.put(CatalogEntry(id: keys.id, payload: descriptor.encoded), kind: .channel, name: keys.name,
                        into: &batch.records)
            batch.records.putRaw(headKey, head.encoded)
            try history.engine.commit(batch)
            w.head = head
            w.descriptor = descriptor
            w.count = count
            retention.withLock { $0 = descriptor.retention }
            publishedDescriptor.withLock { $0 = descriptor }
            publishRules(w)
        }
    }

    // MARK: Subscribers

    /// A stream of the messages of every later commit of the channel, made by `decode`. It starts
    /// under the writer lock, after the last commit of the channel, so it misses nothing.
    func subscribe<Element: Sendable>(
        bufferSize: Int, decode: @escaping @Sendable (_ timetoken: UInt64, _ record: UnsafeRawBufferPointer) throws -> Element
    ) throws -> AsyncThrowingStream<Element, any Error> {
        try writer.withLock { _ in
            if let e = history.engine.failure { throw e }
            let after = try history.engine.snapshot().sequence
            let id = keys.id
            let name = keys.name
            return try broadcaster.subscribe(
                after: after, buffering: .bounded(bufferSize),
                overflow: { "channel \"\(name)\": a subscriber fell more than \(bufferSize) messages behind" }
            ) { commit in
                var out: [Element] = []
                for change in commit.changes {
                    guard let messages = change as? Messages, messages.channelID == id else { continue }
                    for (tt, value) in zip(messages.timetokens, messages.values) {
                        out.append(try value.withUnsafeBytes { try decode(tt, $0) })
                    }
                }
                return out
            }
        }
    }

    func storeDidClose() {}

    func storeDidFail(_ error: StrataError) {}
}
