import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A time series: an append-only sequence of events with Diffusion's semantics — original
/// events, edit events that replace an original's value, range queries over merged or unmerged
/// views, a retained range, and subscriptions.
///
/// ```swift
/// let prices = try store.timeSeries("prices/AAPL", of: Double.self,
///                                   options: TimeSeriesOptions(retainedRange: .limit(10_000)))
/// let m = try prices.append(101.5)                      // sequence 0, timestamp now, author
/// try prices.append(101.7, timestamp: Date())
/// try prices.edit(originalSequence: m.sequence, value: 99.0)
/// let last100 = try prices.query(RangeQuery.values.fromLast(100))
/// for try await event in prices.subscribe() { print(event.sequence, event.value) }
/// ```
///
/// ## Guarantees
/// - **Contiguous sequences**: events are numbered 0, 1, 2, … with no gap, across close, reopen
///   and crashes; an edit takes the next number like any event.
/// - **Non-decreasing timestamps**: an explicit timestamp earlier than the latest event's throws
///   ``StrataError/timestampBeforeLatest(latest:given:)``; the clock's time (appends without a
///   timestamp, edits) is raised to the latest timestamp when the clock is behind. Timestamps are
///   whole milliseconds: a given `Date` is truncated, and the returned metadata carries the
///   truncated date, equal to what queries return.
/// - **Atomic appends**: ``append(contentsOf:)-vnog`` (and, with timestamps,
///   ``append(contentsOf:)-5vhhl``) writes all its events in one batch, or none.
/// - **Serialized writes**: appends and edits of one series are numbered, committed and delivered
///   to subscribers in one order; writes to different series run concurrently and share group
///   commits.
/// - **Exact retention**: from the write that pushes an event out of the ``RetainedRange``, no
///   query, ``latest()`` or subscription shows it.
///
/// Handles are cheap values; every handle of a series in a store shares its state. All methods
/// are thread-safe; after ``Store/close()`` they throw ``StrataError/closed``.
///
/// A handle from a ``StoreSession`` checks every call against the store's security policy (each
/// method names the ``Permission`` it needs) and writes with the session's principal as author;
/// a handle from the ``Store`` is not checked.
public struct TimeSeries<Value: Codable & Sendable>: Sendable {
    let state: SeriesState
    let codec = ValueCodec<Value>()
    /// The session's checks, or nil for the store's own handle.
    let access: SessionAccess?

    init(state: SeriesState, access: SessionAccess? = nil) {
        self.state = state
        self.access = access
    }

    /// The author of a write: the caller's (nil: the store's principal), or in a session its
    /// principal after checking ``Permission/updateTopic``.
    @inline(__always)
    private func author(_ given: String?) throws -> String? {
        guard let access else { return given }
        return try access.writer(given, state.path)
    }

    /// In a session, the check of an edit against the original event's author.
    private var editCheck: ((String) throws -> Void)? {
        guard let access else { return nil }
        let path = state.path
        return { try access.authorizeEdit(of: $0, path) }
    }

    /// The series' path (its name in the store).
    public var path: String { state.path }

    /// The options in effect (as stored: durations in whole milliseconds).
    public var options: TimeSeriesOptions {
        let payload = state.status.payload
        return TimeSeriesOptions(retainedRange: payload.retainedRange, subscriptionRange: payload.subscriptionRange)
    }

    // MARK: Appending

    /// Appends an event with the clock's time (``StoreOptions/clock``) and the store's principal as
    /// author (a session's principal in a session); returns its metadata.
    ///
    /// Needs ``Permission/updateTopic`` in a session, as does every append.
    @discardableResult
    @_specialize(exported: true, where Value == Double)
    @_specialize(exported: true, where Value == Int64)
    public func append(_ value: Value) throws -> EventMetadata {
        try state.append(count: 1, timestamps: nil, author: try author(nil)) { _, out in try codec.encode(value, into: &out) }[0]
    }

