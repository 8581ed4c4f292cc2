import Foundation
import Logging

/// Structured logs: one JSON object per line on standard error, with `time` (ISO 8601, UTC),
/// `level`, `label`, `message` and the metadata as members (`LOG_FORMAT=text` for swift-log's
/// plain lines instead).
struct JSONLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    let label: String

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        write(level: event.level, message: event.message, metadata: event.metadata)
    }

    private func write(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?) {
        var members: [(String, JSON)] = [
            ("time", .string(Date().formatted(.iso8601.year().month().day().timeZone(separator: .omitted).time(includingFractionalSeconds: true).timeSeparator(.colon)))),
            ("level", .string(level.rawValue)), ("label", .string(label)), ("message", .string(message.description)),
        ]
        let merged = metadata.merging(explicit ?? [:]) { _, new in new }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            members.append((key, Self.json(value)))
        }
        var bytes = JSONWriter.encode(.object(members))
        bytes.append(0x0A)
        FileHandle.standardError.write(Data(bytes))
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSON {
        switch value {
        case let .string(text): return .string(text)
        case let .stringConvertible(item): return .string(item.description)
        case let .array(items): return .array(items.map(json))
        case let .dictionary(map): return .object(map.sorted(by: { $0.key < $1.key }).map { ($0.key, json($0.value)) })
        }
    }
}
