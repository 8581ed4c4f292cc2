@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The one contract between the store and a kind of collection (time series, channels, document
/// databases, push subscriptions, the security policy).
///
/// Each kind implements it once, in its own folder, and is listed once in
/// ``StoreCollections/all`` (Store/StoreCollections.swift): the store, the engine, transactions,
/// push and the tools ask the list, and none of them names a kind. A new kind is one folder plus
/// one line there:
/// - the ids it writes: its keyspaces (the first element of its keys) and its catalog kinds
///   (the second element of `(0, kind, name)`), unique across the list (`StoreCollectionsTests`);
/// - recovery: ``load(from:)`` reads and checks its state in recovery's first phase, before
///   anything is written, so that damage refuses the open and changes nothing (FORMAT.md §4.5);
/// - ``attach(to:loaded:)`` registers what it needs of the engine when the store opens — its
///   commit participants, and compaction filters and record transforms that must apply before
///   any of its collections is opened (time series and channels register theirs at the first
///   open of a collection instead, see their modules);
/// - transactions: its `Transaction` accessor, its handle and the ``Hold`` of its writer lock
///   live in its folder (`Transaction<Kind>.swift`); Store/Transaction.swift names no kind;
/// - push: ``pushAdapter`` names the data adapter whose items are its collections, and its commit
///   changes adopt ``PushItemUpdates``;
/// - sessions: ``pathKinds`` are the catalog kinds whose collections a session checks by path;
/// - the tools: ``describe(key:)`` renders its keys for `strata-dump`, and its
///   ``inspector`` is its `strata-dump` view (its own subcommand).
///
/// REQUIRES: the ids are on disk; never change or reuse one.
protocol CollectionModule: Sendable {
    /// The keyspaces the kind owns, each with its name for tools.
    static var keyspaces: [Keyspace] { get }
    /// The catalog kinds of its collections (and of its shared state in the store's registry).
    static var kinds: [CollectionKind] { get }
    /// The kind's state, read and checked from the recovered image in recovery's first phase;
    /// nil when there is nothing to start at open. Must not write.
    static func load(from snapshot: Snapshot) throws -> (any Sendable)?
    /// Called once per open, after recovery and before the store is returned, with what
    /// ``load(from:)`` returned. A throw refuses the open (the engine is closed again).
    static func attach(to store: Store, loaded: (any Sendable)?) throws
    /// The push data adapter whose items are this kind's collections, if its updates can be
    /// pushed (``PushItemUpdates``).
    static var pushAdapter: PushSubscription.DataAdapter? { get }
    /// The catalog kinds whose collections sessions check by path (``SecurityPolicy``); by
    /// default every one of ``kinds``.
    static var pathKinds: [CollectionKind] { get }
    /// One of its keys as the tools show it, or nil to leave it to the generic tuple rendering.
    static func describe(key: [UInt8]) -> String?
    /// The kind's `strata-dump` view, if it has one.
    static var inspector: (any CollectionInspector.Type)? { get }
}

extension CollectionModule {
    static func load(from snapshot: Snapshot) throws -> (any Sendable)? { nil }
    static func attach(to store: Store, loaded: (any Sendable)?) throws {}
    static var pushAdapter: PushSubscription.DataAdapter? { nil }
    static var pathKinds: [CollectionKind] { kinds }
    static func describe(key: [UInt8]) -> String? { nil }
    static var inspector: (any CollectionInspector.Type)? { nil }
}
