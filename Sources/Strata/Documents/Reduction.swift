@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How an index reduces the rows a query selects to one value per group.
///
/// - ``count``: the number of rows (an `int`).
/// - ``sum``: the sum of the rows' values, which must be numbers (an `int` while every value is
///   an integer and the sum fits in 64 bits, else a `double`).
/// - ``stats``: an object `{"sum", "count", "min", "max", "sumsqr"}` of the numeric values, as
///   CouchDB's `_stats`.
/// - ``custom(_:)``: your function, CouchDB style: it is called with the keys and values of a
///   chunk of rows (`rereduce` false), and, when a group holds more rows than one chunk, again
///   with the partial results of the chunks as values and no keys (`rereduce` true). So the
///   function must give the same result however the rows are split: `count` is
///   `rereduce ? sum(values) : values.count`.
public enum Reduction: Sendable {
    /// The number of rows.
    case count
    /// The sum of the rows' numeric values.
    case sum
    /// `{"sum", "count", "min", "max", "sumsqr"}` of the rows' numeric values.
    case stats
    /// A function of the keys and values of a chunk of rows, or of partial results (`rereduce`).
    case custom(@Sendable (_ keys: [JSON], _ values: [JSON], _ rereduce: Bool) throws -> JSON)

    /// How many rows a custom reduction receives at once before its partial results are
    /// re-reduced.
    static let chunkSize = 512

    /// A short name for tools and messages.
    var name: String {
        switch self {
        case .count: return "count"
        case .sum: return "sum"
        case .stats: return "stats"
        case .custom: return "custom"
        }
    }
}
