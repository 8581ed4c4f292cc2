import Foundation
import Strata

/// One time series of a store, as ``SeriesInspector`` lists it.
public struct SeriesSummary: Codable, Sendable, Equatable {
    /// The series' path.
    public let path: String
    /// Its catalog id (the second element of its keys).
    public let id: UInt64
    /// The stored value type name (`Double`, `Codable:…`).
    public let valueType: String
    /// Retained events (what queries see).
    public let count: UInt64
    /// The first retained sequence.
    public let firstSequence: UInt64
    /// The sequence the next event gets.
    public let nextSequence: UInt64
    /// Retained edit events.
    public let edits: UInt64
    /// The retained range, as text.
    public let retainedRange: String
    /// The subscription range, as text.
    public let subscriptionRange: String
    /// Bytes of the retained events' keys and values, before compression.
    public let bytes: UInt64
    /// Every author the series has stored.
    public let authors: [String]
}

/// One event of a series, decoded without knowing its Swift type.
public struct SeriesEventDump: Codable, Sendable, Equatable {
    /// The event's sequence number.
    public let sequence: UInt64
    /// Milliseconds since 1970.
    public let timestamp: Int64
    /// The author the store recorded for the event.
    public let author: String
    /// For an edit event, the original's sequence.
    public let originalSequence: UInt64?
    /// The value as JSON (`ValueCodec` "json(typeName:bytes:)": `Data` as base64).
    public let value: JSON
}

/// A series with (some of) its events.
public struct SeriesDump: Codable, Sendable, Equatable {
    /// The series' summary.
    public let summary: SeriesSummary
    /// The events in sequence order (edit view `.all`), at most the limit asked for: the newest.
    public let events: [SeriesEventDump]
}

/// Reads the time series of a store from its files, without opening the store (FORMAT.md §14):
/// the library side of `strata-dump series`.
public enum SeriesInspector {
    /// Every time series of the store in `directory`, in path order.
    public static func series(ofStoreAt directory: String) throws -> [SeriesSummary] {
        let snapshot = try StoreImage.snapshot(directory: directory)
        return try Catalog.entries(kind: .timeSeries, in: snapshot).compactMap { name, entry in
            name.isEmpty ? nil : try summary(snapshot, name, entry).0
        }
    }

    /// One series with its newest `limit` events (all if nil).
    public static func dump(series path: String, ofStoreAt directory: String, limit: Int? = nil) throws -> SeriesDump {
        let snapshot = try StoreImage.snapshot(directory: directory)
        guard let found = try Catalog.entries(kind: .timeSeries, in: snapshot).first(where: { $0.name == path }) else {
            throw StrataError.notFound("time series \"\(path)\" in \(directory)")
        }
        let (summary, reader, payload) = try self.summary(snapshot, path, found.entry)
        var query = RangeQuery.edits(.all)
        if let limit { query = query.limit(limit) }
        var events: [SeriesEventDump] = []
        _ = try reader.evaluate(query) { s, bytes in
            guard let h = EventRecord.decode(bytes), h.author < payload.authors.count else {
                throw reader.corrupted("malformed record", sequence: Int64(s))
            }
            let base = payload.baseTimestamp ?? 0
            let value = try ValueCodec<JSON>.json(typeName: payload.typeName,
                                                  bytes: UnsafeRawBufferPointer(rebasing: bytes[h.valueOffset...]))
            events.append(SeriesEventDump(sequence: s, timestamp: base &+ Int64(truncatingIfNeeded: h.timestampDelta),
                                          author: payload.authors[Int(h.author)],
                                          originalSequence: h.original?.sequence, value: value))
        }
        return SeriesDump(summary: summary, events: events)
    }

    private static func summary(_ snapshot: Snapshot, _ path: String, _ entry: CatalogEntry)
        throws -> (SeriesSummary, SeriesReader, SeriesPayload) {
        let payload = try SeriesPayload.decode(entry.payload, name: path)
        let (head, _) = try SeriesState.recover(snapshot: snapshot, id: entry.id, payload: payload, path: path)
        let reader = SeriesReader(snapshot: snapshot, id: entry.id, head: head, baseTimestamp: payload.baseTimestamp ?? 0, path: path)
        var bytes: UInt64 = 0
        var edits: UInt64 = 0
        if head.count > 0 {
            let c = snapshot.cursor(lower: reader.key(Int64(head.cutoff)), upper: reader.key(Int64(head.next)))
            while try c.next() {
                bytes += UInt64(c.withKey { $0.count } + c.value.count)
                if EventRecord.isEdit(c.value) { edits += 1 }
            }
        }
        let summary = SeriesSummary(path: path, id: entry.id, valueType: payload.typeName, count: head.count,
                                    firstSequence: head.cutoff, nextSequence: head.next, edits: edits,
                                    retainedRange: payload.retainedRange.description,
                                    subscriptionRange: payload.subscriptionRange.description,
                                    bytes: bytes, authors: payload.authors)
        return (summary, reader, payload)
    }
}
