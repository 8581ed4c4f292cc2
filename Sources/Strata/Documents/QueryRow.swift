@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One row of an index query: an emitted key and value with the document that emitted them, or
/// a reduced group.
public struct QueryRow: Sendable, Hashable {
    /// The emitted key, in its collation class's canonical form (a whole-number double as an
    /// integer — `1.0` reads back as `1`, which collates and compares `==` equal to it — and a
    /// date as its ISO 8601 string); for a reduced row, the group's key (`null` when the whole
    /// selection is reduced to one row, the key's first `groupLevel` elements for a grouped array
    /// key, taken from the group's first row).
    public let key: JSON
    /// The emitted value (nil when the map emitted none), or the reduction's result.
    public let value: JSON?
    /// The id of the document that emitted the row; nil for reduced rows.
    public let documentID: String?

    /// A row.
    public init(key: JSON, value: JSON?, documentID: String?) {
        self.key = key
        self.value = value
        self.documentID = documentID
    }
}
