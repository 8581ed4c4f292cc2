import Foundation
@_spi(Layers) import StrataFormat

/// `strata-dump series <store> [<path>]`: the time series of a store, or one series' events.
extension SeriesInspector: CollectionInspector {
    package static let commandName = "series"
    package static let abstract = "List the time series of a store, or print one series' events decoded."
    package static let discussion = """
        Without a path: one line per series (value type, retained events, sequence range, \
        edits, retained and subscription ranges, bytes of keys and values before \
        compression, and how the events are stored: chunks, events per chunk, bits per \
        timestamp and per value in chunks, events still stored one record each). With a \
        path: the same for the series, then its retained events in sequence order, \
        originals and edits, values as JSON.
        """
    package static let usage = CollectionInspectorUsage(
        collection: .init(valueName: "path", help: "A series path: print its events."),
        limit: .init(help: "With a path: print only the newest N events.", defaultValue: nil, minimum: 1))

    package static func run(storeAt store: String, arguments: CollectionInspectorArguments, json: Bool) throws -> String {
        if let path = arguments.collection {
            let dump = try SeriesInspector.dump(series: path, ofStoreAt: store, limit: arguments.limit)
            return json ? try InspectionJSON.text(dump) : Self.render(dump)
        } else {
            let all = try SeriesInspector.series(ofStoreAt: store)
            return json ? try InspectionJSON.text(all) : Self.render(all)
        }
    }

    /// The SEQUENCES column. A summary read from a damaged store may claim events with a next
    /// sequence of 0: it prints as no range, not a trap.
    static func sequences(_ s: SeriesSummary) -> String {
        s.count == 0 || s.nextSequence == 0 ? "- (next \(s.nextSequence))" : "\(s.firstSequence)…\(s.nextSequence - 1)"
    }

    static func render(_ all: [SeriesSummary]) -> String {
        let out = "Time series: \(all.count)\n"
        guard !all.isEmpty else { return out }
        var table = TextTable(["PATH", "ID>", "TYPE", "EVENTS>", "SEQUENCES", "EDITS>", "RETAINED", "SUBSCRIPTION", "BYTES>",
                               "CHUNKS>", "EV/CHUNK>", "BITS/TS>", "BITS/VALUE>", "RECORDS>"])
        for s in all {
            let t = s.storage
            table.add([s.path, "\(s.id)", s.valueType, Format.count(s.count), sequences(s), Format.count(s.edits),
                       s.retainedRange, s.subscriptionRange, Format.bytes(s.bytes), Format.count(t.chunks),
                       String(format: "%.1f", t.eventsPerChunk), String(format: "%.2f", t.bitsPerTimestamp),
                       String(format: "%.2f", t.bitsPerValue), Format.count(t.eventRecords)])
        }
        return out + table.render()
    }

    static func storage(_ t: SeriesStorage) -> String {
        var out = "\(Format.count(t.chunks)) chunks of \(Format.count(t.chunkedEvents)) events"
        if t.chunks > 0 {
            out += String(format: " (%.1f events per chunk, %.2f bits per timestamp, %.2f bits per value, %.2f bytes per event)",
                          t.eventsPerChunk, t.bitsPerTimestamp, t.bitsPerValue, t.bytesPerChunkedEvent)
        }
        return out + ", \(Format.count(t.eventRecords)) events one record each"
    }

    static func render(_ dump: SeriesDump) -> String {
        let s = dump.summary
        var out = "Time series \"\(s.path)\" (id \(s.id)), \(s.valueType)\n"
        out += "  events \(Format.count(s.count)) (\(Format.count(s.edits)) edits), sequences \(sequences(s)), retained \(s.retainedRange), subscription \(s.subscriptionRange), \(Format.bytes(s.bytes))\n"
        out += "  storage: \(storage(s.storage))\n"
        if UInt64(dump.events.count) < s.count { out += "  showing the newest \(dump.events.count)\n" }
        var table = TextTable(["SEQUENCE>", "TIMESTAMP", "AUTHOR", "EDIT OF>", "VALUE"])
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for e in dump.events {
            let date = Date(timeIntervalSince1970: Double(e.timestamp) / 1000)
            let text = String(decoding: e.value.jsonData(sortedKeys: true), as: UTF8.self)
            table.add(["\(e.sequence)", formatter.string(from: date), e.author,
                       e.originalSequence.map { "\($0)" } ?? "", String(text.prefix(120))])
        }
        return out + "\n" + table.render()
    }
}