    /// Appends an event with an explicit timestamp (truncated to the millisecond).
    ///
    /// - Throws: ``StrataError/timestampBeforeLatest(latest:given:)`` if it is earlier than the
    ///   latest event's timestamp.
    @discardableResult
    @_specialize(exported: true, where Value == Double)
    @_specialize(exported: true, where Value == Int64)
    public func append(_ value: Value, timestamp: Date) throws -> EventMetadata {
        let who = try author(nil)
        let t = try Self.milliseconds(timestamp)
        return try state.append(count: 1, timestamps: [t], author: who) { _, out in try codec.encode(value, into: &out) }[0]
    }

    /// Appends an event with an explicit author, and an explicit timestamp unless nil.
    ///
    /// In a session, an `author` other than the session's principal is
    /// ``StrataError/permissionDenied(principal:permission:path:)`` naming ``Permission/updateTopic``.
    @discardableResult
    public func append(_ value: Value, timestamp: Date?, author: String) throws -> EventMetadata {
        let who = try self.author(author)
        let t = try timestamp.map(Self.milliseconds)
        return try state.append(count: 1, timestamps: t.map { [$0] }, author: who) { _, out in
            try codec.encode(value, into: &out)
        }[0]
    }

    /// Appends events in one atomic batch, all with the clock's time; returns the metadata of
    /// each, in order.
    @discardableResult
    @_specialize(exported: true, where Value == Double, S == [Double])
    @_specialize(exported: true, where Value == Int64, S == [Int64])
    public func append<S: Sequence>(contentsOf values: S) throws -> [EventMetadata] where S.Element == Value {
        let who = try author(nil)
        let array = Array(values)
        return try state.append(count: array.count, timestamps: nil, author: who) { i, out in
            try codec.encode(array[i], into: &out)
        }
    }

    /// Appends events with explicit timestamps (non-decreasing, none before the latest event's) in
    /// one atomic batch; returns the metadata of each, in order.
    @discardableResult
    @_specialize(exported: true, where Value == Double, S == [(value: Double, timestamp: Date)])
    @_specialize(exported: true, where Value == Int64, S == [(value: Int64, timestamp: Date)])
    public func append<S: Sequence>(contentsOf events: S) throws -> [EventMetadata]
    where S.Element == (value: Value, timestamp: Date) {
        let who = try author(nil)
        let array = Array(events)
        let times = try array.map { try Self.milliseconds($0.timestamp) }
        return try state.append(count: array.count, timestamps: times, author: who) { i, out in
            try codec.encode(array[i].value, into: &out)
        }
    }

    /// Appends an edit event that replaces the value of original event `originalSequence`; it gets
    /// the next sequence number and the clock's time.
    ///
    /// In a session it needs ``Permission/updateTopic`` and ``Permission/editTimeSeriesEvents``,
    /// or ``Permission/editOwnTimeSeriesEvents`` when the original's author is the session's
    /// principal (Diffusion's rule); a denial names the edit permission that would have allowed it.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` unless `originalSequence` names an original
    ///   (not an edit) event that exists and is still retained.
    @discardableResult
    public func edit(originalSequence: UInt64, value: Value) throws -> EventMetadata {
        try state.edit(original: originalSequence, author: try author(nil), authorize: editCheck) { out in
            try codec.encode(value, into: &out)
        }
    }

    /// ``edit(originalSequence:value:)`` with an explicit author (in a session, only its principal).
    @discardableResult
    public func edit(originalSequence: UInt64, value: Value, author: String) throws -> EventMetadata {
        try state.edit(original: originalSequence, author: try self.author(author), authorize: editCheck) { out in
            try codec.encode(value, into: &out)
        }
    }

    // MARK: Reading

    /// The events `query` selects, in sequence order (see ``RangeQuery`` for the semantics).
    ///
    /// In a session it needs ``Permission/readTopic``, and for the edit views (``RangeQuery/edits(_:)``)
    /// also ``Permission/queryObsoleteTimeSeriesEvents``.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for negative counts or durations.
    ///
    /// Events stored as chunks (settled events) are decoded straight from their columns. The
    /// native value types `Double`, `Int64` and `String` have pre-specialized entry points, so a
    /// client module calling `TimeSeries<Double>` runs no generic code here.
    @_specialize(exported: true, where Value == Double)
    @_specialize(exported: true, where Value == Int64)
    @_specialize(exported: true, where Value == String)
    public func query(_ query: RangeQuery) throws -> QueryResult<Value> {
        if let access {
            try access.require(.readTopic, state.path)
            if query.view != .values { try access.require(.queryObsoleteTimeSeriesEvents, state.path) }
        }
        try query.validate()
        let (reader, decoding, _) = try state.reader()
        var events: [Event<Value>] = []
        events.reserveCapacity(min(query.limitCount ?? 1_024, 1_024))
        let selected = try reader.evaluate(query, chunks: { chunk, run in
            try Self.decode(chunk, run, decoding, codec, path: state.path, into: &events)
        }) { s, bytes in
            events.append(try Self.decode(s, bytes, decoding, codec, path: state.path))
        }
        return QueryResult(events: events, selectedCount: selected)
    }

    /// The latest event (highest sequence number, original or edit), or nil for an empty series.
    /// A read of memory: no I/O. Needs ``Permission/readTopic`` in a session.
    public func latest() throws -> Event<Value>? {
        try access?.require(.readTopic, state.path)
        guard let (s, record, decoding) = try state.latest() else { return nil }
        return try record.withUnsafeBytes { try Self.decode(s, $0, decoding, codec, path: state.path) }
    }

    /// The number of retained events and the first and next sequence numbers. A read of memory:
    /// no I/O. Needs ``Permission/readTopic`` in a session.
    public func bounds() throws -> SeriesBounds {
        try access?.require(.readTopic, state.path)
        let head = state.status.head
        return SeriesBounds(count: head.count, firstRetained: head.cutoff, next: head.next)
    }

    // MARK: Subscribing

    /// A stream of the events of the subscription range (``TimeSeriesOptions/subscriptionRange``),
    /// in order, then of every event (originals and edits) as it commits, in sequence order.
    ///
    /// Each subscriber has its own buffer of ``TimeSeriesOptions/subscriberBufferSize`` events
    /// (plus the initial range). A subscriber that falls further behind is not waited for and
    /// does not make memory grow: its stream ends with ``StrataError/subscriberOverflow(_:)``
    /// (subscribe again, and query what was missed by sequence). Cancelling the consuming task,
    /// or dropping the stream, unregisters it. When the store closes, the stream ends with
    /// ``StrataError/closed``; when the store fails (a failed log sync, rotation or publish: see
    /// ``StoreStatistics/writeError``), it ends by throwing that failure, and so does every stream
    /// subscribed afterwards. In a session it needs ``Permission/selectTopic``: without it the
    /// stream ends at once with ``StrataError/permissionDenied(principal:permission:path:)``.
    ///
    /// ```swift
    /// for try await event in prices.subscribe() { print(event.sequence, event.value) }
    /// ```
    public func subscribe() -> AsyncThrowingStream<Event<Value>, any Error> {
        subscribe(bufferSize: nil)
    }

    /// ``subscribe()`` with a buffer of `bufferSize` events instead of
    /// ``TimeSeriesOptions/subscriberBufferSize``: a subscriber that falls more than `bufferSize`
    /// events behind (the subscription range's events come on top) gets its stream ended by
    /// throwing ``StrataError/subscriberOverflow(_:)``. A `bufferSize` below 1 ends the stream at
    /// once by throwing ``StrataError/invalidArgument(argument:reason:)``.
    ///
    /// ```swift
    /// for try await event in prices.subscribe(bufferSize: 100_000) { chart.add(event) }
    /// ```
    public func subscribe(bufferSize: Int) -> AsyncThrowingStream<Event<Value>, any Error> {
        subscribe(bufferSize: Optional(bufferSize))
    }

