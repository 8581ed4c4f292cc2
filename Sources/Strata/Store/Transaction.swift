import Foundation
import StrataFormat
import StrataFiles
import StrataEngine

/// Writes to several collections that commit as one atomic batch, or not at all.
///
/// None of the seed systems can do this, since each keeps one kind of data: here an event and
/// the document it updates, or a message and the counter it moves, commit together.
///
/// ```swift
/// let order = try store.transaction { tx in
///     let fills = try tx.timeSeries("fills/AAPL", of: Double.self)
///     let event = try fills.append(101.5)
///     try tx.channel("orders", of: JSON.self).publish(["filled": .int(Int64(event.sequence))])
///     return try tx.documents("book").save(Document(id: "AAPL", fields: ["last": 101.5]))
/// }
/// ```
///
/// ## Semantics
/// - **Atomic**: the writes made through the handles of ``timeSeries(_:of:)``,
///   ``channel(_:of:)`` and ``documents(_:)`` commit as one batch when the body returns, or not
///   at all when it throws (or when the commit fails) — also across a crash: after `kill -9`,
///   reopening finds every transaction whole or absent.
/// - **Each collection's rules, as for a single write**: sequence numbers stay contiguous (an
///   append in a transaction that fails leaves no gap), timestamps never go back, timetokens are
///   unique and increasing, index rows and the change feed match the documents. The values each
///   handle returns (event metadata, timetokens, saved documents) are final once the
///   transaction commits.
/// - **Isolation**: readers see all of the transaction or none of it: each collection's head is
///   published at the instant the batch becomes visible. Reads inside the body (through ordinary
///   handles) see what is committed, not the transaction's own writes.
/// - **Locking**: a collection's writer lock is taken at its first write in the body and held
///   until the transaction ends, so writes to it from other threads wait; writes to other
///   collections go on. Transactions of a store run one at a time. Inside the body, write a
///   collection the transaction writes only through the transaction's handle: its own handle
///   would wait for the transaction, and throws ``StrataError/invalidArgument(argument:reason:)`` instead.
///   Transactions do not nest.
/// - Opening a collection in the body (its first write creates it if missing) is not part of the
///   transaction: a created collection stays, empty, if the transaction fails. Options are not
///   changed; set them with ``Store/timeSeries(_:of:options:)`` or
///   ``Store/channel(_:of:options:)`` beforehand.
/// - Document index maps run in the body, while the transaction holds its collections: a map
///   must not write to the store.
///
/// A `Transaction` and its handles are valid only inside the body; using one afterwards throws
/// ``StrataError/invalidArgument(argument:reason:)``.
public final class Transaction: @unchecked Sendable, TransactionHolding {
    // Used only by the thread running the body (and `Store.transaction` around it).
    private let store: Store
    private var batch: CommitBatch
    /// The collections written so far, in the order first written; their locks are held.
    private var held: [HeldCollection] = []
    private var heldLocks: Set<ObjectIdentifier> = []
    private var ended = false
    /// The checks of the session that runs the transaction, or nil for the store's own.
    let access: SessionAccess?

    init(store: Store, durability: Durability?, access: SessionAccess?) {
        self.store = store
        self.batch = CommitBatch(durability: durability)
        self.access = access
    }

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

    /// A write handle of the channel `name` (created with default options if missing; in a
    /// session's transaction that needs ``Permission/modifyTopic``).
    ///
    /// - Throws: ``StrataError/typeMismatch(_:)`` if it holds another message type.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) throws
        -> TransactionChannel<Message> {
        try checkOpen()
        return TransactionChannel(transaction: self, channel: try store.openChannel(name, of: type, options: nil, access: access))
    }

    /// A write handle of the document database `name` (created if missing; in a session's
    /// transaction that needs ``Permission/modifyTopic``). Its attached indexes are maintained;
    /// this does not attach or build any.
    public func documents(_ name: String = "default") throws -> TransactionDocuments {
        try checkOpen()
        let state = try store.databaseState(name, access: access)
        return TransactionDocuments(transaction: self, state: state)
    }

    func holds(_ lock: AnyObject) -> Bool {
        heldLocks.contains(ObjectIdentifier(lock))
    }

    private func checkOpen() throws {
        if ended {
            throw StrataError.invalidArgument(argument: "transaction", reason: "a Transaction was used after its transaction ended")
        }
    }

