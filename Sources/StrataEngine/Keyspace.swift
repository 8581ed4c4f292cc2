@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A keyspace of a store: the first element of every key (DESIGN.md, "Keys"), and its name for
/// tools.
///
/// The engine itself knows none of them but the catalog's and the raw key-value API's; each kind
/// of collection declares its own in its folder, and the store's one list of kinds
/// (Strata/Store/StoreCollections.swift) names them all for tools. Ids are written into every key on disk: never change or
/// reuse one.
package struct Keyspace: Hashable, Sendable {
    package let id: UInt64
    /// For tools, e.g. "time-series events".
    package let name: String
    /// The encoded first tuple element shared by every key of the keyspace.
    package let prefix: [UInt8]

    /// A keyspace; `name` is for tools (the table names every keyspace of a store).
    package init(id: UInt64, name: String = "") {
        self.id = id
        self.name = name
        var encoder = TupleKeyEncoder(reservingCapacity: 9)
        encoder.append(id)
        self.prefix = encoder.bytes
    }

    package static func == (a: Keyspace, b: Keyspace) -> Bool { a.id == b.id }
    package func hash(into hasher: inout Hasher) { hasher.combine(id) }

    package func key(_ suffix: [UInt8]) -> [UInt8] { prefix + suffix }

    /// Collection catalog, the engine's own: names to ids, options, head state: `(0, kind, name)`.
    package static let catalog = Keyspace(id: 0, name: "catalog")
    /// The raw key-value API of the store (`put`, `get`, `delete`, `scan`).
    package static let keyValue = Keyspace(id: 1, name: "key-value")

    /// The first key after every key of the keyspace.
    package var end: [UInt8] { Keyspace(id: id + 1, name: "").prefix }
}
