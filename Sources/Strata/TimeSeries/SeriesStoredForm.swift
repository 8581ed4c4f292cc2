@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How the retained events of a series are stored (FORMAT.md §14.2, §14.6), for tools:
/// `strata-dump series` prints it.
package struct SeriesStoredForm: Sendable, Equatable {
    /// Bytes of the keys and values holding retained events, before block compression.
    package var bytes: UInt64 = 0
    /// Retained edit events.
    package var edits: UInt64 = 0
    /// Chunk records holding retained events.
    package var chunks: UInt64 = 0
    /// Events in those chunks (a chunk straddling the first retained sequence counts whole).
    package var chunkedEvents: UInt64 = 0
    /// Events stored one record each.
    package var eventRecords: UInt64 = 0
    /// Bits of the chunks' timestamp columns.
    package var timestampBits: UInt64 = 0
    /// Bits of the chunks' value columns.
    package var valueBits: UInt64 = 0
    /// Bits of the chunks' headers, author and edit columns.
    package var otherBits: UInt64 = 0
}

extension SeriesReader {
    /// Walks the records of the retained events and measures them.
    package func storedForm() throws -> SeriesStoredForm {
        var form = SeriesStoredForm()
        guard head.count > 0 else { return form }
        // A chunk is keyed by its last sequence: every one holding a retained event lies at or
        // after key(cutoff) and below key(next).
        let c = snapshot.cursor(lower: key(Int64(head.cutoff)), upper: key(Int64(head.next)))
        while try c.next() {
            form.bytes += UInt64(c.withKey { $0.count } + c.value.count)
            guard SeriesChunk.isChunk(c.value) else {
                form.eventRecords += 1
                if EventRecord.isEdit(c.value) { form.edits += 1 }
                continue
            }
            let record = Array(c.value)
            let chunk: SeriesChunk
            let bits: SeriesChunk.ColumnBits
            do {
                chunk = try SeriesChunk.decode(record)
                bits = try SeriesChunk.columnBits(of: record)
            } catch let e as StrataError {
                throw corrupted("chunk at key \(TupleKey.describe(c.key)): \(e)", sequence: -1)
            }
            form.chunks += 1
            form.chunkedEvents += UInt64(chunk.count)
            form.timestampBits += UInt64(bits.timestamps)
            form.valueBits += UInt64(bits.values)
            form.otherBits += UInt64(bits.total - bits.timestamps - bits.values)
            for (i, o) in chunk.originals.enumerated() where o != nil && chunk.firstSequence + UInt64(i) >= head.cutoff {
                form.edits += 1
            }
        }
        return form
    }
}
