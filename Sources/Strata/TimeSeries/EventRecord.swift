@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The key and value layout of one time-series event (FORMAT.md §14.2), and of its edit-index
/// entry (§14.3).
///
/// ```
/// key   (2, seriesId, sequence)
/// value flags:u8 ‖ varint(timestamp − base) ‖ [varint(author)] ‖
///       [varint(originalSequence) ‖ varint(originalTimestamp − base) ‖ varint(originalAuthor)] ‖ value
/// ```
/// `flags` bit 0: edit event (the bracketed original fields follow); bit 1: an author index
/// follows (absent means author 0). Timestamps are milliseconds relative to the series' base
/// timestamp (the first event's), never negative since timestamps never decrease.
package struct EventRecord {
    static let editFlag: UInt8 = 0x01
    static let authorFlag: UInt8 = 0x02
    static let knownFlags: UInt8 = 0x03

    package var timestampDelta: UInt64
    package var author: UInt64
    /// For an edit: the original's sequence, timestamp delta and author index.
    package var original: (sequence: UInt64, timestampDelta: UInt64, author: UInt64)?
    /// Where the value bytes start in the record.
    package var valueOffset: Int

    var isEdit: Bool { original != nil }

    /// Appends the header of a record (everything before the value) to `out`.
    static func appendHeader(timestampDelta: UInt64, author: UInt64,
                             original: (sequence: UInt64, timestampDelta: UInt64, author: UInt64)?,
                             to out: inout [UInt8]) {
        var flags: UInt8 = 0
        if original != nil { flags |= editFlag }
        if author != 0 { flags |= authorFlag }
        out.append(flags)
        Varint.append(timestampDelta, to: &out)
        if author != 0 { Varint.append(author, to: &out) }
        if let original {
            Varint.append(original.sequence, to: &out)
            Varint.append(original.timestampDelta, to: &out)
            Varint.append(original.author, to: &out)
        }
    }

    /// Decodes a record's header; nil if malformed.
    @inline(__always)
    package static func decode(_ bytes: UnsafeRawBufferPointer) -> EventRecord? {
        guard bytes.count >= 2 else { return nil }
        var r = ByteReader(bytes, file: "event")
        do {
            let flags = try r.uint8("flags")
            guard flags & ~knownFlags == 0 else { return nil }
            let ts = try r.varint("timestamp")
            let author = flags & authorFlag != 0 ? try r.varint("author") : 0
            var original: (sequence: UInt64, timestampDelta: UInt64, author: UInt64)?
            if flags & editFlag != 0 {
                original = (try r.varint("original sequence"), try r.varint("original timestamp"), try r.varint("original author"))
            }
            return EventRecord(timestampDelta: ts, author: author, original: original, valueOffset: r.offset)
        } catch {
            return nil
        }
    }

    /// Whether the record is an edit, from its first byte alone.
    @inline(__always)
    package static func isEdit(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count > 0 && bytes[0] & editFlag != 0
    }

    // MARK: Keys

    /// `(2, seriesId)`: the prefix of every event key of a series.
    static func seriesPrefix(_ id: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 24)
        e.append(Keyspace.timeSeriesEvents.id)
        e.append(id)
        return e.bytes
    }

    /// `(2, seriesId, sequence)`.
    static func key(series id: UInt64, sequence: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 24)
        e.append(Keyspace.timeSeriesEvents.id)
        e.append(id)
        e.append(sequence)
        return e.bytes
    }

    /// Appends the tuple encoding of `value` (an unsigned integer element) to `out`:
    /// ``TupleKey/appendUInt(_:to:)``.
    @inline(__always)
    static func appendUInt(_ value: UInt64, to out: inout [UInt8]) {
        TupleKey.appendUInt(value, to: &out)
    }

    /// Reads an unsigned integer tuple element at `p`; nil if the bytes there are not one:
    /// ``TupleKey/readUInt(_:at:)``.
    @inline(__always)
    static func readUInt(_ bytes: UnsafeRawBufferPointer, at p: inout Int) -> UInt64? {
        TupleKey.readUInt(bytes, at: &p)
    }

    /// The sequence of an event key of series `prefix` (`(2, id)`), or nil if it is not one.
    @inline(__always)
    static func sequence(ofKey key: UnsafeRawBufferPointer, prefixLength: Int) -> UInt64? {
        var p = prefixLength
        guard let s = readUInt(key, at: &p), p == key.count else { return nil }
        return s
    }

    // MARK: Edit index

    /// `(8, seriesId)`: the prefix of a series' edit-index keys.
    static func editIndexPrefix(_ id: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 24)
        e.append(Keyspace.timeSeriesEditIndex.id)
        e.append(id)
        return e.bytes
    }

    /// `(8, seriesId, originalSequence, editSequence)` → empty.
    static func editIndexKey(series id: UInt64, original: UInt64, edit: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 32)
        e.append(Keyspace.timeSeriesEditIndex.id)
        e.append(id)
        e.append(original)
        e.append(edit)
        return e.bytes
    }
}
