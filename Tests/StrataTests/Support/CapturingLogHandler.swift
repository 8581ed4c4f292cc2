import Logging
import Synchronization

/// A log handler that keeps every message, for tests of what the store logs. Thread-safe: copies
/// of the handler (a `Logger` holds one per copy) share one record.
struct CapturingLogHandler: LogHandler {
    /// One logged message, its metadata flattened to strings.
    struct Entry: Sendable, CustomStringConvertible {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]

        var description: String { "[\(level)] \(message) \(metadata.sorted { $0.key < $1.key })" }
    }

    /// The messages every copy of a handler has logged.
    final class Record: Sendable {
        private let entries = Mutex<[Entry]>([])
        fileprivate func append(_ e: Entry) { entries.withLock { $0.append(e) } }
        var all: [Entry] { entries.withLock { $0 } }
        func at(_ level: Logger.Level) -> [Entry] { all.filter { $0.level == level } }
        func containing(_ message: String) -> [Entry] { all.filter { $0.message.contains(message) } }
    }

    let record: Record
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    var metadataProvider: Logger.MetadataProvider?

    init(record: Record, logLevel: Logger.Level = .trace) {
        self.record = record
        self.logLevel = logLevel
    }

    /// A logger at `level` whose messages go to a new record.
    static func logger(level: Logger.Level = .trace) -> (Logger, Record) {
        let record = Record()
        return (Logger(label: "strata.test") { _ in CapturingLogHandler(record: record, logLevel: level) }, record)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        record.append(Entry(level: event.level, message: event.message.description,
                            metadata: merged.mapValues { $0.description }))
    }
}