    /// Runs `body` on the hold of `state`'s collection, taking its lock at the first write.
    fileprivate func stage<Hold: HeldCollection, R>(
        _ lock: AnyObject, make: () -> Hold, _ body: (Hold, inout CommitBatch) throws -> R
    ) throws -> R {
        try checkOpen()
        let hold: Hold
        if heldLocks.contains(ObjectIdentifier(lock)), let found = held.first(where: { $0.lock === lock }) as? Hold {
            hold = found
        } else {
            hold = make()
            held.append(hold)
            heldLocks.insert(ObjectIdentifier(lock))
        }
        // A failed write leaves the batch as it was: the body may catch the error and go on.
        // Rolled back rather than staged into a copy, which would copy every earlier write.
        let mark = batch.mark
        let saved = hold.checkpoint()
        do {
            return try body(hold, &batch)
        } catch {
            batch.rollBack(to: mark)
            hold.restore(saved)
            throw error
        }
    }

    /// Commits what the body staged; returns the commit's sequence (nil when nothing was written).
    func commit() throws {
        defer { end() }
        try checkOpen()
        guard !held.isEmpty else { return }
        for hold in held { try hold.seal(into: &batch) }
        try store.engine.commit(batch)
        for hold in held { hold.committed() }
    }

    /// Releases every lock, keeping nothing of what was staged.
    func end() {
        guard !ended else { return }
        ended = true
        for hold in held.reversed() { hold.release() }
        held = []
        heldLocks = []
    }
}

extension Store {
    /// Runs `body` and commits the collection writes it makes through its ``Transaction`` as one
    /// atomic batch when it returns, or none of them if it throws.
    ///
    /// ```swift
    /// try store.transaction { tx in
    ///     let reading = try tx.timeSeries("meter/7", of: Double.self).append(42.5)
    ///     try tx.documents("meters").save(Document(id: "7", fields: ["last": .int(Int64(reading.sequence))]))
    /// }
    /// ```
    ///
    /// See ``Transaction`` for the semantics. `durability` overrides the store's for the commit.
    ///
    /// - Throws: what `body` throws (nothing is committed); the commit's error (nothing is
    ///   committed); ``StrataError/invalidArgument(argument:reason:)`` when called inside another transaction's
    ///   body; ``StrataError/closed`` after close.
    public func transaction<T>(durability: Durability? = nil, _ body: (Transaction) throws -> T) throws -> T {
        try transaction(durability: durability, access: nil, body)
    }

    /// A transaction whose handles check `access` (a session's), or none for nil.
    func transaction<T>(durability: Durability?, access: SessionAccess?, _ body: (Transaction) throws -> T) throws -> T {
        if TransactionScope.current != nil {
            throw StrataError.invalidArgument(argument: "transaction", reason: "transactions do not nest: store.transaction was called inside a transaction's body")
        }
        _ = try engine.snapshot()  // throws .closed after close
        transactionLock.lock()
        defer { transactionLock.unlock() }
        let tx = Transaction(store: self, durability: durability, access: access)
        return try TransactionScope.$current.withValue(tx) {
            let result: T
            do {
                result = try body(tx)
            } catch {
                tx.end()
                throw error
            }
            try tx.commit()
            return result
        }
    }
}

extension Store {
    /// The `async` twin of ``transaction(durability:_:)``: the body runs on the store's executor,
    /// never on a cooperative thread. A transaction that started commits (or fails) as a whole
    /// even if its task is cancelled meanwhile.
    public func transaction<T: Sendable>(durability: Durability? = nil,
                                         _ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await executor.run { try self.transaction(durability: durability, body) }
    }
}

// MARK: Write handles

/// The write handle of a time series inside a transaction (``Transaction/timeSeries(_:of:)``):
/// appends and edits as on ``TimeSeries``, committed with the transaction.
public struct TransactionTimeSeries<Value: Codable & Sendable>: Sendable {
    let transaction: Transaction
    let state: SeriesState
    let codec = ValueCodec<Value>()

    /// The series' path.
    public var path: String { state.path }

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

/// The write handle of a channel inside a transaction (``Transaction/channel(_:of:)``).
public struct TransactionChannel<Message: Codable & Sendable>: Sendable {
    let transaction: Transaction
    let channel: Channel<Message>

    /// The channel's name.
    public var name: String { channel.name }

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

/// The write handle of a document database inside a transaction (``Transaction/documents(_:)``).
/// Later writes of the same id in the transaction see the earlier ones (revisions count on).
public struct TransactionDocuments: Sendable {
    let transaction: Transaction
    let state: DatabaseState

