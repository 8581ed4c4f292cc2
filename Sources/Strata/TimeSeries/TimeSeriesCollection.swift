import StrataFormat
import StrataFiles
import StrataEngine

extension Keyspace {
    /// Time-series events: `(2, seriesId, sequence)`.
    package static let timeSeriesEvents = Keyspace(id: 2, name: "time-series events")
    /// The time-series edit index: `(8, seriesId, original, edit)`.
    package static let timeSeriesEditIndex = Keyspace(id: 8, name: "time-series edit index")
}

extension CollectionKind {
    package static let timeSeries = CollectionKind(id: 1, name: "time series")
}

/// Time series as a kind of collection (``CollectionModule``): keyspaces 2 and 8, catalog kind 1
/// (FORMAT.md §12, §14).
enum TimeSeriesCollection: CollectionModule {
    static let keyspaces: [Keyspace] = [.timeSeriesEvents, .timeSeriesEditIndex]
    static let kinds: [CollectionKind] = [.timeSeries]
    static var inspector: (any CollectionInspector.Type)? { SeriesInspector.self }
    static var pushAdapter: PushSubscription.DataAdapter? { .timeSeries }

    /// Registers retention's compaction filters and the chunking transform (SeriesRetention).
    static func attach(to store: Store, loaded: (any Sendable)?) throws {
        _ = try SeriesRetention.of(store)
    }
}
