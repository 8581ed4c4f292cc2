import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The writer lock of one open collection, with the writer state it guards (a series' next
/// sequence, a channel's head, a database's next change sequence).
///
/// A single write holds it for the write; a ``Transaction`` holds it from the first write of the
/// collection in its body until the transaction commits or fails, so that the sequence numbers,
/// timetokens and revisions it hands out stay valid until its batch commits. A write through the
/// collection's own handle inside such a body (on the same task) would wait for itself: it throws
/// ``StrataError/invalidArgument(argument:reason:)`` instead.
final class CollectionLock<State>: @unchecked Sendable {
    // `state` is only touched with `mutex` held, by `withLock` or by the transaction holding it.
    private let mutex = ConditionLock()
    private var state: State
    /// What the lock is, for the error of a write that would wait for its own transaction.
    private let what: String

    init(_ state: State, what: String) {
        self.state = state
        self.what = what
    }

    /// Runs `body` with the lock held.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` when the current task's transaction holds the
    ///   lock (a direct write of a collection the transaction writes).
    func withLock<R>(_ body: (inout State) throws -> R) throws -> R {
        try refuseIfHeldByCurrentTransaction()
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&state)
    }

    /// Throws ``StrataError/invalidArgument(argument:reason:)`` when the current task's transaction holds the
    /// lock: what would take it next would wait for itself.
    func refuseIfHeldByCurrentTransaction() throws {
        if let tx = TransactionScope.current, tx.holds(self) {
            throw StrataError.invalidArgument(argument: "transaction", reason: "\(what) is held by the transaction running on this task: write it "
                                              + "through the transaction's handle; subscribe to it, change its options "
                                              + "or its indexes before or after the transaction")
        }
    }

    /// Takes the lock for a transaction; it stays held until ``unlockForTransaction()``.
    func lockForTransaction() { mutex.lock() }

    /// Releases the lock a transaction took.
    func unlockForTransaction() { mutex.unlock() }

    /// The state, for the transaction holding the lock (and only for it).
    var heldState: State {
        get { state }
        set { state = newValue }
    }
}

/// The locks of the transaction running on the current task, if any: lets collection locks
/// refuse a write that would wait for its own transaction, and ``Store/transaction(_:)`` refuse
/// to nest.
enum TransactionScope {
    @TaskLocal static var current: HeldLocks?
}

/// The collection locks a ``Transaction`` holds, as ``CollectionLock`` asks about them. Unlike
/// the transaction, it is `Sendable` (a task-local value is inherited by the tasks the body
/// starts, which may ask from other threads), so its set is under a mutex.
final class HeldLocks: Sendable {
    private let locks = Mutex<Set<ObjectIdentifier>>([])

    /// Whether the transaction holds `lock`.
    func holds(_ lock: AnyObject) -> Bool {
        locks.withLock { $0.contains(ObjectIdentifier(lock)) }
    }

    func insert(_ lock: AnyObject) {
        _ = locks.withLock { $0.insert(ObjectIdentifier(lock)) }
    }

    func removeAll() {
        locks.withLock { $0.removeAll() }
    }
}
