import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
///   published at the instant the batch becomes visible.
/// - **Reading your own writes**: the reads of the transaction's handles
///   (``TransactionDocuments/document(id:)``, ``TransactionTimeSeries/latest()``,
///   ``TransactionTimeSeries/event(sequence:)``, ``TransactionTimeSeries/bounds()``,
///   ``TransactionChannel/lastMessage()``, ``TransactionChannel/stagedMessages()``) see the
///   transaction's staged writes on top of what is committed, as they will be once it commits.
///   Ordinary handles read what is committed, without the transaction's writes. A failed write
///   (caught in the body) leaves nothing staged for the reads to see.
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
/// ``StrataError/invalidArgument(argument:reason:)``. They are not `Sendable`: use them on the thread that runs
/// the body, which is the thread that holds the collection locks the transaction takes.
public final class Transaction {
    // Used only by the thread running the body (and `Store.transaction` around it): the type is
    // not Sendable, so the compiler keeps it there.
    let store: Store
    private var batch: CommitBatch
    /// The collections written so far, in the order first written; their locks are held.
    private var held: [HeldCollection] = []
    /// The locks in `held`, for collection locks asked on this task (TransactionScope).
    let heldLocks = HeldLocks()
    private var ended = false
    /// The checks of the session that runs the transaction, or nil for the store's own.
    let access: SessionAccess?

    init(store: Store, durability: Durability?, access: SessionAccess?) {
        self.store = store
        self.batch = CommitBatch(durability: durability)
        self.access = access
    }

    /// The staged writer state of the collection whose lock is `lock`, if the transaction wrote it.
    func staged<State>(_ lock: CollectionLock<State>) -> State? {
        (held.first(where: { $0.lock === lock }) as? Hold<State>)?.writer
    }

    func checkOpen() throws {
        if ended {
            throw StrataError.invalidArgument(argument: "transaction", reason: "a Transaction was used after its transaction ended")
        }
    }

    /// Runs `body` on the hold of `state`'s collection, taking its lock at the first write.
    func stage<Hold: HeldCollection, R>(
        _ lock: AnyObject, make: () -> Hold, _ body: (Hold, inout CommitBatch) throws -> R
    ) throws -> R {
        try checkOpen()
        let hold: Hold
        if let found = held.first(where: { $0.lock === lock }) as? Hold {
            hold = found
        } else {
            hold = make()
            held.append(hold)
            heldLocks.insert(lock)
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
        heldLocks.removeAll()
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
        return try TransactionScope.$current.withValue(tx.heldLocks) {
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
    /// even if its task is cancelled meanwhile. The ``Transaction`` is not `Sendable`: it cannot
    /// leave the body, whose result must be.
    public func transaction<T: Sendable>(durability: Durability? = nil,
                                         _ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await executor.run { try self.transaction(durability: durability, body) }
    }
}

// MARK: Holds

/// A collection a transaction writes: its lock is held, and its writer state advances as the
/// transaction stages writes; the collection's own state changes only when the batch commits.
protocol HeldCollection: AnyObject {
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
final class Hold<State>: HeldCollection {
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
