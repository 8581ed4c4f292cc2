@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A map/reduce index of a document database (a CouchDB view).
///
/// `map` is called with each document and calls `emit(key, value)` for each row the document
/// contributes (any number, including none). Rows are stored in the engine, kept consistent with
/// every committed write, and ordered by key in collation order.
///
/// ```swift
/// let byCustomer = DocumentIndex(name: "ByCustomer", version: "2", map: { doc, emit in
///     if let customer = doc["Customer"], let date = doc["Date"] {
///         emit([customer, date], doc["TotalCost"])
///     }
/// }, reduce: .sum)
/// ```
///
/// Rules, as in Couchbase Lite 1.x:
/// - `map` must be a pure function of the document: the database runs it again on a document's
///   previous version to find the rows to remove when the document changes. Change `version`
///   whenever `map` or `reduce` changes: a database opened with a different version rebuilds the
///   index from every document.
/// - The key is a `JSON?`: `nil` (a missing field — `doc["x"]` when the document has no `x`)
///   emits nothing, so `emit(doc["x"], …)` indexes only the documents that have the field; an
///   explicit JSON `null` (`emit(.null, …)`, or a field whose value is `null`) is a row like any
///   other, first in collation order (`.all`, `.keys([.null])` and `.range(start: .null)` return
///   it). A key holding a non-finite number cannot be collated: the save fails with
///   ``StrataError/invalidArgument(argument:reason:)``, as it does when `map` throws; nothing is written.
/// - Keys are stored in their collation class's canonical form: a whole-number double comes back
///   as an integer (`emit(1.0, …)` is read back as the key `1`), and `-0.0` as `0`. That loses
///   nothing in the key's meaning: `1` and `1.0` collate equal, and `JSON.int(1) == .double(1.0)`.
///   A date key comes back as its ISO 8601 string. Values are stored as emitted.
/// - Documents given to `map` carry their fields and metadata but no attachments.
///
/// ## Collation
/// `collation` decides how strings in keys sort (everything else sorts the same in both):
/// - ``Collation/raw`` (the default): by Unicode code point, CouchDB's `raw` collation —
///   `"B" < "a"`, `"Z" < "a" < "é"`.
/// - ``Collation/unicode``: the Unicode Collation Algorithm (ICU's root locale, tertiary
///   strength), CouchDB's default — `"a" < "A" < "aa" < "b" < "B"`; punctuation and symbols
///   before digits before letters; case and accents matter only between strings that are
///   otherwise equal. Strings the algorithm ranks equal (a precomposed and a decomposed `é`)
///   are the same key for `.keys`, ranges and `groupLevel`; rows come back with the key as
///   emitted. The order comes from the ICU that the Swift toolchain ships with Foundation; an
///   index remembers the ICU collator's version and is rebuilt when a newer ICU sorts
///   differently.
///
/// A change of `collation` rebuilds the index, as a change of `version` does.
public struct DocumentIndex: Sendable {
    /// The function type of `map`: the document, and the `emit(key, value)` to call.
    public typealias Map = @Sendable (_ document: Document, _ emit: (_ key: JSON?, _ value: JSON?) -> Void) throws -> Void

    /// The index's name, unique in its database.
    public let name: String
    /// The version of `map` and `reduce`; a change rebuilds the index.
    public let version: String
    /// The map function.
    public let map: Map
    /// The reduction, if the index has one.
    public let reduce: Reduction?
    /// How strings in keys sort.
    public let collation: Collation

    /// The order of strings in an index's keys (see "Collation" above).
    public enum Collation: Sendable, Hashable {
        /// By Unicode code point (CouchDB's `raw` collation). The default.
        case raw
        /// By the Unicode Collation Algorithm (CouchDB's default collation).
        case unicode
    }

    /// An index named `name` at `version`, with its map function, optional reduction and
    /// string collation.
    public init(name: String, version: String, map: @escaping Map, reduce: Reduction? = nil,
                collation: Collation = .raw) {
        self.name = name
        self.version = version
        self.map = map
        self.reduce = reduce
        self.collation = collation
    }
}

extension DocumentIndex.Collation {
    /// The collation key of `key` in this collation: §13.3's for `.raw`, §13.4's for `.unicode`.
    func key(_ key: JSON) throws -> [UInt8] {
        switch self {
        case .raw: return key.collationKey
        case .unicode: return try key.unicodeCollationKey()
        }
    }

    /// `key(k) ‖ 0xFF`: above every row whose key collates equal to `k`.
    func keyAfterEqual(_ k: JSON) throws -> [UInt8] {
        var out = try key(k)
        out.append(JSONCollationType.afterAll)
        return out
    }
}
