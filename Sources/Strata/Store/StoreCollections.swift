@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The kinds of collection a store has: the one registration of each ``CollectionModule``.
///
/// Everything that must know every kind — the names of keyspaces for tools, recovery's loading,
/// the engine's filters and transforms, push — reads this list. Adding a kind is its folder and
/// one line here.
package enum StoreCollections {
    /// Every kind, in the order they load and attach at open.
    static let all: [any CollectionModule.Type] = [
        TimeSeriesCollection.self,
        ChannelCollection.self,
        DocumentCollection.self,
        SecurityCollection.self,
        PushCollection.self,
    ]

    /// Every keyspace of this version — the engine's own and every kind's — in id order.
    package static let keyspaces: [Keyspace] =
        ([.catalog, .keyValue] + all.flatMap { $0.keyspaces }).sorted { $0.id < $1.id }

    /// Every collection kind of this version, in id order.
    package static let kinds: [CollectionKind] = all.flatMap { $0.kinds }.sorted { $0.id < $1.id }

    /// The catalog kinds whose collections sessions check by path, in id order.
    package static let pathKinds: [CollectionKind] = all.flatMap { $0.pathKinds }.sorted { $0.id < $1.id }

    /// Every kind's `strata-dump` view, in the order of ``all`` (the order `strata-dump` lists
    /// their subcommands).
    package static let inspectors: [any CollectionInspector.Type] = all.compactMap { $0.inspector }

    /// The name of keyspace `id` for tools, or "keyspace N" for an id no kind of this version uses.
    package static func keyspaceName(_ id: UInt64) -> String {
        if id == .max { return "(no keyspace)" }
        return keyspaces.first { $0.id == id }?.name ?? "keyspace \(id)"
    }

    /// The kind's module that owns catalog kind `kind`.
    static func module(of kind: CollectionKind) -> (any CollectionModule.Type)? {
        all.first { $0.kinds.contains(kind) }
    }

    /// The push data adapter of each catalog kind that offers one (``CollectionModule/pushAdapter``),
    /// built once: push asks it on every commit of a collection while it has subscriptions.
    private static let pushAdapters: [CollectionKind: PushSubscription.DataAdapter] =
        Dictionary(uniqueKeysWithValues: all.flatMap { module in
            module.pushAdapter.map { adapter in module.kinds.map { ($0, adapter) } } ?? []
        })

    /// The push data adapter whose items are the collections of catalog kind `kind`, if any.
    static func pushAdapter(of kind: CollectionKind) -> PushSubscription.DataAdapter? {
        pushAdapters[kind]
    }

    /// `key` rendered by the kind that owns its keyspace, or nil for the generic rendering.
    package static func describe(key: [UInt8]) -> String? {
        for module in all {
            if let text = module.describe(key: key) { return text }
        }
        return nil
    }

    /// What each kind loads in recovery's first phase (``CollectionModule/load(from:)``), in
    /// the order of ``all``.
    static func load(from snapshot: Snapshot) throws -> [(any Sendable)?] {
        try all.map { try $0.load(from: snapshot) }
    }

    /// Attaches every kind to a store that just opened, with what each loaded.
    static func attach(to store: Store, loaded: [(any Sendable)?]) throws {
        for (module, state) in zip(all, loaded) { try module.attach(to: store, loaded: state) }
    }
}
