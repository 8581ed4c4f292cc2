@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a replicating channel does with its outbox and with what it pulls (FORMAT.md §15.7,
/// Gateway/PROTOCOL.md "Channels"). The gateway orders a channel: a message published here is
/// provisional (at the timetoken this store's clock gave it, with an upload id) until the pull
/// brings the gateway's copy, which replaces it in one commit.
extension ChannelState {
    /// A change of the gateway's channel, in the order of its change feed.
    enum PulledChange: Sendable {
        /// A message at its final timetoken: its record (no provisional flag), and the upload id
        /// it was published with when that id is one this store could have made.
        case message(timetoken: UInt64, uploadID: [UInt8]?, record: [UInt8])
        /// The messages with `from ≤ timetoken < until` were deleted.
        case deletion(from: UInt64, until: UInt64)
    }

    /// One entry of the outbox, with the provisional record of a message entry.
    struct OutboxItem: Sendable {
        let localTimetoken: UInt64
        let entry: ChannelOutboxEntry
        /// The provisional message record (nil for a deletion).
        let record: [UInt8]?
    }

    /// Adds an outbox entry for each new message of a replicating channel to `batch`; returns the
    /// provisional records (each with a new random upload id).
    func stageOutbox(_ values: [[UInt8]], first: UInt64, into batch: inout CommitBatch) -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        var out: [[UInt8]] = []
        out.reserveCapacity(values.count)
        for (i, value) in values.enumerated() {
            let tt = first + UInt64(i)
            let id = RandomID.bytes(MessageRecord.uploadIDLength, using: &generator)
            out.append(MessageRecord.provisional(value, uploadID: id))
            stageOutboxEntry(tt, uploadID: id, into: &batch)
        }
        return out
    }

    /// Adds the outbox entry of the provisional message at `tt` and its upload id's index entry
    /// to `batch`.
    func stageOutboxEntry(_ tt: UInt64, uploadID id: [UInt8], into batch: inout CommitBatch) {
        batch.records.putRaw(replica.outbox(tt), ChannelOutboxEntry.message(uploadID: id).encoded)
        batch.records.putRaw(replica.upload(id), ReplicaCounter.encoded(tt))
    }

    /// Adds the removal of the outbox entry at `tt` (and of its upload id's index entry, for a
    /// message) to `batch`.
    func stageOutboxRemoval(_ tt: UInt64, uploadID id: [UInt8]?, into batch: inout CommitBatch) {
        batch.records.deleteRaw(replica.outbox(tt))
        if let id { batch.records.deleteRaw(replica.upload(id)) }
    }

    /// Marks the channel as replicating (catalog payload layout 2), first turning every message it
    /// holds into a provisional one with an outbox entry, so that its history reaches the gateway
    /// too. Done in commits of at most `chunk` messages under the writer lock; the mark is in the
    /// last, so a crash midway leaves a channel that is converted further at the next start.
    func startReplicating(chunk: Int = 1_000) throws {
        // Each chunk resumes after the last message the one before converted (publishes between
        // chunks come later in timetoken order), so a conversion reads each message once.
        var resume: UInt64?
        while true {
            let done = try writer.withLock { w -> Bool in
                if w.descriptor.replicated { return true }
                let snapshot = try history.engine.snapshot()
                let lower = resume.map { max($0, w.head.floor) } ?? w.head.floor
                let cursor = snapshot.cursor(lower: keys.key(lower), upper: keys.end)
                var batch = CommitBatch()
                var converted = 0
                var reachedEnd = true
                var generator = SystemRandomNumberGenerator()
                while try cursor.next() {
                    let value = cursor.value
                    if value.count > 0, value[0] & MessageRecord.isProvisional != 0 { continue }
                    if converted == chunk { reachedEnd = false; break }
                    guard let tt = cursor.withKey({ MessageRecord.timetoken(ofKey: $0, prefixLength: keys.prefix.count) }),
                          value.count > 0 else {
                        throw StrataError.corrupted(file: "channel \"\(keys.name)\"", offset: 0,
                                                    reason: "bad message key \(TupleKey.describe(cursor.key)) or empty record")
                    }
                    let id = RandomID.bytes(MessageRecord.uploadIDLength, using: &generator)
                    batch.records.putRaw(keys.key(tt), MessageRecord.provisional(Array(value), uploadID: id))
                    stageOutboxEntry(tt, uploadID: id, into: &batch)
                    converted += 1
                    resume = tt &+ 1
                }
                var descriptor = w.descriptor
                if reachedEnd {
                    descriptor.replicated = true
                    Catalog.put(CatalogEntry(id: keys.id, payload: descriptor.encoded), kind: .channel, name: keys.name,
                                into: &batch.records)
                }
                if !batch.records.isEmpty { try history.engine.commit(batch) }
                if reachedEnd {
                    w.descriptor = descriptor
                    publishedDescriptor.withLock { $0 = descriptor }
                }
                return reachedEnd
            }
            if done { return }
        }
    }

    /// The first `limit` outbox entries with a local timetoken above `after`, oldest first.
    func outbox(after: UInt64?, limit: Int) throws -> [OutboxItem] {
        let snapshot = try history.engine.snapshot()
        let lower = after.map { $0 == .max ? replica.outboxEnd : replica.outbox($0 + 1) } ?? replica.outboxStart
        let cursor = snapshot.cursor(lower: lower, upper: replica.outboxEnd)
        var items: [OutboxItem] = []
        while items.count < limit, try cursor.next() {
            let what = "channel \"\(keys.name)\" outbox"
            guard let tt = cursor.withKey({ replica.localTimetoken(ofOutboxKey: $0) }) else {
                throw StrataError.corrupted(file: what, offset: 0, reason: "bad outbox key \(TupleKey.describe(cursor.key))")
            }
            let entry = try ChannelOutboxEntry(decoding: cursor.value, what: "\(what) entry \(tt)")
            var record: [UInt8]?
            if case .message = entry {
                // A message withdrawn by a local deletion has no record: the entry is dropped by the
                // replicator.
                record = try snapshot.get(keys.key(tt))
            }
            items.append(OutboxItem(localTimetoken: tt, entry: entry, record: record))
        }
        return items
    }

    /// Removes outbox entries (an uploaded deletion, a message the gateway refused for good, a
    /// message whose record a deletion removed). A refused message stays in the local history,
    /// provisional.
    func removeFromOutbox(_ items: [OutboxItem]) throws {
        guard !items.isEmpty else { return }
        try writer.withLock { _ in
            var batch = CommitBatch()
            for item in items {
                var id: [UInt8]?
                if case .message(let uploadID) = item.entry { id = uploadID }
                stageOutboxRemoval(item.localTimetoken, uploadID: id, into: &batch)
            }
            try history.engine.commit(batch)
        }
    }

    /// The pull checkpoint kept for the gateway database at `url` (0: from the start).
    func pullCheckpoint(url: String) throws -> UInt64 {
        let snapshot = try history.engine.snapshot()
        guard let bytes = try snapshot.get(replica.checkpoint(url)) else { return 0 }
        return try ReplicaCounter.decode(bytes, what: "channel \"\(keys.name)\" pull checkpoint")
    }

    /// The newest final timetoken applied (0 for none).
    func lastFinal(in snapshot: Snapshot) throws -> UInt64 {
        guard let bytes = try snapshot.get(replica.lastFinal) else { return 0 }
        return try ReplicaCounter.decode(bytes, what: "channel \"\(keys.name)\" last final timetoken")
    }

    /// Applies changes pulled from the gateway, in its feed order, and saves the pull checkpoint
    /// `since` for `url`, in one commit: a pulled copy of a message of this store's outbox
    /// replaces the provisional one (which leaves no trace: record, outbox entry and upload id go
    /// in the same commit); a provisional message at a pulled timetoken moves to a new local one;
    /// a deletion removes the final messages of its range and keeps the provisional ones.
    /// Messages new to this store go to the live subscribers.
    ///
    /// `url` nil: the finalization of uploaded messages by a replication that does not pull (no
    /// checkpoint).
    func applyPulled(_ changes: [PulledChange], checkpoint url: String?, since: UInt64) throws {
        try writer.withLock { w in
            let snapshot = try history.engine.snapshot()
            var batch = CommitBatch()
            var lastFinal = try lastFinal(in: snapshot)
            var newTimetokens: [UInt64] = []
            var newValues: [[UInt8]] = []
            // The provisional messages at the timetokens this batch puts, found with one scan of
            // the outbox over the batch's span (not a point read per message).
            var atPulled = Set<UInt64>()
            let pulled = changes.compactMap { change -> UInt64? in
                if case .message(let tt, _, _) = change { return tt }
                return nil
            }
            if let lo = pulled.min(), let hi = pulled.max() {
                let cursor = snapshot.cursor(lower: replica.outbox(lo), upper: hi == .max ? replica.outboxEnd : replica.outbox(hi + 1))
                while try cursor.next() {
                    guard let tt = cursor.withKey({ replica.localTimetoken(ofOutboxKey: $0) }) else { continue }
                    atPulled.insert(tt)
                }
            }
            // Provisional messages moved or finalized in this batch, by their old timetoken.
            var gone = Set<UInt64>()
            var moved: [UInt64: (id: [UInt8], record: [UInt8])] = [:]
            // The head's `last` covers every timetoken the clock gives, so that a reopen's clock
            // never gives one twice (§15.4).
            var headChanged = false
            for change in changes {
                switch change {
                case .message(let tt, let uploadID, let record):
                    var own = false
                    if let uploadID, let bytes = try snapshot.get(replica.upload(uploadID)) {
                        // Its provisional place, or the one it moved to earlier in this batch.
                        var local: UInt64? = try ReplicaCounter.decode(bytes, what: "channel \"\(keys.name)\" upload id")
                        if let at = local, gone.contains(at) { local = moved.first(where: { $0.value.id == uploadID })?.key }
                        if let local {
                            batch.records.deleteRaw(keys.key(local))
                            stageOutboxRemoval(local, uploadID: uploadID, into: &batch)
                            gone.insert(local)
                            moved[local] = nil
                        }
                        own = true
                    }
                    if atPulled.contains(tt), !gone.contains(tt), let bytes = try snapshot.get(replica.outbox(tt)) {
                        let entry = try bytes.withUnsafeBytes { try ChannelOutboxEntry(decoding: $0, what: "channel \"\(keys.name)\" outbox entry \(tt)") }
                        if case .message(let id) = entry, let provisional = try snapshot.get(keys.key(tt)) {
                            // A provisional message sits at the gateway's timetoken: it moves up.
                            let to = try history.clock.allocate(1)
                            w.head.last = max(w.head.last, to)
                            headChanged = true
                            batch.records.putRaw(keys.key(to), provisional)
                            stageOutboxRemoval(tt, uploadID: nil, into: &batch)
                            stageOutboxEntry(to, uploadID: id, into: &batch)
                            gone.insert(tt)
                            moved[to] = (id, provisional)
                        }
                    }
                    batch.records.putRaw(keys.key(tt), record)
                    lastFinal = max(lastFinal, tt)
                    if !own {
                        newTimetokens.append(tt)
                        newValues.append(record)
                    }
                case .deletion(let from, let until):
                    guard from < until else { continue }
                    // The provisional messages of the range stay: the gateway's deletion is of
                    // the messages it ordered.
                    var keep: [(UInt64, [UInt8])] = []
                    let cursor = snapshot.cursor(lower: replica.outbox(from), upper: replica.outbox(until))
                    while try cursor.next() {
                        guard let tt = cursor.withKey({ replica.localTimetoken(ofOutboxKey: $0) }), !gone.contains(tt) else { continue }
                        let entry = try ChannelOutboxEntry(decoding: cursor.value, what: "channel \"\(keys.name)\" outbox entry \(tt)")
                        guard case .message = entry, let record = try snapshot.get(keys.key(tt)) else { continue }
                        keep.append((tt, record))
                    }
                    for (tt, m) in moved where tt >= from && tt < until { keep.append((tt, m.record)) }
                    batch.records.deleteRangeRaw(keys.key(from), keys.key(until))
                    for (tt, record) in keep { batch.records.putRaw(keys.key(tt), record) }
                }
            }
            if let url { batch.records.putRaw(replica.checkpoint(url), ReplicaCounter.encoded(since)) }
            batch.records.putRaw(replica.lastFinal, ReplicaCounter.encoded(lastFinal))
            if headChanged { batch.records.putRaw(headKey, w.head.encoded) }
            if !newTimetokens.isEmpty, broadcaster.wantsChanges(of: history.engine, kind: .channel, name: keys.name) {
                batch.changes.append(Messages(channelID: keys.id, name: keys.name, typeName: typeName,
                                              timetokens: newTimetokens, values: newValues))
            }
            try history.engine.commit(batch)
            try refreshLimit(&w)
        }
    }

    /// With a limit, recounts the floor from the files after a replicated write (pulled
    /// messages need not be newer than the provisional ones, so the publish path's arithmetic
    /// does not apply), and writes the head if it moved.
    func refreshLimit(_ w: inout Writer) throws {
        guard let limit = w.descriptor.limit else { return }
        let (floor, count) = try Self.limitFloor(in: try history.engine.snapshot(), keys: keys, floor: w.head.floor, limit: limit)
        w.count = count
        guard floor != w.head.floor else { return }
        var head = w.head
        head.floor = floor
        var batch = CommitBatch()
        batch.records.putRaw(headKey, head.encoded)
        try history.engine.commit(batch)
        w.head = head
        publishRules(w)
    }

    /// A deletion in a replicating channel: the local deletion, plus an outbox entry for the
    /// range of final messages it covers (up to the newest final timetoken this store holds, so
    /// that it never deletes on the gateway what this store has not seen), and the provisional
    /// messages of the range leave the outbox (they were deleted before the gateway had them).
    func stageReplicatedDeletion(_ w: inout Writer, lower: UInt64, upper: UInt64?, into batch: inout CommitBatch) throws {
        let snapshot = try history.engine.snapshot()
        let until = min(upper ?? .max, try lastFinal(in: snapshot) &+ 1)
        let cursor = snapshot.cursor(lower: replica.outbox(lower), upper: upper.map(replica.outbox) ?? replica.outboxEnd)
        while try cursor.next() {
            guard let tt = cursor.withKey({ replica.localTimetoken(ofOutboxKey: $0) }) else { continue }
            let entry = try ChannelOutboxEntry(decoding: cursor.value, what: "channel \"\(keys.name)\" outbox entry \(tt)")
            guard case .message(let id) = entry else { continue }
            stageOutboxRemoval(tt, uploadID: id, into: &batch)
        }
        if lower < until {
            let at = try history.clock.allocate(1)
            batch.records.putRaw(replica.outbox(at), ChannelOutboxEntry.deletion(from: lower, until: until).encoded)
            w.head.last = max(w.head.last, at)
            batch.records.putRaw(headKey, w.head.encoded)
        }
    }
}
