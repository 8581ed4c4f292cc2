@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What an index query selects and how: keys or a key range, order, paging, reduction, grouping.
///
/// Couchbase Lite 1.x / CouchDB view semantics:
/// - Rows are ordered by key in the index's collation order (null < false < true < numbers <
///   strings < arrays < objects; arrays element by element; strings by code point, or by the
///   Unicode Collation Algorithm in a ``DocumentIndex/Collation/unicode`` index), then by
///   document id, then by the order of the `emit` calls. In a `.unicode` index, keys the
///   algorithm ranks equal (a precomposed and a decomposed `é`) are one key for `.keys`, ranges
///   and groups; between them rows order by code point.
/// - `.range(start:end:inclusiveEnd:)`: `start` is where the scan begins and `end` where it
///   stops — so with ``descending`` `start` is the **upper** key, as in CouchDB and Couchbase
///   Lite (`.range(start: 100, end: 10)` with `descending` gives the keys from 100 down to 10).
///   A nil bound is open. `start` is inclusive; `end` is inclusive unless `inclusiveEnd` is false.
/// - `.keys([k1, k2, …])`: the rows of each key, in the order the keys are given.
/// - ``reduce``: nil reduces when the index has a reduction; `true` on an index without one
///   throws ``StrataError/invalidArgument(argument:reason:)``. Reducing without ``groupLevel`` gives one row
///   with key `null` (none if no row is selected); with a group level n, one row per group of
///   keys: array keys grouped by their first n elements, other keys by their whole value
///   (`groupLevel: Int.max` groups by exact key, CouchDB's `group=true`; `0` is one group).
/// - ``skip`` and ``limit`` apply last, to the rows (or reduced rows) in result order.
///
/// ```swift
/// var q = IndexQuery.range(start: 1000, end: nil)
/// q.descending = false
/// q.limit = 50
/// let page = try db.query("InvoiceCostIndex", q)
/// ```
public struct IndexQuery: Sendable, Hashable {
    /// Which keys a query selects.
    public enum Selection: Sendable, Hashable {
        /// Every row.
        case all
        /// The rows with one of these keys, key by key in the order given.
        case keys([JSON])
        /// The rows from `start` to `end` (see ``IndexQuery`` for the direction rules).
        case range(start: JSON?, end: JSON?, inclusiveEnd: Bool)
    }

    /// The keys selected.
    public var selection: Selection
    /// At most this many rows (nil: no limit). Must not be negative.
    public var limit: Int?
    /// Rows to leave out at the start of the result. Must not be negative.
    public var skip: Int = 0
    /// Whether rows come in descending key order.
    public var descending: Bool = false
    /// Whether to reduce: nil reduces exactly when the index has a reduction.
    public var reduce: Bool?
    /// Group reduced rows by the first `groupLevel` elements of array keys (nil: no grouping).
    /// Only for reduced queries; must not be negative.
    public var groupLevel: Int?

    /// A query of `selection` with default options.
    public init(_ selection: Selection) {
        self.selection = selection
    }

    /// Every row of the index.
    public static var all: IndexQuery { IndexQuery(.all) }

    /// The rows whose key is one of `keys`, in the order of `keys`.
    public static func keys(_ keys: [JSON]) -> IndexQuery { IndexQuery(.keys(keys)) }

    /// The rows from `start` to `end`; nil bounds are open. With ``descending``, `start` is the
    /// upper key.
    public static func range(start: JSON? = nil, end: JSON? = nil, inclusiveEnd: Bool = true) -> IndexQuery {
        IndexQuery(.range(start: start, end: end, inclusiveEnd: inclusiveEnd))
    }
}
