import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The shared state of one open collection (a series' next sequence and subscribers, a
/// database's indexes and observers, …). Every handle to the same collection of a store uses the
/// same state object, so that counters and subscriptions are shared.
protocol CollectionState: AnyObject, Sendable {
    /// The store is closing: finish streams and release what the collection holds. Later calls
    /// fail with ``StrataError/closed`` through the engine.
    func storeDidClose()
    /// The engine entered the failed state (a failed log sync, rotation, directory sync or
    /// publish): end every stream of the collection by throwing `error`, and throw it from every
    /// later subscription. Reads go on working; writes fail through the engine. May be called more
    /// than once, and after ``storeDidClose()``.
    func storeDidFail(_ error: StrataError)
}

/// The open collections of a store, keyed by kind and name.
///
/// Each collection's state is made at most once, in a per-key cell: the registry's lock is held
/// only to find or add a cell, never while a state is made (which recovers the collection and
/// may write the catalog). So making one collection's state never delays opening another, and
/// concurrent opens of one collection wait for the one state being made and share it.
final class CollectionRegistry: Sendable {
    /// A collection's kind and name, the name compared byte for byte as the catalog stores it:
    /// Swift's `String` equality would take two canonically equivalent names (`"caf\u{E9}"` and
    /// `"cafe\u{301}"`), which are two collections on disk, for one.
    private struct Key: Hashable {
        let kind: CollectionKind
        let name: [UInt8]

        init(kind: CollectionKind, name: String) {
            self.kind = kind
            self.name = Array(name.utf8)
        }
    }

    /// One collection's state, or the making of it.
    private final class Cell: Sendable {
        enum Value {
            case making
            case made(any CollectionState)
            /// The maker failed: its waiters try again (and make it themselves).
            case failed
        }

        private let lock = ConditionLock()
        private let value = Mutex<Value>(.making)

        /// The state once it is made, or nil if its maker failed.
        func wait() -> (any CollectionState)? {
            lock.withLock {
                while true {
                    switch value.withLock({ $0 }) {
                    case .making: lock.wait()
                    case .made(let state): return state
                    case .failed: return nil
                    }
                }
            }
        }

        /// The state if it is made, without waiting.
        func peek() -> (any CollectionState)? {
            if case .made(let state) = value.withLock({ $0 }) { return state }
            return nil
        }

        func finish(_ result: Value) {
            lock.withLock {
                value.withLock { $0 = result }
                lock.broadcast()
            }
        }
    }

    private let cells = Mutex<[Key: Cell]>([:])
    private let closed = Mutex(false)
    /// The engine's failure, once ``failAll(_:)`` was told of it.
    private let failure = Mutex<StrataError?>(nil)

    /// The keys whose states the current thread (task) is making, to refuse a re-entrant make of
    /// the same key instead of waiting for itself.
    @TaskLocal private static var making: Set<ObjectIdentifier> = []

    /// The state of a collection, made by `create` when it is not open yet. `create` runs
    /// without the registry's lock (it may open other collections); concurrent calls for the same
    /// collection wait for it and return the state it made. If `create` throws, the error goes to
    /// its caller and a waiter makes the state itself.
    func state<State: CollectionState>(kind: CollectionKind, name: String, as type: State.Type,
                                       create: () throws -> State) throws -> State {
        let key = Key(kind: kind, name: name)
        while true {
            let (cell, mine) = cells.withLock { cells -> (Cell, Bool) in
                if let cell = cells[key] { return (cell, false) }
                let cell = Cell()
                cells[key] = cell
                return (cell, true)
            }
            if !mine {
                guard !Self.making.contains(ObjectIdentifier(cell)) else {
                    throw StrataError.invalidArgument(argument: "name", reason: "\(kind.name) \"\(name)\" is opened again while it is being opened")
                }
                guard let existing = cell.wait() else { continue }
                guard let typed = existing as? State else {
                    throw StrataError.typeMismatch("\(kind.name) \"\(name)\" is open as \(Swift.type(of: existing)), not \(State.self)")
                }
                return typed
            }
            let created: State
            do {
                created = try Self.$making.withValue(Self.making.union([ObjectIdentifier(cell)])) { try create() }
            } catch {
                cells.withLock { cells in
                    if cells[key] === cell { cells.removeValue(forKey: key) }
                }
                cell.finish(.failed)
                throw error
            }
            cell.finish(.made(created))
            // The engine failed or the store closed while this state was made: it missed failAll
            // or closeAll, so tell it here.
            if let e = failure.withLock({ $0 }) { created.storeDidFail(e) }
            if closed.withLock({ $0 }) { created.storeDidClose() }
            return created
        }
    }

    /// Forgets a collection (after it was dropped); a later open makes a new state.
    func remove(kind: CollectionKind, name: String) {
        _ = cells.withLock { $0.removeValue(forKey: Key(kind: kind, name: name)) }
    }

    /// Tells every open collection that the engine failed with `error` (the collections stay
    /// open). A state being made meanwhile is told by its maker, which checks `failure` after
    /// publishing the state.
    func failAll(_ error: StrataError) {
        let all = cells.withLock { cells -> [Cell] in
            failure.withLock { if $0 == nil { $0 = error } }
            return Array(cells.values)
        }
        for cell in all {
            if let state = cell.peek() { state.storeDidFail(error) }
        }
    }

    /// Tells every open collection that the store closes, and forgets them all. A state being
    /// made meanwhile is told by its maker, which checks `closed` after publishing the state.
    func closeAll() {
        let all = cells.withLock { cells -> [Cell] in
            closed.withLock { $0 = true }
            defer { cells.removeAll() }
            return Array(cells.values)
        }
        for cell in all {
            if let state = cell.peek() { state.storeDidClose() }
        }
    }
}
