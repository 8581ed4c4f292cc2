@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension SeriesState.Events: PushItemUpdates {
    var pushAdapter: PushSubscription.DataAdapter { .timeSeries }
    var pushItem: String { path }

    func pushUpdates() -> [() throws -> [String: String]] {
        records.indices.map { i in
            { [self] in try Self.fields(ofEvent: records[i], sequence: first + UInt64(i), decoding: decoding,
                                         typeName: typeName, path: path) }
        }
    }

    /// The fields of a time-series event: its value's (the members of an object, else `value`),
    /// then `sequence`, `timestamp` (ms since 1970) and `author`.
    static func fields(ofEvent record: [UInt8], sequence: UInt64, decoding: SeriesDecoding, typeName: String,
                       path: String) throws -> [String: String] {
        try record.withUnsafeBytes { bytes in
            guard let h = EventRecord.decode(bytes), h.author < decoding.authors.count else {
                throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): malformed record")
            }
            let value = try ValueCodec<JSON>.json(typeName: typeName, bytes: UnsafeRawBufferPointer(rebasing: bytes[h.valueOffset...]))
            var fields = PushFields.fields(of: value, singleFieldName: "value")
            fields["sequence"] = String(sequence)
            fields["timestamp"] = String(decoding.base &+ Int64(truncatingIfNeeded: h.timestampDelta))
            fields["author"] = decoding.authors[Int(h.author)]
            return fields
        }
    }
}
