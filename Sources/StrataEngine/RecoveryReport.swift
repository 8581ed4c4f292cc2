@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// What opening a store found in its write-ahead logs, and what it did about it
/// (``Store/recovery``).
///
/// Open replays every log the segments do not cover. A log whose final write a crash cut short
/// (a *torn tail*, FORMAT.md 4.3) is read up to the last whole record and the rest is discarded:
/// each such cut is listed here, so that a cut never goes unnoticed. A batch that was acknowledged
/// under `.synchronous` durability is never in a torn tail; a `.buffered` one written in the last
/// sync interval before a power loss can be.
///
/// ```swift
/// let store = try Store.open(at: url)
/// for cut in store.recovery.cutTails { log.warning("\(cut)") }
/// ```
public struct RecoveryReport: Sendable, Equatable, Codable {
    /// The end of one log that open discarded.
    public struct CutTail: Sendable, Equatable, Codable, CustomStringConvertible {
        /// The log file.
        public var file: String
        /// Where the discarded bytes start: the end of the last whole record.
        public var offset: Int
        /// How many bytes were discarded (to the end of the file).
        public var bytesCut: Int
        /// What was wrong with the bytes at `offset`.
        public var reason: String

        public var description: String { "\(file) at offset \(offset): torn tail of \(bytesCut) bytes cut (\(reason))" }

    package init(file: String, offset: Int, bytesCut: Int, reason: String) {
        self.file = file
        self.offset = offset
        self.bytesCut = bytesCut
        self.reason = reason
    }
}

    /// Every torn tail discarded, in log order; empty after a clean shutdown.
    public var cutTails: [CutTail] = []
    /// The logs replayed.
    public var logsReplayed = 0
    /// The log records (committed batches, several of which group commit may have merged) replayed.
    public var batchesReplayed = 0

    /// True when open discarded nothing.
    public var isClean: Bool { cutTails.isEmpty }

    /// A report of a recovery that replayed nothing and cut nothing.
    public init() {}
}