    private func subscribe(bufferSize: Int?) -> AsyncThrowingStream<Event<Value>, any Error> {
        let codec = self.codec
        let path = state.path
        do {
            try access?.require(.selectTopic, path)
            if let bufferSize, bufferSize < 1 {
                throw StrataError.invalidArgument(argument: "bufferSize", reason: "time series \"\(path)\": bufferSize \(bufferSize) must be at least 1")
            }
            return try state.subscribe(bufferSize: bufferSize) { sequence, bytes, decoding in
                try Self.decode(sequence, bytes, decoding, codec, path: path)
            }
        } catch {
            let (stream, continuation) = AsyncThrowingStream<Event<Value>, any Error>.makeStream()
            continuation.finish(throwing: error)
            return stream
        }
    }

    // MARK: Decoding

    static func milliseconds(_ date: Date) throws -> Int64 {
        guard let t = SeriesTime.milliseconds(date) else {
            throw StrataError.invalidArgument(argument: "timestamp", reason: "timestamp \(date.timeIntervalSince1970) s after 1970 is out of range")
        }
        return t
    }

    /// Appends the events `run` of a chunk (FORMAT.md §14.6) to `events`, straight from its
    /// columns: no event record is built, and `Double` and `Int64` values are not re-decoded.
    static func decode(_ chunk: SeriesChunkColumns, _ run: Range<Int>, _ decoding: SeriesDecoding, _ codec: ValueCodec<Value>,
                       path: String, into events: inout [Event<Value>]) throws {
        func corrupted(_ i: Int, _ reason: String) -> StrataError {
            .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(chunk.firstSequence + UInt64(i)): \(reason)")
        }
        let authors = decoding.authors
        events.reserveCapacity(events.count + run.count)
        // Runs of equal timestamps are common: their Date is made (a division) once.
        var lastMilliseconds = Int64.min, lastDate = Date(timeIntervalSince1970: 0)
        for i in run {
            let a = chunk.authors[i]
            guard a < authors.count else { throw corrupted(i, "unknown author") }
            let ms = decoding.base &+ chunk.timestamps[i]
            if ms != lastMilliseconds {
                lastMilliseconds = ms
                lastDate = SeriesTime.date(ms)
            }
            let metadata = EventMetadata(sequence: chunk.firstSequence + UInt64(i), timestamp: lastDate,
                                         author: authors[Int(a)])
            var original: EventMetadata?
            if let o = chunk.original(i) {
                guard o.author < authors.count else { throw corrupted(i, "unknown author") }
                original = EventMetadata(sequence: o.sequence, milliseconds: decoding.base &+ Int64(bitPattern: o.timestamp),
                                         author: authors[Int(o.author)])
            }
            let value: Value
            if Value.self == Double.self, chunk.header.kind == 1 {
                value = unsafeBitCast(chunk.doubles[i], to: Value.self)
            } else if Value.self == Int64.self, chunk.header.kind == 2 {
                value = unsafeBitCast(chunk.integers[i], to: Value.self)
            } else {
                value = try chunk.withValueBytes(i) { try codec.decode($0) }
            }
            events.append(Event(metadata: metadata, originalEvent: original, value: value))
        }
    }

    @inline(__always)
    static func decode(_ sequence: UInt64, _ bytes: UnsafeRawBufferPointer, _ decoding: SeriesDecoding,
                       _ codec: ValueCodec<Value>, path: String) throws -> Event<Value> {
        guard let h = EventRecord.decode(bytes), h.author < decoding.authors.count else {
            throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): malformed record")
        }
        let metadata = EventMetadata(sequence: sequence,
                                     milliseconds: decoding.base &+ Int64(truncatingIfNeeded: h.timestampDelta),
                                     author: decoding.authors[Int(h.author)])
        var original: EventMetadata?
        if let o = h.original {
            guard o.author < decoding.authors.count else {
                throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): unknown author")
            }
            original = EventMetadata(sequence: o.sequence,
                                     milliseconds: decoding.base &+ Int64(truncatingIfNeeded: o.timestampDelta),
                                     author: decoding.authors[Int(o.author)])
        }
        let value = try codec.decode(UnsafeRawBufferPointer(rebasing: bytes[h.valueOffset...]))
        return Event(metadata: metadata, originalEvent: original, value: value)
    }
}
