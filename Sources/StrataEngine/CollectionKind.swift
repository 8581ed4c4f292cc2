@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A kind of collection, as the catalog names it: the second element of every catalog key
/// `(0, kind, name)`.
///
/// The engine does not enumerate the kinds: each kind of collection declares its own in its
/// folder (its `CollectionModule`), so that a new collection adds a kind without editing the
/// engine. The id is written into keys: never change or reuse one.
package struct CollectionKind: Hashable, Sendable, CustomStringConvertible {
    package let id: UInt64
    /// For messages and tools, e.g. "time series".
    package let name: String

    package init(id: UInt64, name: String) {
        precondition(id > 0, "kind 0 is the catalog's id counter")
        self.id = id
        self.name = name
    }

    package var description: String { name }

    package static func == (a: CollectionKind, b: CollectionKind) -> Bool { a.id == b.id }
    package func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
