import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Keyspace 2's ``RecordTransform``: flushes and compactions store runs of consecutive events of
/// a series as chunks (FORMAT.md §14.6). It knows the value type of every series opened since the
/// store opened; the events of other series pass through unchanged until a later compaction.
final class SeriesChunkTransform: RecordTransform {
    /// Value column kinds (``SeriesChunk/valueKind(typeName:)``) by series id.
    private let kinds = Mutex<[UInt64: UInt8]>([:])
    let limits: SeriesChunkBuilder.Limits

    init(limits: SeriesChunkBuilder.Limits = .default) { self.limits = limits }

    /// Records the value type of series `id` (fixed when the series is created).
    func register(series id: UInt64, typeName: String) {
        let kind = SeriesChunk.valueKind(typeName: typeName)
        kinds.withLock { $0[id] = kind }
    }

    func kind(of id: UInt64) -> UInt8? { kinds.withLock { $0[id] } }

    func makeRewriter(damage: DamageReporter) -> any RecordRewriter {
        SeriesChunkBuilder(limits: limits, kinds: kinds.withLock { $0 }, damage: damage)
    }
}
