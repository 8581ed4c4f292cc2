@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
///
/// Attaching does nothing: retention's compaction filters and the chunking transform
/// (SeriesRetention) are registered at the first open of a series, so that a store that never
/// opens one compacts exactly as a store without time series (a registered filter makes a full
/// compaction rewrite even a single sorted run).
enum TimeSeriesCollection: CollectionModule {
    static let keyspaces: [Keyspace] = [.timeSeriesEvents, .timeSeriesEditIndex, .seriesReplication]
    static let kinds: [CollectionKind] = [.timeSeries]
    static var inspector: (any CollectionInspector.Type)? { SeriesInspector.self }
    static var pushAdapter: PushSubscription.DataAdapter? { .timeSeries }
}
