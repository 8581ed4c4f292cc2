@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The store-wide part of message history, one per open store: the timetoken clock and the
/// compaction filter's rules. Registered in the collection registry under the channel kind and the
/// empty name, which no channel can have.
final class HistoryStoreState: CollectionState {
    /// The registry name of the store-wide state (channel names are never empty).
    static let registryName = ""

    let engine: Engine
    /// The store's executor, for the `async` twins.
    let executor: StoreExecutor
    let catalog: Catalog
    let clock: TimetokenClock
    let rules = FloorRules()
    /// The store's default publisher (``StoreOptions/principal``), nil if empty.
    let principal: String?

    /// Reads every channel head (to restart the clock above every timetoken handed out) and every
    /// channel's options (for the compaction filter), then registers the filter.
    /// The store's running replications, which its close stops.
    let replications: ReplicationRegistry

    init(engine: Engine, executor: StoreExecutor, catalog: Catalog, options: StoreOptions,
         replications: ReplicationRegistry) throws {
        self.replications = replications
        self.engine = engine
        self.executor = executor
        self.catalog = catalog
        principal = options.principal.isEmpty ? nil : options.principal
        let snapshot = try engine.snapshot()
        let heads = try ChannelHead.all(in: snapshot)
        clock = TimetokenClock(clock: options.clock, last: heads.values.map(\.last).max() ?? 0)
        for (name, entry) in try Catalog.entries(kind: .channel, in: snapshot) {
            let descriptor = try ChannelDescriptor(decoding: entry.payload, channel: name)
            rules.set(entry.id, .init(floor: heads[entry.id]?.floor ?? 0, retention: descriptor.retention,
                                      limited: descriptor.limit != nil))
        }
        let rules = self.rules
        let clock = self.clock
        engine.setCompactionFilter(keyspace: Keyspace.channelMessages.id) { key, _ in
            rules.keep(key: key, now: clock.now)
        }
    }

    func storeDidClose() {}

    func storeDidFail(_ error: StrataError) {}

    /// Checks a channel name: not empty, at most 4 KiB of UTF-8.
    static func check(name: String) throws {
        guard !name.isEmpty else { throw StrataError.invalidArgument(argument: "name", reason: "channel name is empty") }
        guard name.utf8.count <= 4096 else {
            throw StrataError.invalidArgument(argument: "name", reason: "channel name of \(name.utf8.count) bytes exceeds 4096 bytes")
        }
    }
}

extension Store {
    /// The store-wide history state, created on first use.
    func historyState() throws -> HistoryStoreState {
        try collections.state(kind: .channel, name: HistoryStoreState.registryName, as: HistoryStoreState.self) {
            try HistoryStoreState(engine: engine, executor: executor, catalog: catalog, options: options,
                                  replications: replications)
        }
    }

    /// The shared state of channel `name`; with `create`, the channel is created (with message
    /// type `typeName` and `options`) if it does not exist, otherwise ``StrataError/notFound(kind:name:reason:)``.
    /// `authorizeCreate` (a session's check) runs before a missing channel is created.
    func channelState(_ name: String, create: (typeName: String, options: ChannelOptions)?,
                      authorizeCreate: () throws -> Void = {}) throws -> ChannelState {
        try HistoryStoreState.check(name: name)
        let history = try historyState()
        return try collections.state(kind: .channel, name: name, as: ChannelState.self) {
            let entry: CatalogEntry
            if let create {
                entry = try catalog.openOrCreate(kind: .channel, name: name) {
                    try authorizeCreate()
                    return ChannelDescriptor(typeName: create.typeName, options: create.options).encoded
                }.entry
            } else {
                guard let existing = try catalog.entry(kind: .channel, name: name) else {
                    throw StrataError.notFound(kind: .channel, name: name, reason: "channel \"\(name)\"")
                }
                entry = existing
            }
            return try ChannelState(name: name, entry: entry, history: history, broadcaster: broadcaster)
        }
    }
}
