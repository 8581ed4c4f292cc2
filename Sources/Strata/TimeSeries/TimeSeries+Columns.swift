@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension TimeSeries {
    /// The events `query` selects, as one array per column (``SeriesColumns``): the same
    /// selection, order and limit as ``query(_:)``, without an ``Event`` per event.
    ///
    /// Settled events are stored as columnar chunks (FORMAT.md §14.6); this decodes each chunk's
    /// columns and appends them to the arrays whole (a `Double` or `Int64` series' values in one
    /// copy per chunk). Needs what ``query(_:)`` needs in a session.
    ///
    /// ```swift
    /// let day = try prices.columns(.values.from(start).to(end))
    /// chart.plot(x: day.timestamps, y: day.values)
    /// ```
    ///
    /// - Throws: as ``query(_:)``.
    @_specialize(exported: true, where Value == Double)
    @_specialize(exported: true, where Value == Int64)
    @_specialize(exported: true, where Value == String)
    public func columns(_ query: RangeQuery) throws -> SeriesColumns<Value> {
        if let access {
            try access.require(.readTopic, state.path)
            if query.view != .values { try access.require(.queryObsoleteTimeSeriesEvents, state.path) }
        }
        try query.validate()
        let (reader, decoding, _) = try state.reader()
        var columns = SeriesColumns<Value>()
        let path = state.path
        let selected = try reader.evaluate(query, chunks: { chunk, run in
            try Self.append(chunk, run, decoding, codec, path: path, to: &columns)
        }) { s, bytes in
            try Self.append(s, bytes, decoding, codec, path: path, to: &columns)
        }
        columns.selectedCount = selected
        return columns
    }

    /// Appends events `run` of a chunk to `columns`.
    static func append(_ chunk: SeriesChunkColumns, _ run: Range<Int>, _ decoding: SeriesDecoding, _ codec: ValueCodec<Value>,
                       path: String, to columns: inout SeriesColumns<Value>) throws {
        func corrupted(_ i: Int, _ reason: String) -> StrataError {
            .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(chunk.firstSequence + UInt64(i)): \(reason)")
        }
        let authors = decoding.authors
        let start = columns.count
        columns.reserve(run.count)
        columns.sequences.append(contentsOf: (chunk.firstSequence + UInt64(run.lowerBound))..<(chunk.firstSequence + UInt64(run.upperBound)))
        for i in run {
            columns.timestamps.append(decoding.base &+ chunk.timestamps[i])
            let a = chunk.authors[i]
            guard a < authors.count else { throw corrupted(i, "unknown author") }
            columns.authors.append(authors[Int(a)])
        }
        for edit in chunk.edits where run.contains(edit.index) {
            let o = edit.original
            guard o.author < authors.count else { throw corrupted(edit.index, "unknown author") }
            columns.edits.append(SeriesColumns.Edit(
                index: start + edit.index - run.lowerBound,
                original: EventMetadata(sequence: o.sequence, milliseconds: decoding.base &+ Int64(bitPattern: o.timestamp),
                                        author: authors[Int(o.author)])))
        }
        // The native kinds: the chunk's decoded column, copied whole.
        if Value.self == Double.self, chunk.header.kind == 1 {
            chunk.doubles.withUnsafeBufferPointer { all in
                UnsafeBufferPointer(rebasing: all[run]).withMemoryRebound(to: Value.self) { columns.values.append(contentsOf: $0) }
            }
        } else if Value.self == Int64.self, chunk.header.kind == 2 {
            chunk.integers.withUnsafeBufferPointer { all in
                UnsafeBufferPointer(rebasing: all[run]).withMemoryRebound(to: Value.self) { columns.values.append(contentsOf: $0) }
            }
        } else {
            for i in run { columns.values.append(try chunk.withValueBytes(i) { try codec.decode($0) }) }
        }
    }

    /// Appends one event stored as a record (not yet in a chunk) to `columns`.
    static func append(_ sequence: UInt64, _ bytes: UnsafeRawBufferPointer, _ decoding: SeriesDecoding,
                       _ codec: ValueCodec<Value>, path: String, to columns: inout SeriesColumns<Value>) throws {
        func corrupted(_ reason: String) -> StrataError {
            .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): \(reason)")
        }
        guard let h = EventRecord.decode(bytes), h.author < decoding.authors.count else { throw corrupted("malformed record") }
        let value = try codec.decode(UnsafeRawBufferPointer(rebasing: bytes[h.valueOffset...]))
        if let o = h.original {
            guard o.author < decoding.authors.count else { throw corrupted("unknown author") }
            columns.edits.append(SeriesColumns.Edit(
                index: columns.count,
                original: EventMetadata(sequence: o.sequence, milliseconds: decoding.base &+ Int64(truncatingIfNeeded: o.timestampDelta),
                                        author: decoding.authors[Int(o.author)])))
        }
        columns.sequences.append(sequence)
        columns.timestamps.append(decoding.base &+ Int64(truncatingIfNeeded: h.timestampDelta))
        columns.values.append(value)
        columns.authors.append(decoding.authors[Int(h.author)])
    }
}
