import Foundation
import Synchronization

/// The shared state of one open time series: its id, head, options, author table and
/// subscribers. Every ``TimeSeries`` handle of the series in a store uses the one instance.
///
/// Locking: `writer` serializes everything that changes the series (sequence assignment, the
/// engine write, the head update, delivery to subscribers), so events are numbered, committed and
/// delivered in one order; it is held across the engine write. `published` is what readers take
/// (briefly): the head as of the last completed write, with the engine snapshot taken under it so
/// that the two agree. `subscribers` is never held while a stream is yielded to or finished, so a
/// stream's termination handler may take it.
package final class SeriesState: CollectionState {
    let engine: Engine
    let id: UInt64
    let path: String
    let typeName: String
    private let clock: @Sendable () -> Date
    private let principal: String
    private let retention: SeriesRetention
    private let prefix: [UInt8]
    private let indexPrefix: [UInt8]

    private struct Writer {
        var payload: SeriesPayload
        var head: SeriesHead
        /// The timestamp of the event at `head.cutoff`, when known (saves reads under `.last`).
        var cutoffTimestamp: Int64?
        var authorIndex: [String: UInt64]
        var bufferSize: Int
        var keyScratch: [UInt8] = []
        var valueScratch: [UInt8] = []
    }

    private struct Published {
        var head: SeriesHead
        var decoding: SeriesDecoding
        /// The record of the latest event.
        var latest: [UInt8]?
        var payload: SeriesPayload
        var closed = false
    }

    private struct Subscribers {
        var nextToken = 0
        var all: [Int: any SeriesSubscriber] = [:]
        var closed = false
        /// The engine failed: streams ended by throwing this, and new subscriptions throw it.
        var failure: StrataError?

        /// Why a subscription cannot start, if it cannot.
        var refusal: StrataError? { failure ?? (closed ? .closed : nil) }
    }

    private let writer: Mutex<Writer>
    private let published: Mutex<Published>
    private let subscribers = Mutex<Subscribers>(Subscribers())

    init(store: Store, path: String, entry: CatalogEntry, payload: SeriesPayload, retention: SeriesRetention) throws {
        self.engine = store.engine
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
        writer = Mutex(Writer(payload: payload, head: recovered.head, cutoffTimestamp: nil, authorIndex: index,
                              bufferSize: TimeSeriesOptions().subscriberBufferSize))
        published = Mutex(Published(head: recovered.head,
                                    decoding: SeriesDecoding(base: payload.baseTimestamp ?? 0, authors: payload.authors),
                                    latest: recovered.latest, payload: payload))
        retention.setCutoff(recovered.head.cutoff, of: entry.id)
    }

    // MARK: Recovery

    /// The head of a series from its records and catalog payload (FORMAT.md §14.4): next and
    /// latest from the last record, the cutoff as the largest of the stored one, the first record
    /// present, and what the stored retained range gives.
    package static func recover(snapshot: Snapshot, id: UInt64, payload: SeriesPayload, path: String)
        throws -> (head: SeriesHead, latest: [UInt8]?) {
        let prefix = EventRecord.seriesPrefix(id)
        guard let upper = TupleKey.prefixSuccessor(prefix) else { throw StrataError.invalidArgument("series id \(id)") }
        func bad(_ why: String) -> StrataError { .corrupted(file: "time series \"\(path)\"", offset: 0, reason: why) }
        let last = snapshot.cursor(lower: prefix, upper: upper, reverse: true)
        var head = SeriesHead(next: payload.cutoff, cutoff: payload.cutoff, latestTimestamp: nil,
                              lastEditSequence: payload.lastEditSequence)
        var latest: [UInt8]?
        if try last.next() {
            guard let s = last.withKey({ EventRecord.sequence(ofKey: $0, prefixLength: prefix.count) }) else {
                throw bad("malformed key \(TupleKey.describe(last.key))")
            }
            let record = Array(last.value)
            guard let h = record.withUnsafeBytes({ EventRecord.decode($0) }) else { throw bad("event \(s): malformed record") }
            head.next = max(head.next, s + 1)
            if s + 1 == head.next {
                latest = record
                head.latestTimestamp = (payload.baseTimestamp ?? 0) &+ Int64(truncatingIfNeeded: h.timestampDelta)
            }
            let first = snapshot.cursor(lower: prefix, upper: upper)
            if try first.next(), let f = first.withKey({ EventRecord.sequence(ofKey: $0, prefixLength: prefix.count) }) {
                head.cutoff = max(head.cutoff, f)
            }
        }
        head.cutoff = min(head.cutoff, head.next)
        if latest == nil { head.cutoff = head.next }
        let reader = SeriesReader(snapshot: snapshot, id: id, head: head, baseTimestamp: payload.baseTimestamp ?? 0, path: path)
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
            let r = SeriesReader(snapshot: reader.snapshot, id: reader.id, head: h, baseTimestamp: reader.baseTimestamp, path: reader.path)
            cutoff = max(cutoff, UInt64(try r.firstSequence(atLeast: latest - ms)))
        }
        return min(cutoff, head.next - 1)
    }

    // MARK: Reading

    /// A reader of the series as of now, with what decoding its records needs.
    func reader() throws -> (SeriesReader, SeriesDecoding) {
        try published.withLock { p in
            if p.closed { throw StrataError.closed }
            let snapshot = try engine.snapshot()
            return (SeriesReader(snapshot: snapshot, id: id, head: p.head, baseTimestamp: p.decoding.base, path: path),
                    p.decoding)
        }
    }

    /// The latest event's sequence and record, if any.
    func latest() throws -> (UInt64, [UInt8], SeriesDecoding)? {
        try published.withLock { p in
            if p.closed { throw StrataError.closed }
            guard let record = p.latest else { return nil }
            return (p.head.next - 1, record, p.decoding)
        }
    }

    /// The head, stored options and decoding context as of now.
    var status: (head: SeriesHead, payload: SeriesPayload) {
        published.withLock { ($0.head, $0.payload) }
    }

    // MARK: Writing

    private func now() -> Int64 { SeriesTime.milliseconds(clock()) ?? 0 }

    /// Appends `count` events in one batch. `timestamps` gives explicit timestamps (which must not
    /// go back), else each event gets the clock's time, raised to the latest timestamp if the clock
    /// is behind. `encode(i, &out)` appends value `i`'s bytes.
    func append(count: Int, timestamps: [Int64]?, author: String?,
                encode: (Int, inout [UInt8]) throws -> Void) throws -> [EventMetadata] {
        guard count > 0 else { return [] }
        return try writer.withLock { w in
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
            var records: [[UInt8]]? = hasSubscribers ? [] : nil
            var batch = WriteBatch()
            let first = w.head.next
            for i in 0..<count {
                w.keyScratch.removeAll(keepingCapacity: true)
                EventRecord.appendUInt(first + UInt64(i), to: &w.keyScratch)
                w.valueScratch.removeAll(keepingCapacity: true)
                EventRecord.appendHeader(timestampDelta: UInt64(times[i] - base), author: authorIndex, original: nil,
                                         to: &w.valueScratch)
                try encode(i, &w.valueScratch)
                batch.putRaw(prefix, w.keyScratch, w.valueScratch)
                records?.append(w.valueScratch)
            }
            if payloadChanged {
                Catalog.put(CatalogEntry(id: id, payload: payload.encode()), kind: .timeSeries, name: path, into: &batch)
            }
            try engine.write(batch)
            if payloadChanged {
                if w.authorIndex[author] == nil { w.authorIndex[author] = authorIndex }
                w.payload = payload
            }
            w.head.next = first + UInt64(count)
            w.head.latestTimestamp = times[count - 1]
            committed(&w, latest: w.valueScratch, newTimestamps: times, firstNew: first, records: records)
            var result: [EventMetadata] = []
            result.reserveCapacity(count)
            for i in 0..<count {
                result.append(EventMetadata(sequence: first + UInt64(i), milliseconds: times[i], author: author))
            }
            return result
        }
    }

    /// Appends an edit of `original` with the clock's time (raised to the latest timestamp).
    func edit(original: UInt64, author: String?, encode: (inout [UInt8]) throws -> Void) throws -> EventMetadata {
        try writer.withLock { w in
            let author = author ?? principal
            guard original < w.head.next else {
                throw StrataError.invalidArgument("time series \"\(path)\": edit of sequence \(original), which does not exist yet (next is \(w.head.next))")
            }
            guard original >= w.head.cutoff else {
                throw StrataError.invalidArgument("time series \"\(path)\": edit of sequence \(original), which is no longer retained (first retained is \(w.head.cutoff))")
            }
            guard let bytes = try engine.get(EventRecord.key(series: id, sequence: original)),
                  let h = bytes.withUnsafeBytes({ EventRecord.decode($0) }) else {
                throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(original): missing or malformed")
            }
            guard h.original == nil else {
                throw StrataError.invalidArgument("time series \"\(path)\": sequence \(original) is an edit event; edits must name an original event")
            }
            let t = max(now(), w.head.latestTimestamp ?? Int64.min)
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
            var batch = WriteBatch()
            w.valueScratch.removeAll(keepingCapacity: true)
            EventRecord.appendHeader(timestampDelta: UInt64(t - base), author: authorIndex,
                                     original: (original, h.timestampDelta, h.author), to: &w.valueScratch)
            try encode(&w.valueScratch)
            batch.putRaw(EventRecord.key(series: id, sequence: sequence), w.valueScratch)
            batch.putRaw(EventRecord.editIndexKey(series: id, original: original, edit: sequence), [])
            Catalog.put(CatalogEntry(id: id, payload: payload.encode()), kind: .timeSeries, name: path, into: &batch)
            try engine.write(batch)
            if w.authorIndex[author] == nil { w.authorIndex[author] = authorIndex }
            w.payload = payload
            w.head.next = sequence + 1
            w.head.latestTimestamp = t
            w.head.lastEditSequence = sequence
            let records: [[UInt8]]? = hasSubscribers ? [w.valueScratch] : nil
            committed(&w, latest: w.valueScratch, newTimestamps: [t], firstNew: sequence, records: records)
            let authors = payload.authors
            return EventMetadata(sequence: sequence, milliseconds: t, author: authors[Int(authorIndex)])
        }
    }

    /// After a write: applies the retained range, publishes the head and delivers the new events.
    private func committed(_ w: inout Writer, latest: [UInt8], newTimestamps: [Int64], firstNew: UInt64, records: [[UInt8]]?) {
        // The write is durable and acknowledged, so a failed read here (a damaged file) must not
        // fail it (a caller would retry and append twice). The cutoff stays where it was, so
        // retention tries again on the next write, and the error is reported in
        // `Store.statistics` (`backgroundFailures`, `lastBackgroundError`).
        do {
            try advanceCutoff(&w, newTimestamps: newTimestamps, firstNew: firstNew)
        } catch {
            engine.reportFailure(error as? StrataError
                ?? .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "retention: \(error)"))
        }
        let decoding = SeriesDecoding(base: w.payload.baseTimestamp ?? 0, authors: w.payload.authors)
        let head = w.head
        let payload = w.payload
        published.withLock { p in
            p.head = head
            p.latest = latest
            p.decoding = decoding
            p.payload = payload
        }
        retention.setCutoff(head.cutoff, of: id)
        if let records { deliver(records, first: firstNew, decoding: decoding) }
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
            let threshold = latest - ms
            while cutoff + 1 < next {
                let t: Int64
                if cutoff >= firstNew {
                    t = newTimestamps[Int(cutoff - firstNew)]
                } else if let cached = w.cutoffTimestamp {
                    t = cached
                } else {
                    guard let bytes = try engine.get(EventRecord.key(series: id, sequence: cutoff)),
                          let h = bytes.withUnsafeBytes({ EventRecord.decode($0) }) else {
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

    /// Replaces the stored options; a changed retained range applies at once (FORMAT.md §14.4).
    func apply(_ options: TimeSeriesOptions) throws {
        try writer.withLock { w in
            w.bufferSize = options.subscriberBufferSize
            var payload = w.payload
            payload.setOptions(options)
            guard payload != w.payload else { return }
            let snapshot = try engine.snapshot()
            let reader = SeriesReader(snapshot: snapshot, id: id, head: w.head, baseTimestamp: payload.baseTimestamp ?? 0, path: path)
            let cutoff = try Self.retainedCutoff(payload: payload, head: w.head, reader: reader)
            payload.cutoff = cutoff
            var batch = WriteBatch()
            Catalog.put(CatalogEntry(id: id, payload: payload.encode()), kind: .timeSeries, name: path, into: &batch)
            try engine.write(batch)
            w.payload = payload
            if cutoff != w.head.cutoff { w.cutoffTimestamp = nil }
            w.head.cutoff = cutoff
            let head = w.head
            published.withLock { p in
                p.head = head
                p.payload = payload
            }
            retention.setCutoff(cutoff, of: id)
        }
    }

    // MARK: Subscribers

    private var hasSubscribers: Bool { subscribers.withLock { !$0.all.isEmpty } }

    /// Registers a subscriber made by `make(token, capacity)` and hands it the subscription range,
    /// atomically with respect to appends (under the writer lock), so that it misses and repeats
    /// nothing. `capacity` is the buffer its stream needs: the range plus the buffer size.
    func subscribe(_ make: (_ token: Int, _ capacity: Int) -> any SeriesSubscriber) throws {
        try writer.withLock { w in
            if let e = engine.failure { throw e }
            let (reader, decoding) = try self.reader()
            var initial: [(UInt64, [UInt8])] = []
            if let query = w.payload.subscriptionRange.query {
                _ = try reader.evaluate(query) { s, bytes in initial.append((s, Array(bytes))) }
            }
            let token = try subscribers.withLock { s -> Int in
                if let e = s.refusal { throw e }
                s.nextToken += 1
                return s.nextToken
            }
            let subscriber = make(token, initial.count + w.bufferSize)
            let refusal = subscribers.withLock { s -> StrataError? in
                if let e = s.refusal { return e }
                s.all[token] = subscriber
                return nil
            }
            if let refusal {
                subscriber.finish(throwing: refusal)
                return
            }
            for (s, record) in initial {
                let ok = record.withUnsafeBytes { subscriber.deliver(sequence: s, record: $0, decoding: decoding) }
                if !ok { removeSubscriber(token); break }
            }
        }
    }

    func removeSubscriber(_ token: Int) {
        _ = subscribers.withLock { $0.all.removeValue(forKey: token) }
    }

    /// The number of live subscribers (for tests and tools).
    var subscriberCount: Int { subscribers.withLock { $0.all.count } }

    private func deliver(_ records: [[UInt8]], first: UInt64, decoding: SeriesDecoding) {
        let all = subscribers.withLock { Array($0.all) }
        for (token, subscriber) in all {
            for (i, record) in records.enumerated() {
                let ok = record.withUnsafeBytes { subscriber.deliver(sequence: first + UInt64(i), record: $0, decoding: decoding) }
                if !ok {
                    removeSubscriber(token)
                    break
                }
            }
        }
    }

    func storeDidClose() {
        published.withLock { $0.closed = true }
        let all = subscribers.withLock { s -> [any SeriesSubscriber] in
            s.closed = true
            defer { s.all.removeAll() }
            return Array(s.all.values)
        }
        for subscriber in all { subscriber.finish(throwing: StrataError.closed) }
    }

    func storeDidFail(_ error: StrataError) {
        let all = subscribers.withLock { s -> [any SeriesSubscriber] in
            if s.failure == nil { s.failure = error }
            defer { s.all.removeAll() }
            return Array(s.all.values)
        }
        for subscriber in all { subscriber.finish(throwing: error) }
    }
}
