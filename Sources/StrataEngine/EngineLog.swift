import Dispatch
import Logging
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// Where the engine tells what it decides on its own, as RocksDB writes its LOG file: a torn log
/// tail cut at open, a flush or compaction and what it wrote, a failed one, a write stall, and the
/// failure that stops writes (``StoreOptions/logger``). Without a logger it does nothing, and
/// nothing it would have said is even computed.
///
/// Each message is handed to the logger on a serial queue of the log's own, in the order the
/// engine reported them: never on a thread that holds the engine's lock (a log handler may be
/// slow, or call back into the store), and never delaying a writer or a background job.
/// ``drain()`` waits for what was reported so far; close calls it, so that a store has said
/// everything when ``Store/close()`` returns.
///
/// Levels: `.error` for the failed state and for damage (``DamageRecorder``), `.warning` for a torn tail and for failed background
/// work, `.info` for a flush, a compaction and a write stall once over, `.debug` for details.
package struct EngineLog: Sendable {
    private let logger: Logger?
    private let queue: DispatchQueue?

    /// A log that says nothing.
    package static let silent = EngineLog(logger: nil, directory: "")

    /// Every message carries the store's directory under `strata.store`.
    package init(logger: Logger?, directory: String) {
        guard var logger else {
            self.logger = nil
            self.queue = nil
            return
        }
        logger[metadataKey: "strata.store"] = "\(directory)"
        self.logger = logger
        self.queue = DispatchQueue(label: "strata.log")
    }

    /// Whether a message at `level` would be logged.
    package func isEnabled(_ level: Logger.Level) -> Bool {
        guard let logger else { return false }
        return logger.logLevel <= level
    }

    /// Reports a message. `message` and `metadata` are evaluated here, and only when `level` is
    /// enabled (a caller holding the lock may read the state it guards in them); the logger is
    /// called later, on the log's queue.
    package func callAsFunction(_ level: Logger.Level, _ message: @autoclosure () -> Logger.Message,
                        _ metadata: @autoclosure () -> Logger.Metadata = [:],
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard let logger, let queue, logger.logLevel <= level else { return }
        let message = message()
        let metadata = metadata()
        queue.async {
            logger.log(level: level, message, metadata: metadata, file: file, function: function, line: line)
        }
    }

    /// Waits until every message reported so far has been handed to the logger.
    package func drain() {
        queue?.sync {}
    }

    /// Milliseconds since `start` (a `DispatchTime.uptimeNanoseconds`), for durations in metadata.
    package static func milliseconds(since start: UInt64) -> String {
        let ns = DispatchTime.now().uptimeNanoseconds &- start
        return "\(Double(ns / 1000) / 1000)"
    }

    /// The names of segment files, for metadata.
    package static func segmentNames(_ numbers: [UInt64]) -> Logger.MetadataValue {
        .array(numbers.map { .string(FileNames.segment($0)) })
    }
}
