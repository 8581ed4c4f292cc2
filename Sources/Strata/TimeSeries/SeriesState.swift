import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The shared state of one open time series: its id, head, options and author table. Every
/// ``TimeSeries`` handle of the series in a store uses the one instance.
///
/// Locking: `writer` (a ``CollectionLock``) serializes everything that changes the series
/// (sequence assignment and the commit), so events are numbered and committed in one order; a
/// single write holds it across its commit, a ``Transaction`` from its first write of the series
/// until it commits. `published` is what readers take (briefly): the head as of each of the last
/// few commits of the series, each with the commit's sequence. A commit publishes its head under
/// the engine's commit lock, just before it becomes visible (``CommitBatch/onVisible``), so a
/// reader pairs a snapshot with the newest head published at or below the snapshot's sequence:
/// the two always agree, and a reader that sees any part of a transaction sees the series' part.
/// Subscribers are streams of the store's ``CommitBroadcaster``.
package final class SeriesState: CollectionState {
    let engine: Engine
    /// The store's executor, for the `async` twins.
    let executor: StoreExecutor
    let broadcaster: CommitBroadcaster
    /// The store's running replications, which its close stops.
    let replications: ReplicationRegistry
    let id: UInt64
    let path: String
    let typeName: String
    private let clock: @Sendable () -> Date
    private let principal: String
    private let retention: SeriesRetention
    private let prefix: [UInt8]
    private let indexPrefix: [UInt8]

    struct Writer {
        var payload: SeriesPayload
        var head: SeriesHead
        /// The timestamp of the event at `head.cutoff`, when known (saves reads under `.last`).
        var cutoffTimestamp: Int64?
        var authorIndex: [String: UInt64]
        var bufferSize: Int
        /// The records a transaction holding the lock has staged and not committed yet, by
        /// sequence (empty outside a transaction): an edit or the retained range may need them.
        var uncommitted: [UInt64: [UInt8]] = [:]
        /// The record of the latest event, once this open wrote one.
        var latest: [UInt8]?
        var valueScratch: [UInt8] = []
    }

    /// The series as of one commit.
    struct Version {
        var head: SeriesHead
        var decoding: SeriesDecoding
        /// The record of the latest event.
        var latest: [UInt8]?
        var payload: SeriesPayload
        /// The sequence of the commit that made this version (0: as recovered at open).
        var asOf: UInt64
    }

    private struct Published {
        /// Oldest first; at most `depth`.
        var versions: [Version]
        var closed = false
        static let depth = 4

        var current: Version { versions[versions.count - 1] }

        /// The newest version made at or below `sequence`, if still kept.
        func version(at sequence: UInt64) -> Version? {
            versions.last { $0.asOf <= sequence }
        }

        mutating func add(_ v: Version) {
            if versions.count == Self.depth { versions.removeFirst() }
            versions.append(v)
        }
    }

    /// The change a commit of the series makes, for subscribers: its new records in order.
    struct Events: CommitChange {
        let seriesID: UInt64
        /// The series' path and value type (what push subscriptions match and decode).
        var path: String = ""
        var typeName: String = ""
        let first: UInt64
        let records: [[UInt8]]
        let decoding: SeriesDecoding
    }

    let writer: CollectionLock<Writer>
    private let published: Mutex<Published>
    /// Bumped after local appends and edits of a replicating series, for its push.
    let uploadSignal = ReplicationSignal()

    init(store: Store, path: String, entry: CatalogEntry, payload: SeriesPayload, retention: SeriesRetention) throws {
        self.engine = store.engine
        self.executor = store.executor
        self.broadcaster = store.broadcaster
        self.replications = store.replications
        self.id = entry.id
        self.path = path
        self.typeName = payload.typeName
        self.clock = store.options.clock
        self.principal = store.options.principal
        self.retention = retention
        self.prefix = EventRecord.seriesPrefix(entry.id)
        self.indexPrefix = EventRecord.editIndexPrefix(entry.id)
        let recovered = try Self.recover(snapshot: store.engine.snapshot(), id: entry.id, payload: payload, path: path)
        var index: [String: UInt64] = [:]
        for (i, a) in payload.authors.enumerated() where index[a] == nil { index[a] = UInt64(i) }
        writer = CollectionLock(Writer(payload: payload, head: recovered.head, cutoffTimestamp: nil, authorIndex: index,
                                       bufferSize: TimeSeriesOptions().subscriberBufferSize),
                                what: "time series \"\(path)\"")
        published = Mutex(Published(versions: [Version(
            head: recovered.head, decoding: SeriesDecoding(base: payload.baseTimestamp ?? 0, authors: payload.authors),
            latest: recovered.latest, payload: payload, asOf: 0)]))
        retention.setCutoff(recovered.head.cutoff, of: entry.id)
        retention.chunking.register(series: entry.id, typeName: payload.typeName)
    }

    // MARK: Recovery

    /// The head of a series from its records and catalog payload (FORMAT.md §14.4): next and
    /// latest from the last record, the cutoff as the largest of the stored one, the first record
    /// present, and what the stored retained range gives.
    package static func recover(snapshot: Snapshot, id: UInt64, payload: SeriesPayload, path: String)
        throws -> (head: SeriesHead, latest: [UInt8]?) {
        let prefix = EventRecord.seriesPrefix(id)
        func bad(_ why: String) -> StrataError { .corrupted(file: "time series \"\(path)\"", offset: 0, reason: why) }
        var head = SeriesHead(next: payload.cutoff, cutoff: payload.cutoff, latestTimestamp: nil,
                              lastEditSequence: payload.lastEditSequence)
        var latest: [UInt8]?
        // The last event, whatever its form (an event record, or the last event of a chunk).
        let kind = SeriesChunk.valueKind(typeName: payload.typeName)
        var last = try SeriesEventCursor(snapshot: snapshot, prefix: prefix, from: 0, through: Int64.max - 1,
                                         reverse: true, path: path, valueKind: kind)
        if try last.next() {
            let s = UInt64(last.sequence)
            let record = last.withRecord { Array($0) }
            guard let h = record.withUnsafeBytes({ EventRecord.decode($0) }) else { throw bad("event \(s): malformed record") }
            head.next = max(head.next, s + 1)
            if s + 1 == head.next {
                latest = record
                head.latestTimestamp = (payload.baseTimestamp ?? 0) &+ Int64(truncatingIfNeeded: h.timestampDelta)
            }
            var first = try SeriesEventCursor(snapshot: snapshot, prefix: prefix, from: 0, through: Int64.max - 1,
                                              reverse: false, path: path, valueKind: kind)
            if try first.next() {
                head.cutoff = max(head.cutoff, UInt64(first.sequence))
            }
        }
        head.cutoff = min(head.cutoff, head.next)
        if latest == nil { head.cutoff = head.next }
        let reader = SeriesReader(snapshot: snapshot, id: id, head: head, baseTimestamp: payload.baseTimestamp ?? 0, path: path,
                                  valueKind: kind)
        head.cutoff = try retainedCutoff(payload: payload, head: head, reader: reader)
        return (head, latest)
    }

    /// The first sequence `payload`'s retained range keeps, given the head (by binary search over
    /// timestamps for a time limit).
    static func retainedCutoff(payload: SeriesPayload, head: SeriesHead, reader: SeriesReader) throws -> UInt64 {
        var cutoff = head.cutoff
        guard head.next > cutoff else { return cutoff }
        if let n = payload.retainedCount, head.next > UInt64(n) { cutoff = max(cutoff, head.next - UInt64(n)) }
        if let ms = payload.retainedMilliseconds, let latest = head.latestTimestamp {
            var h = head
            h.cutoff = cutoff
            let r = SeriesReader(snapshot: reader.snapshot, id: reader.id, head: h, baseTimestamp: reader.baseTimestamp, path: reader.path,
                                 valueKind: reader.valueKind)
            cutoff = max(cutoff, UInt64(try r.firstSequence(atLeast: SeriesTime.minus(latest, ms))))
        }
        return min(cutoff, head.next - 1)
    }

    // MARK: Reading

    /// A reader of the series as of now, with what decoding its records needs and the sequence of
    /// the snapshot it reads.
    func reader() throws -> (SeriesReader, SeriesDecoding, sequence: UInt64) {
        while true {
            // Snapshot first, then the head published at or below it (never the other way round:
            // heads are published under the engine's lock).
            let snapshot = try engine.snapshot()
            let version = try published.withLock { p -> Version? in
                if p.closed { throw StrataError.closed }
                return p.version(at: snapshot.sequence)
            }
            // Nil only when several commits of the series came between the two reads: try again.
            guard let version else { continue }
            return (SeriesReader(snapshot: snapshot, id: id, head: version.head, baseTimestamp: version.decoding.base,
                                 path: path, valueKind: SeriesChunk.valueKind(typeName: typeName)), version.decoding, snapshot.sequence)
        }
    }

    /// The latest event's sequence and record, if any.
    func latest() throws -> (UInt64, [UInt8], SeriesDecoding)? {
        try published.withLock { p in
            if p.closed { throw StrataError.closed }
            let v = p.current
            guard let record = v.latest else { return nil }
            return (v.head.next - 1, record, v.decoding)
        }
    }

    /// The latest event as the transaction whose staged writer state is `w` sees it: its own
    /// latest write, else the committed latest event.
    func latest(staged w: Writer) throws -> (UInt64, [UInt8], SeriesDecoding)? {
        guard let record = w.latest else { return try latest() }
        return (w.head.next - 1, record, SeriesDecoding(base: w.payload.baseTimestamp ?? 0, authors: w.payload.authors))
    }

    /// The record of event `sequence` as the transaction whose staged writer state is `w` sees it
    /// (staged or committed), or nil if it is not retained there or not written yet.
    func record(_ sequence: UInt64, staged w: Writer) throws -> ([UInt8], SeriesDecoding)? {
        guard sequence >= w.head.cutoff, sequence < w.head.next else { return nil }
        guard let bytes = try w.uncommitted[sequence] ?? storedRecord(sequence) else { return nil }
        return (bytes, SeriesDecoding(base: w.payload.baseTimestamp ?? 0, authors: w.payload.authors))
    }

    /// The head and stored options as of the last commit.
    var status: (head: SeriesHead, payload: SeriesPayload) {
        published.withLock { ($0.current.head, $0.current.payload) }
    }

    // MARK: Writing

    private func now() -> Int64 { SeriesTime.milliseconds(clock()) ?? 0 }

    /// Whether a commit must carry its records as a change (someone subscribes or takes part).
    private var changesWanted: Bool { broadcaster.wantsChanges(of: engine, kind: .timeSeries, name: path) }

    /// Appends `count` events in one batch. `timestamps` gives explicit timestamps (which must not
    /// go back), else each event gets the clock's time, raised to the latest timestamp if the clock
    /// is behind. `encode(i, &out)` appends value `i`'s bytes.
    func append(count: Int, timestamps: [Int64]?, author: String?,
                encode: (Int, inout [UInt8]) throws -> Void) throws -> [EventMetadata] {
        guard count > 0 else { return [] }
        return try write { w, batch in
            try stageAppend(&w, count: count, timestamps: timestamps, author: author, encode: encode, into: &batch)
        }
    }

    /// Appends an edit of `original` with the clock's time (raised to the latest timestamp).
    /// `authorize` (a session's check) is given the original's author before anything is staged.
    func edit(original: UInt64, author: String?, authorize: ((String) throws -> Void)? = nil,
              encode: (inout [UInt8]) throws -> Void) throws -> EventMetadata {
        try write { w, batch in
            try stageEdit(&w, original: original, author: author, authorize: authorize, encode: encode, into: &batch)
        }
    }

    /// One write of the series: `stage` adds its records to a batch and advances a copy of the
    /// writer state, which becomes the state once the batch commits.
    func write<R>(_ stage: (inout Writer, inout CommitBatch) throws -> R) throws -> R {
        try writer.withLock { w in
            var staged = w
            // The staged copy owns the scratch buffer, so that writing it copies nothing.
            w.valueScratch = []
            var batch = CommitBatch()
            let result = try stage(&staged, &batch)
            seal(staged, into: &batch)
            try engine.commit(batch)
            w = staged
            w.uncommitted = [:]
            if w.payload.replication != nil { uploadSignal.bump() }
            return result
        }
    }

    /// `t − base` as a stored timestamp delta (§14.2), modulo 2⁶⁴. A writer's files never give a
    /// new event's timestamp below the base (the base is the first event's, and timestamps never
    /// decrease), so one below it means a damaged base timestamp or latest event: a corruption
    /// naming the catalog entry, not a trap.
    private func timestampDelta(_ t: Int64, base: Int64) throws -> UInt64 {
        guard t >= base else {
            throw StrataError.corrupted(file: "catalog entry time series \"\(path)\"", offset: 0,
                                        reason: "base timestamp \(base) is after \(t), the timestamp of the next event")
        }
        return UInt64(bitPattern: t &- base)
    }

    /// Adds the records of `count` appended events to `batch` and advances `w` as if they
    /// committed (the caller keeps `w` only if the batch commits). See ``append(count:timestamps:author:encode:)``.
    ///
    /// `pulled`: the events come from the gateway (replication), which a reader of a replicated
    /// series takes; every other append needs the right to write the series (``checkLocalWrite(_:)``).
    func stageAppend(_ w: inout Writer, count: Int, timestamps: [Int64]?, author: String?,
                     encode: (Int, inout [UInt8]) throws -> Void, into batch: inout CommitBatch,
                     pulled: Bool = false) throws -> [EventMetadata] {
        guard count > 0 else { return [] }
        if !pulled { try checkLocalWrite(w) }
        let author = author ?? principal
        var times: [Int64] = []
        times.reserveCapacity(count)
        var previous = w.head.latestTimestamp ?? w.payload.baseTimestamp ?? Int64.min
        let clockNow = timestamps == nil ? now() : 0
        for i in 0..<count {
            var t: Int64
            if let timestamps {
                t = timestamps[i]
                if t < previous {
                    throw StrataError.timestampBeforeLatest(latest: SeriesTime.date(previous), given: SeriesTime.date(t))
                }
            } else {
                t = max(clockNow, previous)
            }
            times.append(t)
            previous = t
        }
        var payload = w.payload
        var payloadChanged = false
        let authorIndex: UInt64
        if let a = w.authorIndex[author] {
            authorIndex = a
        } else {
            authorIndex = UInt64(payload.authors.count)
            payload.authors.append(author)
            payloadChanged = true
        }
        if payload.baseTimestamp == nil {
            payload.baseTimestamp = times[0]
            payloadChanged = true
        }
        let base = payload.baseTimestamp ?? 0
        let keepRecords = changesWanted
        // A pulled edit may name an event staged in the same batch: pulled records are kept too.
        let inTransaction = TransactionScope.current != nil || pulled
        var records: [[UInt8]] = []
        let first = w.head.next
        var latest: [UInt8] = []
        // Most values are short: one reservation for the whole call saves growing the buffer.
        batch.records.reserveCapacity(forAdditionalBytes: count * (prefix.count + 24))
        for i in 0..<count {
            let sequence = first + UInt64(i)
            let delta = try timestampDelta(times[i], base: base)
            // Key and record are written straight into the batch.
            let at = try batch.records.putRaw(prefix, key: { EventRecord.appendUInt(sequence, to: &$0) }) { out in
                EventRecord.appendHeader(timestampDelta: delta, author: authorIndex, original: nil, to: &out)
                try encode(i, &out)
            }
            if keepRecords || inTransaction || i == count - 1 {
                let record = Array(batch.records.operations[at])
                if keepRecords { records.append(record) }
                if inTransaction { w.uncommitted[sequence] = record }
                if i == count - 1 { latest = record }
            }
        }
        if payloadChanged {
            Catalog.put(CatalogEntry(id: id, payload: payload.encode()), kind: .timeSeries, name: path, into: &batch.records)
            if w.authorIndex[author] == nil { w.authorIndex[author] = authorIndex }
            w.payload = payload
        }
        w.head.next = first + UInt64(count)
        w.head.latestTimestamp = times[count - 1]
        w.latest = latest
        advanceCutoffReporting(&w, newTimestamps: times, firstNew: first)
        if keepRecords {
            batch.changes.append(Events(seriesID: id, path: path, typeName: typeName, first: first, records: records,
                                        decoding: SeriesDecoding(base: base, authors: w.payload.authors)))
        }
        var result: [EventMetadata] = []
        result.reserveCapacity(count)
        for i in 0..<count {
            result.append(EventMetadata(sequence: first + UInt64(i), milliseconds: times[i], author: author))
        }
        return result
    }

    /// Adds an edit of `original` to `batch` and advances `w` as if it committed.
    ///
    /// `pulledTimestamp`: an edit event from the gateway, at that timestamp (see
    /// ``stageAppend(_:count:timestamps:author:encode:into:pulled:)``).
    func stageEdit(_ w: inout Writer, original: UInt64, author: String?, authorize: ((String) throws -> Void)? = nil,
                   encode: (inout [UInt8]) throws -> Void, into batch: inout CommitBatch,
                   pulledTimestamp: Int64? = nil) throws -> EventMetadata {
        if pulledTimestamp == nil { try checkLocalWrite(w) }
        let author = author ?? principal
        guard original < w.head.next else {
            throw StrataError.invalidArgument(argument: "originalSequence", reason: "time series \"\(path)\": edit of sequence \(original), which does not exist yet (next is \(w.head.next))")
        }
        guard original >= w.head.cutoff else {
            throw StrataError.invalidArgument(argument: "originalSequence", reason: "time series \"\(path)\": edit of sequence \(original), which is no longer retained (first retained is \(w.head.cutoff))")
        }
        guard let bytes = try w.uncommitted[original] ?? storedRecord(original),
              let h = bytes.withUnsafeBytes({ EventRecord.decode($0) }) else {
            throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(original): missing or malformed")
        }
        guard h.original == nil else {
            throw StrataError.invalidArgument(argument: "originalSequence", reason: "time series \"\(path)\": sequence \(original) is an edit event; edits must name an original event")
        }
        if let authorize {
            guard h.author < w.payload.authors.count else {
                throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(original): unknown author")
            }
            try authorize(w.payload.authors[Int(h.author)])
        }
        var t = max(now(), w.head.latestTimestamp ?? Int64.min)
        if let pulledTimestamp {
            guard pulledTimestamp >= w.head.latestTimestamp ?? Int64.min else {
                throw StrataError.timestampBeforeLatest(latest: SeriesTime.date(w.head.latestTimestamp ?? 0),
                                                        given: SeriesTime.date(pulledTimestamp))
            }
            t = pulledTimestamp
        }
        var payload = w.payload
        let authorIndex: UInt64
        if let a = w.authorIndex[author] {
            authorIndex = a
        } else {
            authorIndex = UInt64(payload.authors.count)
            payload.authors.append(author)
        }
        let base = payload.baseTimestamp ?? t
        let sequence = w.head.next
        payload.lastEditSequence = sequence
        payload.cutoff = w.head.cutoff
        w.valueScratch.removeAll(keepingCapacity: true)
        EventRecord.appendHeader(timestampDelta: try timestampDelta(t, base: base), author: authorIndex,
                                 original: (original, h.timestampDelta, h.author), to: &w.valueScratch)
        try encode(&w.valueScratch)
        batch.records.putRaw(EventRecord.key(series: id, sequence: sequence), w.valueScratch)
        batch.records.putRaw(EventRecord.editIndexKey(series: id, original: original, edit: sequence), [])
        Catalog.put(CatalogEntry(id: id, payload: payload.encode()), kind: .timeSeries, name: path, into: &batch.records)
        if w.authorIndex[author] == nil { w.authorIndex[author] = authorIndex }
        w.payload = payload
        w.head.next = sequence + 1
        w.head.latestTimestamp = t
        w.head.lastEditSequence = sequence
        w.latest = w.valueScratch
        if TransactionScope.current != nil || pulledTimestamp != nil { w.uncommitted[sequence] = w.valueScratch }
        advanceCutoffReporting(&w, newTimestamps: [t], firstNew: sequence)
        if changesWanted {
            batch.changes.append(Events(seriesID: id, path: path, typeName: typeName, first: sequence, records: [w.valueScratch],
                                        decoding: SeriesDecoding(base: payload.baseTimestamp ?? 0, authors: payload.authors)))
        }
        return EventMetadata(sequence: sequence, milliseconds: t, author: payload.authors[Int(authorIndex)])
    }

    /// Adds to `batch` the publication of `w` (the writer state after every staged write of the
    /// series), run when the batch becomes visible.
    func seal(_ w: Writer, into batch: inout CommitBatch) {
        let head = w.head
        let payload = w.payload
        let latest = w.latest
        let decoding = SeriesDecoding(base: payload.baseTimestamp ?? 0, authors: payload.authors)
        let id = self.id
        batch.onVisible.append { [self] sequence in
            published.withLock { p in
                p.add(Version(head: head, decoding: decoding, latest: latest ?? p.current.latest, payload: payload,
                              asOf: sequence))
            }
            retention.setCutoff(head.cutoff, of: id)
        }
    }

    /// Advances the cutoff for new events. A failed read (a damaged file) must not fail the
    /// write: the cutoff stays where it was, so retention tries again on the next write, and the
    /// error is reported in `Store.statistics` (`backgroundFailures`, `lastBackgroundError`).
    private func advanceCutoffReporting(_ w: inout Writer, newTimestamps: [Int64], firstNew: UInt64) {
        do {
            try advanceCutoff(&w, newTimestamps: newTimestamps, firstNew: firstNew)
        } catch {
            engine.reportFailure(error as? StrataError
                ?? .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "retention: \(error)"))
        }
    }

    /// Moves the cutoff past what the retained range no longer keeps: O(events discarded).
    private func advanceCutoff(_ w: inout Writer, newTimestamps: [Int64], firstNew: UInt64) throws {
        var cutoff = w.head.cutoff
        // Also on a failed read: the cutoff keeps what was found before it.
        defer { w.head.cutoff = cutoff }
        let next = w.head.next
        if let n = w.payload.retainedCount, next > UInt64(n), next - UInt64(n) > cutoff {
            cutoff = next - UInt64(n)
            w.cutoffTimestamp = nil
        }
        if let ms = w.payload.retainedMilliseconds, let latest = w.head.latestTimestamp {
            let threshold = SeriesTime.minus(latest, ms)
            // Stored events are read by one walk from the cutoff (a chunk is decoded once).
            var stored: SeriesEventCursor?
            while cutoff + 1 < next {
                let t: Int64
                if cutoff >= firstNew {
                    t = newTimestamps[Int(cutoff - firstNew)]
                } else if let cached = w.cutoffTimestamp {
                    t = cached
                } else {
                    var record = w.uncommitted[cutoff]
                    if record == nil {
                        var c = try stored ?? SeriesEventCursor(snapshot: engine.snapshot(), prefix: prefix, from: Int64(cutoff),
                                                                through: Int64(firstNew) - 1, reverse: false, path: path)
                        while try c.next() {
                            if c.sequence >= Int64(cutoff) { break }
                        }
                        if c.sequence == Int64(cutoff) { record = c.withRecord { Array($0) } }
                        stored = c
                    }
                    guard let bytes = record, let h = bytes.withUnsafeBytes({ EventRecord.decode($0) }) else {
                        throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(cutoff): missing or malformed")
                    }
                    t = (w.payload.baseTimestamp ?? 0) &+ Int64(truncatingIfNeeded: h.timestampDelta)
                }
                if t >= threshold {
                    w.cutoffTimestamp = t
                    break
                }
                cutoff += 1
                w.cutoffTimestamp = nil
            }
        }
    }

    /// The stored record of event `sequence` as of now, in either form (FORMAT.md §14.6).
    private func storedRecord(_ sequence: UInt64) throws -> [UInt8]? {
        try SeriesEventCursor.record(Int64(sequence), snapshot: engine.snapshot(), prefix: prefix, path: path)
    }

    /// Replaces the stored options; a changed retained range applies at once (FORMAT.md §14.4).
    /// Applies `options`; `authorize` (a session's check) runs before the stored options change.
    func apply(_ options: TimeSeriesOptions, authorize: (() throws -> Void)? = nil) throws {
        try writer.withLock { w in
            var payload = w.payload
            payload.setOptions(options)
            // The buffer size is not stored, but it is every subscriber's: changing it is a change of options.
            if payload != w.payload || options.subscriberBufferSize != w.bufferSize { try authorize?() }
            w.bufferSize = options.subscriberBufferSize
            guard payload != w.payload else { return }
            let snapshot = try engine.snapshot()
            let reader = SeriesReader(snapshot: snapshot, id: id, head: w.head, baseTimestamp: payload.baseTimestamp ?? 0, path: path,
                                      valueKind: SeriesChunk.valueKind(typeName: payload.typeName))
            let cutoff = try Self.retainedCutoff(payload: payload, head: w.head, reader: reader)
            payload.cutoff = cutoff
            var staged = w
            staged.payload = payload
            if cutoff != staged.head.cutoff { staged.cutoffTimestamp = nil }
            staged.head.cutoff = cutoff
            var batch = CommitBatch()
            Catalog.put(CatalogEntry(id: id, payload: payload.encode()), kind: .timeSeries, name: path, into: &batch.records)
            seal(staged, into: &batch)
            try engine.commit(batch)
            w = staged
        }
    }

    // MARK: Subscribers

    /// A stream of the subscription range's events, then of every event of the series as it
    /// commits. It starts under the writer lock, from a snapshot whose later commits of the series
    /// all reach it, so it misses and repeats nothing. `decode` makes an element of a record.
    /// `bufferSize` nil: the series' ``TimeSeriesOptions/subscriberBufferSize``.
    func subscribe<Element: Sendable>(
        bufferSize: Int? = nil, decode: @escaping @Sendable (UInt64, UnsafeRawBufferPointer, SeriesDecoding) throws -> Element
    ) throws -> AsyncThrowingStream<Element, any Error> {
        try writer.withLock { w in
            if let e = engine.failure { throw e }
            let (reader, decoding, sequence) = try self.reader()
            let range = w.payload.subscriptionRange.query
            let id = self.id
            let path = self.path
            let bufferSize = bufferSize ?? w.bufferSize
            return try broadcaster.subscribe(
                after: sequence, buffering: .bounded(bufferSize),
                initial: {
                    var initial: [Element] = []
                    if let range {
                        _ = try reader.evaluate(range) { s, bytes in initial.append(try decode(s, bytes, decoding)) }
                    }
                    return initial
                },
                overflow: { "time series \"\(path)\": a subscriber fell more than \(bufferSize) events behind" }
            ) { commit in
                var out: [Element] = []
                for change in commit.changes {
                    guard let events = change as? Events, events.seriesID == id else { continue }
                    for (i, record) in events.records.enumerated() {
                        out.append(try record.withUnsafeBytes { try decode(events.first + UInt64(i), $0, events.decoding) })
                    }
                }
                return out
            }
        }
    }

    func storeDidClose() {
        published.withLock { $0.closed = true }
    }

    func storeDidFail(_ error: StrataError) {}
}
