@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The result of an index query: its rows in order.
public struct IndexQueryResult: Sendable, Hashable {
    /// The rows, after `skip` and `limit`.
    public let rows: [QueryRow]

    /// The number of rows.
    public var count: Int { rows.count }

    /// A result of `rows`.
    public init(rows: [QueryRow]) {
        self.rows = rows
    }
}
