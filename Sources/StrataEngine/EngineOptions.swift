import Logging
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// When a write returns, relative to stable storage.
public enum Durability: Sendable, Equatable {
    /// A write returns after its batch is on stable storage (`fdatasync` of the log).
    /// Concurrent writers share one sync (group commit).
    case synchronous
    /// A write returns once the OS has the batch. The log is synced on a short interval
    /// (``StoreOptions/syncInterval``), on ``Store/sync()`` and on close: a crash of the process
    /// loses nothing, a crash of the machine may lose the last interval.
    case buffered
}

/// The engine's settings, derived from ``StoreOptions``.
package struct EngineOptions: Sendable {
    package var durability: Durability = .synchronous
    package var memtableSize = 64 << 20
    package var segment = SegmentWriterOptions()
    package var targetSegmentSize = 64 << 20
    package var cacheSize = 256 << 20
    package var syncInterval: Double = 0.1
    /// Compaction starts when there are at least this many sorted runs.
    package var compactionTrigger = 4
    /// A run joins a compaction while its size is at most this factor times the runs before it.
    package var compactionSizeRatio = 1.2
    /// The most runs one compaction merges, so that each finishes soon and progress is steady.
    package var maxMergeWidth = 10
    /// Writers wait for compaction while there are this many sorted runs (bounds read cost).
    package var stopWritesRuns = 20
    /// Memtables waiting to be flushed before writers wait.
    package var maxImmutableMemtables = 2
    /// Where the engine reports what it decides on its own (``EngineLog``); nil is silent.
    package var logger: Logger?

    /// The file system the engine's every file goes through, with the store's I/O environment
    /// (faults and observers of tests; the OS alone by default).
    package var fileSystem = FileSystem.real

    /// The store's key (``StoreOptions/encryptionKey``): every log, segment and manifest the
    /// engine writes is sealed with it, and every one it reads must be. Kept in the segment
    /// options, which the segment writers take.
    package var encryptionKey: EncryptionKey? {
        get { segment.encryptionKey }
        set { segment.encryptionKey = newValue }
    }

    /// The defaults; callers set what they change.
    package init() {}
}

/// What a compaction filter decides about a record.
package typealias CompactionFilter = @Sendable (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool
