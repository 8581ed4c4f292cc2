@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The meeting point of the two stored forms of time-series events (FORMAT.md §14.2, §14.6): a
/// chunk's events as event records, and event records gathered into a chunk.
extension SeriesChunk {
    /// The value column kind of a series' value type: `Double` and `Int64` have their own
    /// columns; every other type keeps its §13 bytes.
    static func valueKind(typeName: String) -> UInt8 {
        switch typeName {
        case "Double": 1
        case "Int64": 2
        default: 0
        }
    }

    /// Appends event `i`'s record (§14.2) to `out`: the record the event had before it was
    /// chunked, in the canonical header form.
    func appendEventRecord(_ i: Int, to out: inout [UInt8]) {
        let o = originals[i].map { (sequence: $0.sequence, timestampDelta: $0.timestamp, author: $0.author) }
        EventRecord.appendHeader(timestampDelta: timestamps[i], author: authors[i], original: o, to: &out)
        switch values {
        case .doubles(let v): Self.appendLittleEndian(v[i].bitPattern, to: &out)
        case .integers(let v): Self.appendLittleEndian(UInt64(bitPattern: v[i]), to: &out)
        case .bytes(let v): out.append(contentsOf: v[i])
        }
    }

    /// Event `i`'s record (§14.2).
    func eventRecord(_ i: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        appendEventRecord(i, to: &out)
        return out
    }

    @inline(__always)
    static func appendLittleEndian(_ bits: UInt64, to out: inout [UInt8]) {
        withUnsafeBytes(of: bits.littleEndian) { out.append(contentsOf: $0) }
    }

    /// How a chunk record's bits divide between its columns, for tools (`strata-dump series`).
    struct ColumnBits: Sendable {
        var events: Int
        var timestamps: Int
        /// Authors and edits.
        var metadata: Int
        var values: Int
        var total: Int
    }

    /// The bits each column of a chunk record takes.
    static func columnBits(of bytes: [UInt8]) throws -> ColumnBits {
        let chunk = try decode(bytes)  // validates the whole record first
        var r = BitReader(bytes)
        _ = r.read(bits: 16)
        _ = r.readVarint()
        _ = r.readVarint()
        let timestampStart = r.position
        var scratch: [Int64] = []
        try TimestampColumn.decode(from: &r, into: &scratch)
        let metadataStart = r.position
        let k = r.readVarint() ?? 0
        for _ in 0..<k { _ = r.readVarint() }
        if k > 1 { try IntegerColumn.decode(from: &r, into: &scratch) }
        if r.readBit() == true {
            for _ in 0..<chunk.count { _ = r.readBit() }
            for _ in 0..<3 { try IntegerColumn.decode(from: &r, into: &scratch) }
        }
        let valuesStart = r.position
        return ColumnBits(events: chunk.count, timestamps: metadataStart - timestampStart,
                          metadata: valuesStart - metadataStart, values: bytes.count * 8 - valuesStart,
                          total: bytes.count * 8)
    }
}
