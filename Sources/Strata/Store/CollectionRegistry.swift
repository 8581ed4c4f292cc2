import Synchronization

/// The shared state of one open collection (a series' next sequence and subscribers, a
/// database's indexes and observers, …). Every handle to the same collection of a store uses the
/// same state object, so that counters and subscriptions are shared.
protocol CollectionState: AnyObject, Sendable {
    /// The store is closing: finish streams and release what the collection holds. Later calls
    /// fail with ``StrataError/closed`` through the engine.
    func storeDidClose()
}

/// The open collections of a store, keyed by kind and name.
final class CollectionRegistry: Sendable {
    private struct Key: Hashable {
        let kind: CollectionKind
        let name: String
    }

    private let states = Mutex<[Key: any CollectionState]>([:])

    /// The state of a collection, made by `create` (under the registry's lock, so at most once)
    /// when it is not open yet. `create` runs with the lock held: it must not call back into the
    /// registry.
    func state<State: CollectionState>(kind: CollectionKind, name: String, as type: State.Type,
                                       create: () throws -> State) throws -> State {
        try states.withLock { states in
            if let existing = states[Key(kind: kind, name: name)] {
                guard let typed = existing as? State else {
                    throw StrataError.typeMismatch("\(kind.name) \"\(name)\" is open as \(Swift.type(of: existing)), not \(State.self)")
                }
                return typed
            }
            let created = try create()
            states[Key(kind: kind, name: name)] = created
            return created
        }
    }

    /// Forgets a collection (after it was dropped); a later open makes a new state.
    func remove(kind: CollectionKind, name: String) {
        _ = states.withLock { $0.removeValue(forKey: Key(kind: kind, name: name)) }
    }

    /// Tells every open collection that the store closes, and forgets them all.
    func closeAll() {
        let all = states.withLock { states -> [any CollectionState] in
            defer { states.removeAll() }
            return Array(states.values)
        }
        for state in all { state.storeDidClose() }
    }
}
