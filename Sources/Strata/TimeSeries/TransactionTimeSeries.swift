import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Time series in a transaction (Store/Transaction.swift): the handle and the hold of a series'
// writer lock.

extension Transaction {
    /// A write handle of the time series at `path` (created with default options if missing;
    /// in a session's transaction that needs ``Permission/modifyTopic``).
    ///
    /// - Throws: ``StrataError/typeMismatch(_:)`` if it holds another value type.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type) throws
        -> TransactionTimeSeries<Value> {
        try checkOpen()
        let state = try store.seriesState(path, of: type, options: TimeSeriesOptions(),
                                          authorizeCreate: { try access?.require(.modifyTopic, path) })
        return TransactionTimeSeries(transaction: self, state: state)
    }
}

/// The handle of a time series inside a transaction (``Transaction/timeSeries(_:of:)``):
/// appends and edits as on ``TimeSeries``, committed with the transaction, and reads that see
/// them before it commits.
public struct TransactionTimeSeries<Value: Codable & Sendable> {
    let transaction: Transaction
    let state: SeriesState
    let codec = ValueCodec<Value>()

    /// The series' path.
    public var path: String { state.path }

    // MARK: Reading your own writes

    /// Checks that the transaction is open and, in a session, ``Permission/readTopic``; returns
    /// the writer state the transaction staged, or nil if it did not write the series.
    private func readable() throws -> SeriesState.Writer? {
        try transaction.checkOpen()
        try transaction.access?.require(.readTopic, state.path)
        return transaction.staged(state.writer)
    }

    /// The latest event as the transaction sees it: its own latest append or edit of the
    /// series, else the committed latest event (nil for an empty series). Needs
    /// ``Permission/readTopic`` in a session.
    public func latest() throws -> Event<Value>? {
        let staged = try readable()
        guard let (s, record, decoding) = try staged.map({ try state.latest(staged: $0) }) ?? state.latest() else { return nil }
        return try record.withUnsafeBytes { try TimeSeries<Value>.decode(s, $0, decoding, codec, path: state.path) }
    }

    /// The event (original or edit) with sequence number `sequence` as the transaction sees it:
    /// appended or edited in it, or committed; nil if it is not retained (after the
    /// transaction's own appends, as the retained range will be once it commits) or not written.
    /// Needs ``Permission/readTopic`` in a session.
    public func event(sequence: UInt64) throws -> Event<Value>? {
        guard let staged = try readable() else {
            let events = try TimeSeries<Value>(state: state).query(RangeQuery.edits(.all).from(sequence: sequence).next(1)).events
            return events.first.flatMap { $0.sequence == sequence ? $0 : nil }
        }
        guard let (record, decoding) = try state.record(sequence, staged: staged) else { return nil }
        return try record.withUnsafeBytes { try TimeSeries<Value>.decode(sequence, $0, decoding, codec, path: state.path) }
    }

    /// The number of retained events and the first and next sequence numbers as the
    /// transaction sees them (its appends and edits counted). Needs ``Permission/readTopic`` in
    /// a session.
    public func bounds() throws -> SeriesBounds {
        guard let staged = try readable() else { return try TimeSeries<Value>(state: state).bounds() }
        return SeriesBounds(count: staged.head.count, firstRetained: staged.head.cutoff, next: staged.head.next)
    }

    // MARK: Writing

    /// The author of a write (see ``TimeSeries``): in a session's transaction its principal,
    /// after checking ``Permission/updateTopic``.
    private func author(_ given: String?) throws -> String? {
        guard let access = transaction.access else { return given }
        return try access.writer(given, state.path)
    }

    private var editCheck: ((String) throws -> Void)? {
        guard let access = transaction.access else { return nil }
        let path = state.path
        return { try access.authorizeEdit(of: $0, path) }
    }

    private func stage<R>(_ body: (inout SeriesState.Writer, inout CommitBatch) throws -> R) throws -> R {
        try transaction.stage(state.writer, make: { state.hold() }) { hold, batch in
            try body(&hold.writer, &batch)
        }
    }

    /// Appends an event with the clock's time; see ``TimeSeries/append(_:)``.
    @discardableResult
    public func append(_ value: Value) throws -> EventMetadata {
        let who = try author(nil)
        return try stage { w, b in
            try state.stageAppend(&w, count: 1, timestamps: nil, author: who,
                                  encode: { _, out in try codec.encode(value, into: &out) }, into: &b)[0]
        }
    }

    /// Appends an event with an explicit timestamp; see ``TimeSeries/append(_:timestamp:)``.
    @discardableResult
    public func append(_ value: Value, timestamp: Date) throws -> EventMetadata {
        let who = try author(nil)
        let t = try TimeSeries<Value>.milliseconds(timestamp)
        return try stage { w, b in
            try state.stageAppend(&w, count: 1, timestamps: [t], author: who,
                                  encode: { _, out in try codec.encode(value, into: &out) }, into: &b)[0]
        }
    }

    /// Appends an event with an explicit author (and timestamp unless nil).
    @discardableResult
    public func append(_ value: Value, timestamp: Date?, author: String) throws -> EventMetadata {
        let who = try self.author(author)
        let t = try timestamp.map(TimeSeries<Value>.milliseconds)
        return try stage { w, b in
            try state.stageAppend(&w, count: 1, timestamps: t.map { [$0] }, author: who,
                                  encode: { _, out in try codec.encode(value, into: &out) }, into: &b)[0]
        }
    }

    /// Appends events with the clock's time, in order.
    @discardableResult
    public func append<S: Sequence>(contentsOf values: S) throws -> [EventMetadata] where S.Element == Value {
        let who = try author(nil)
        let array = Array(values)
        return try stage { w, b in
            try state.stageAppend(&w, count: array.count, timestamps: nil, author: who,
                                  encode: { i, out in try codec.encode(array[i], into: &out) }, into: &b)
        }
    }

    /// Appends an edit event of `originalSequence`; see ``TimeSeries/edit(originalSequence:value:)``.
    /// The original may be an event appended earlier in the same transaction.
    @discardableResult
    public func edit(originalSequence: UInt64, value: Value) throws -> EventMetadata {
        let who = try author(nil)
        let check = editCheck
        return try stage { w, b in
            try state.stageEdit(&w, original: originalSequence, author: who, authorize: check,
                                encode: { out in try codec.encode(value, into: &out) }, into: &b)
        }
    }

    /// ``edit(originalSequence:value:)`` with an explicit author.
    @discardableResult
    public func edit(originalSequence: UInt64, value: Value, author: String) throws -> EventMetadata {
        let who = try self.author(author)
        let check = editCheck
        return try stage { w, b in
            try state.stageEdit(&w, original: originalSequence, author: who, authorize: check,
                                encode: { out in try codec.encode(value, into: &out) }, into: &b)
        }
    }
}

extension SeriesState {
    func hold() -> Hold<Writer> {
        Hold(writer, seal: { w, batch in self.seal(w, into: &batch) }, committed: { _, w in
            w.uncommitted = [:]
            // After the commit, as `write` does: the writer's push finds the new events.
            if w.payload.replication != nil { self.uploadSignal.bump() }
        })
    }
}
