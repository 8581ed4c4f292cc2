@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// Counters and sizes of an open store, for monitoring and tuning (see ``Store/statistics``).
///
/// The counters count since the store was opened.
public struct StoreStatistics: Sendable, Codable, Equatable {
    /// Sorted runs now (a point lookup consults at most one segment of each).
    public var sortedRuns: Int
    /// Segment files now.
    public var segments: Int
    /// Bytes of segment files now.
    public var segmentBytes: UInt64
    /// Records in segment files, tombstones and overwritten versions included.
    public var records: UInt64
    /// Bytes held by memtables (active and waiting to be flushed).
    public var memtableBytes: Int
    /// Memtables waiting to be flushed.
    public var immutableMemtables: Int
    /// The sequence number of the last operation.
    public var lastSequence: UInt64
    /// Bytes of write batches committed (what the write-ahead log received).
    public var bytesWritten: UInt64
    /// Memtable flushes.
    public var flushes: UInt64
    /// Bytes of segments written by flushes.
    public var flushBytesWritten: UInt64
    /// Compactions.
    public var compactions: UInt64
    /// Bytes of segments read by compactions.
    public var compactionBytesRead: UInt64
    /// Bytes of segments written by compactions.
    public var compactionBytesWritten: UInt64
    /// The most sorted runs there have been at once.
    public var mostSortedRuns: Int
    /// Bytes of decoded blocks in the block cache.
    public var blockCacheBytes: Int
    /// Write stalls: times a write waited before it could start, because memtables were full and
    /// flushes behind (``StoreOptions/memtableSize``), or because there were too many sorted runs
    /// and compaction behind. Several writers waiting together count once.
    public var writeStalls: UInt64 = 0
    /// The time writes spent in those stalls, in seconds.
    public var writeStallSeconds: Double = 0
    /// Background work that failed: flushes and compactions (each is retried later; while
    /// flushes fail, writes stall and then fail once ``StoreOptions`` allows no more memtables
    /// waiting), deletions of files no longer needed (retried at the next open), and work after
    /// a commit that the acknowledged write does not depend on (a time series' retained range
    /// moving its cutoff: retried on the series' next write).
    public var backgroundFailures: UInt64 = 0
    /// The error of the latest failure counted in ``backgroundFailures``. Not encoded.
    public var lastBackgroundError: StrataError? = nil
    /// Why the store accepts no more writes, or nil while it does: a failed write or sync of the
    /// write-ahead log, a failed directory sync, or a manifest replacement whose outcome is
    /// unknown (FORMAT.md 9). Every write and ``Store/sync()`` then throws it, and so does
    /// ``Store/close()``, and every open stream of the store (series subscriptions, channel
    /// messages, live queries and change streams) ends by throwing it, as does every stream opened
    /// later; reopening the store recovers every acknowledged write. Not encoded.
    public var writeError: StrataError? = nil
    /// Damage met by background work: records a flush or compaction could not read (copied
    /// through unchanged, never dropped), failed releases of waiting push updates (tried again
    /// at the push timer's next wake-up). Each occurrence counts: a damaged record counts again
    /// in every compaction that copies it. Unlike ``backgroundFailures`` (work that failed and is
    /// retried whole), it is what work met and went past; each is also logged at `.error`
    /// (``StoreOptions/logger``; the first of a component, then at most once a minute with the
    /// number not logged since). "Damage met by background work" in the documentation says more.
    public var damage: UInt64 = 0
    /// ``damage`` by the work that met it.
    public var damageByComponent: [DamageComponent: UInt64] = [:]
    /// The latest damages counted in ``damage``, oldest first (at most 16): what, where, when.
    /// Not encoded.
    public var recentDamage: [BackgroundDamage] = []

    /// The latest damage counted in ``damage``, if any. Not encoded.
    public var lastDamage: BackgroundDamage? { recentDamage.last }

    private enum CodingKeys: String, CodingKey {
        case sortedRuns, segments, segmentBytes, records, memtableBytes, immutableMemtables, lastSequence,
             bytesWritten, flushes, flushBytesWritten, compactions, compactionBytesRead, compactionBytesWritten,
             mostSortedRuns, blockCacheBytes, writeStalls, writeStallSeconds, backgroundFailures, damage, damageByComponent
    }

    /// Segment bytes written by flushes and compactions per byte flushed: 1 means every byte
    /// was written once; each compaction that rewrites it adds to it.
    public var writeAmplification: Double {
        flushBytesWritten == 0 ? 0 : Double(flushBytesWritten + compactionBytesWritten) / Double(flushBytesWritten)
    }

    package init(sortedRuns: Int, segments: Int, segmentBytes: UInt64, records: UInt64, memtableBytes: Int, immutableMemtables: Int, lastSequence: UInt64, bytesWritten: UInt64, flushes: UInt64, flushBytesWritten: UInt64, compactions: UInt64, compactionBytesRead: UInt64, compactionBytesWritten: UInt64, mostSortedRuns: Int, blockCacheBytes: Int, writeStalls: UInt64 = 0, writeStallSeconds: Double = 0, backgroundFailures: UInt64 = 0, lastBackgroundError: StrataError? = nil, writeError: StrataError? = nil, damage: UInt64 = 0, damageByComponent: [DamageComponent: UInt64] = [:], recentDamage: [BackgroundDamage] = []) {
        self.sortedRuns = sortedRuns
        self.segments = segments
        self.segmentBytes = segmentBytes
        self.records = records
        self.memtableBytes = memtableBytes
        self.immutableMemtables = immutableMemtables
        self.lastSequence = lastSequence
        self.bytesWritten = bytesWritten
        self.flushes = flushes
        self.flushBytesWritten = flushBytesWritten
        self.compactions = compactions
        self.compactionBytesRead = compactionBytesRead
        self.compactionBytesWritten = compactionBytesWritten
        self.mostSortedRuns = mostSortedRuns
        self.blockCacheBytes = blockCacheBytes
        self.writeStalls = writeStalls
        self.writeStallSeconds = writeStallSeconds
        self.backgroundFailures = backgroundFailures
        self.lastBackgroundError = lastBackgroundError
        self.writeError = writeError
        self.damage = damage
        self.damageByComponent = damageByComponent
        self.recentDamage = recentDamage
    }
}
