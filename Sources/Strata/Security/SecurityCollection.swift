@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Keyspace {
    /// The security policy of sessions: `(16, 0)` (FORMAT.md §17).
    package static let security = Keyspace(id: 16, name: "security")
}

/// The security policy as a kind of collection (``CollectionModule``): keyspace 16, no catalog
/// entries; the store reads it through ``Store/security`` (SecurityState).
enum SecurityCollection: CollectionModule {
    static let keyspaces: [Keyspace] = [.security]
    static let kinds: [CollectionKind] = []
    static var inspector: (any CollectionInspector.Type)? { SecurityInspector.self }
}
