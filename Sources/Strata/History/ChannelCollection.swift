@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Keyspace {
    /// History messages: `(3, channelId, timetoken)`.
    package static let channelMessages = Keyspace(id: 3, name: "history messages")
    /// Channel heads (last timetoken and floor): `(10, channelId)`.
    package static let channelHeads = Keyspace(id: 10, name: "channel heads")
}

extension CollectionKind {
    package static let channel = CollectionKind(id: 2, name: "channel")
}

/// History channels as a kind of collection (``CollectionModule``): keyspaces 3 and 10, catalog
/// kind 2 (FORMAT.md §12, §15).
///
/// Attaching does nothing: the store's history state (HistoryStoreState), which registers the
/// compaction filter of keyspace 3, reads every channel head to restart the timetoken clock, so
/// it is made at the first use of a channel rather than at every open. Until then no channel's
/// retention applies, which only keeps messages longer.
enum ChannelCollection: CollectionModule {
    static let keyspaces: [Keyspace] = [.channelMessages, .channelHeads, .channelReplication]
    static let kinds: [CollectionKind] = [.channel]
    static var inspector: (any CollectionInspector.Type)? { ChannelInspector.self }
    static var pushAdapter: PushSubscription.DataAdapter? { .history }
}
