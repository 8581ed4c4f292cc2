import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The first retained sequence of every open series of a store, shared with the compaction
/// filters of keyspaces 2 and 8 (FORMAT.md §14.4). One per store, registered in the collection
/// registry under the time-series kind and the empty name (no series has an empty path).
///
/// Invariant: the cutoff recorded for a series is never above the cutoff its readers use, and it
/// only grows; records of series not recorded here (not opened since the store opened) are kept.
final class SeriesRetention: CollectionState {
    private let cutoffs = Mutex<[UInt64: UInt64]>([:])
    /// Keyspace 2's record transform, which stores settled events as chunks (FORMAT.md §14.6).
    let chunking = SeriesChunkTransform()

    /// The registry name of the store's one instance.
    static let registryName = ""

    /// The store's instance, made (with its filters registered) on first use.
    static func of(_ store: Store) throws -> SeriesRetention {
        try store.collections.state(kind: .timeSeries, name: registryName, as: SeriesRetention.self) {
            let retention = SeriesRetention()
            let events = Keyspace.timeSeriesEvents.prefix.count
            let index = Keyspace.timeSeriesEditIndex.prefix.count
            store.engine.setCompactionFilter(keyspace: Keyspace.timeSeriesEvents.id) { key, _ in
                retention.keep(key, prefixLength: events, skip: 0)
            }
            store.engine.setCompactionFilter(keyspace: Keyspace.timeSeriesEditIndex.id) { key, _ in
                retention.keep(key, prefixLength: index, skip: 1)
            }
            store.engine.setRecordTransform(keyspace: Keyspace.timeSeriesEvents.id, retention.chunking)
            return retention
        }
    }

    /// Raises the cutoff of series `id` (never lowers it).
    func setCutoff(_ cutoff: UInt64, of id: UInt64) {
        cutoffs.withLock { map in
            if let old = map[id], old >= cutoff { return }
            map[id] = cutoff
        }
    }

    func cutoff(of id: UInt64) -> UInt64? { cutoffs.withLock { $0[id] } }

    /// Whether compaction keeps a record: `(ks, id, [skipped…,] sequence)` is dropped only when its
    /// series is known and `sequence` is below the series' cutoff. Malformed keys are kept.
    func keep(_ key: UnsafeRawBufferPointer, prefixLength: Int, skip: Int) -> Bool {
        var p = prefixLength
        guard let id = EventRecord.readUInt(key, at: &p) else { return true }
        for _ in 0..<skip { guard EventRecord.readUInt(key, at: &p) != nil else { return true } }
        guard let sequence = EventRecord.readUInt(key, at: &p), p == key.count else { return true }
        guard let cutoff = cutoffs.withLock({ $0[id] }) else { return true }
        return sequence >= cutoff
    }

    func storeDidClose() {}

    func storeDidFail(_ error: StrataError) {}
}
