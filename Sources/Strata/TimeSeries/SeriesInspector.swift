import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
    /// How the retained events are stored: as chunks (FORMAT.md §14.6) or one record each.
    public let storage: SeriesStorage
}

/// How a series' retained events are stored (FORMAT.md §14.6): chunk statistics for
/// `strata-dump series`.
public struct SeriesStorage: Codable, Sendable, Equatable {
    /// Chunk records.
    public var chunks: UInt64 = 0
    /// Events in chunks (a chunk straddling the first retained sequence counts whole).
    public var chunkedEvents: UInt64 = 0
    /// Events stored one record each (not yet settled by a flush or compaction).
    public var eventRecords: UInt64 = 0
    /// Bits of the chunks' timestamp columns.
    public var timestampBits: UInt64 = 0
    /// Bits of the chunks' value columns.
    public var valueBits: UInt64 = 0
    /// Bits of the chunks' headers, author and edit columns.
    public var otherBits: UInt64 = 0

    /// Mean events per chunk, 0 without chunks.
    public var eventsPerChunk: Double { chunks == 0 ? 0 : Double(chunkedEvents) / Double(chunks) }
    /// Mean bits per timestamp in chunks.
    public var bitsPerTimestamp: Double { chunkedEvents == 0 ? 0 : Double(timestampBits) / Double(chunkedEvents) }
    /// Mean bits per value in chunks.
    public var bitsPerValue: Double { chunkedEvents == 0 ? 0 : Double(valueBits) / Double(chunkedEvents) }
    /// Mean bytes per chunked event, every column included (before block compression).
    public var bytesPerChunkedEvent: Double {
        chunkedEvents == 0 ? 0 : (Double(timestampBits) + Double(valueBits) + Double(otherBits)) / 8 / Double(chunkedEvents)
    }
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
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func series(ofStoreAt directory: String, key: EncryptionKey? = nil) throws -> [SeriesSummary] {
        let snapshot = try StoreImage.snapshot(directory: directory, key: key ?? InspectionKey.current)
        return try Catalog.entries(kind: .timeSeries, in: snapshot).compactMap { name, entry in
            name.isEmpty ? nil : try summary(snapshot, name, entry).0
        }
    }

    /// One series with its newest `limit` events (all if nil).
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func dump(series path: String, ofStoreAt directory: String, limit: Int? = nil, key: EncryptionKey? = nil) throws -> SeriesDump {
        let snapshot = try StoreImage.snapshot(directory: directory, key: key ?? InspectionKey.current)
        guard let found = try Catalog.entries(kind: .timeSeries, in: snapshot).first(where: { $0.name == path }) else {
            throw StrataError.notFound(kind: .timeSeries, name: path, reason: "time series \"\(path)\" in \(directory)")
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
        let reader = SeriesReader(snapshot: snapshot, id: entry.id, head: head, baseTimestamp: payload.baseTimestamp ?? 0, path: path,
                                  valueKind: SeriesReader.valueKind(typeName: payload.typeName))
        let stored = try reader.storedForm()
        let storage = SeriesStorage(chunks: stored.chunks, chunkedEvents: stored.chunkedEvents, eventRecords: stored.eventRecords,
                                    timestampBits: stored.timestampBits, valueBits: stored.valueBits, otherBits: stored.otherBits)
        let bytes = stored.bytes, edits = stored.edits
        let summary = SeriesSummary(path: path, id: entry.id, valueType: payload.typeName, count: head.count,
                                    firstSequence: head.cutoff, nextSequence: head.next, edits: edits,
                                    retainedRange: payload.retainedRange.description,
                                    subscriptionRange: payload.subscriptionRange.description,
                                    bytes: bytes, authors: payload.authors, storage: storage)
        return (summary, reader, payload)
    }
}