    /// The database's name.
    public var name: String { state.name }

    private func write(_ documents: [Document], mode: DatabaseState.WriteMode) throws -> [Document] {
        try transaction.access?.require(.updateTopic, state.name)
        return try transaction.stage(state.writer, make: { state.hold() }) { hold, batch in
            try state.stageWrite(documents, mode: mode, writer: &hold.writer, into: &batch)
        }
    }

    /// Inserts or replaces a document; see ``DocumentDatabase/save(_:concurrencyControl:)``.
    @discardableResult
    public func save(_ document: Document) throws -> Document { try write([document], mode: .save)[0] }

    /// Inserts a document whose id is not in use; see ``DocumentDatabase/add(_:)``.
    @discardableResult
    public func add(_ document: Document) throws -> Document { try write([document], mode: .add)[0] }

    /// Replaces an existing document; see ``DocumentDatabase/update(_:)``.
    @discardableResult
    public func update(_ document: Document) throws -> Document { try write([document], mode: .update)[0] }

    /// Saves many documents, in order.
    @discardableResult
    public func save(contentsOf documents: [Document]) throws -> [Document] { try write(documents, mode: .save) }

    /// Saves `value`'s encoding as the fields of document `id`; see ``DocumentDatabase/save(_:id:)``.
    @discardableResult
    public func save(_ value: some Encodable, id: String) throws -> Document {
        try save(DocumentDatabase.document(encoding: value, id: id))
    }

    /// Deletes a document; see ``DocumentDatabase/delete(id:)``.
    public func delete(id: String) throws {
        try transaction.access?.require(.modifyTopic, state.name)
        try transaction.stage(state.writer, make: { state.hold() }) { hold, batch in
            try state.stageDelete(id: id, writer: &hold.writer, into: &batch)
        }
    }
}

// MARK: Holds

/// A collection a transaction writes: its lock is held, and its writer state advances as the
/// transaction stages writes; the collection's own state changes only when the batch commits.
private protocol HeldCollection: AnyObject {
    var lock: AnyObject { get }
    /// The staged writer state, to restore after a failed write.
    func checkpoint() -> Any
    func restore(_ saved: Any)
    /// Adds what the collection writes once per commit (a head, its publication) to `batch`.
    func seal(into batch: inout CommitBatch) throws
    /// The batch committed: the staged state becomes the collection's.
    func committed()
    func release()
}

/// The hold of one collection's writer lock and staged writer state.
private final class Hold<State>: HeldCollection {
    let writerLock: CollectionLock<State>
    var writer: State
    private let sealing: (inout State, inout CommitBatch) throws -> Void
    private let committing: (_ before: State, _ after: inout State) -> Void

    /// Takes `lock`; `seal` adds the collection's once-per-commit records, `committed` finishes
    /// the staged state before it becomes the collection's.
    init(_ lock: CollectionLock<State>, seal: @escaping (inout State, inout CommitBatch) throws -> Void = { _, _ in },
         committed: @escaping (_ before: State, _ after: inout State) -> Void) {
        writerLock = lock
        sealing = seal
        committing = committed
        lock.lockForTransaction()
        writer = lock.heldState
    }

    var lock: AnyObject { writerLock }
    func checkpoint() -> Any { writer }
    func restore(_ saved: Any) { if let w = saved as? State { writer = w } }
    func seal(into batch: inout CommitBatch) throws { try sealing(&writer, &batch) }

    func committed() {
        committing(writerLock.heldState, &writer)
        writerLock.heldState = writer
    }

    func release() { writerLock.unlockForTransaction() }
}

extension SeriesState {
    fileprivate func hold() -> Hold<Writer> {
        Hold(writer, seal: { w, batch in self.seal(w, into: &batch) }, committed: { _, w in w.uncommitted = [:] })
    }
}

extension ChannelState {
    fileprivate func hold() -> Hold<Writer> {
        Hold(writer, seal: { w, batch in try self.seal(&w, into: &batch) }, committed: { before, w in
            if w.head.floor != before.head.floor { self.publishRules(w) }
        })
    }
}

extension DatabaseState {
    fileprivate func hold() -> Hold<WriterState> {
        Hold(writer, committed: { _, w in w.uncommitted = [:] })
    }
}
