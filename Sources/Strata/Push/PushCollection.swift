@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Keyspace {
    /// Push subscriptions: devices, subscriptions, item states, the outbox: `(17, kind, …)`.
    package static let push = Keyspace(id: 17, name: "push")
}

extension CollectionKind {
    /// The store's push subscriptions (keyspace 17); no catalog entry, the id names the
    /// collection's shared state in the store's registry.
    package static let push = CollectionKind(id: 5, name: "push subscriptions")
}

/// Push subscriptions as a kind of collection (``CollectionModule``): keyspace 17 (FORMAT.md §18).
///
/// A store with any subscription starts matching at open, so that an update made before the
/// program asks for ``Store/pushNotifications(options:)`` still creates its notifications: the
/// subscriptions are read and checked in recovery's first phase (a fault refuses the open and
/// leaves every file as it was) and the push participant is registered when the store attaches.
enum PushCollection: CollectionModule {
    static let keyspaces: [Keyspace] = [.push]
    static let kinds: [CollectionKind] = [.push]
    static var inspector: (any CollectionInspector.Type)? { PushInspector.self }

    static func load(from snapshot: Snapshot) throws -> (any Sendable)? {
        let prefix = PushLayout.prefix(2)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        guard try cursor.next() else { return nil }
        return try PushModel.load(from: snapshot)
    }

    static func attach(to store: Store, loaded: (any Sendable)?) throws {
        guard let model = loaded as? PushModel else { return }
        _ = try store.collections.state(kind: .push, name: PushState.registryName, as: PushState.self) {
            try PushState(store: store, loaded: model)
        }
    }
}
