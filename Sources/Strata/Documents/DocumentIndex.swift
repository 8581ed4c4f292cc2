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
/// - An emitted `null` key (`emit(nil, …)`) is skipped. A key holding a non-finite number cannot
///   be collated: the save fails with ``StrataError/invalidArgument(_:)``, as it does when `map`
///   throws; nothing is written.
/// - Documents given to `map` carry their fields and metadata but no attachments.
public struct DocumentIndex: Sendable {
    /// The function type of `map`: the document, and the `emit(key, value)` to call.
    public typealias Map = @Sendable (_ document: Document, _ emit: (JSON, JSON?) -> Void) throws -> Void

    /// The index's name, unique in its database.
    public let name: String
    /// The version of `map` and `reduce`; a change rebuilds the index.
    public let version: String
    /// The map function.
    public let map: Map
    /// The reduction, if the index has one.
    public let reduce: Reduction?

    /// An index named `name` at `version`, with its map function and optional reduction.
    public init(name: String, version: String, map: @escaping Map, reduce: Reduction? = nil) {
        self.name = name
        self.version = version
        self.map = map
        self.reduce = reduce
    }
}
