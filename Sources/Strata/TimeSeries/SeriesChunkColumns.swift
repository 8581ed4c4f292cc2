@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The decoded columns of one chunk record (FORMAT.md §14.6), kept in arrays that are reused
/// from chunk to chunk: what a walk over chunks reads its events from.
struct SeriesChunkColumns {
    private(set) var header = SeriesChunk.Header(kind: 0, firstSequence: 0, count: 0)
    /// Timestamps relative to the series' base.
    private(set) var timestamps: [Int64] = []
    /// Author indexes.
    private(set) var authors: [UInt64] = []
    /// The edit events, by increasing index.
    private(set) var edits: [SeriesChunk.Edit] = []
    private(set) var doubles: [Double] = []
    private(set) var integers: [Int64] = []
    /// Kind 0: where each value lies in `record`.
    private(set) var ranges: [Range<Int>] = []
    /// Kind 0: the record the ranges point into.
    private(set) var record: [UInt8] = []

    var count: Int { header.count }
    var firstSequence: UInt64 { header.firstSequence }

    /// Decodes `bytes` (a chunk record) in place of the previous chunk.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` as ``SeriesChunk/decode(_:)``
    ///   does; the columns are then empty.
    mutating func decode(_ bytes: UnsafeRawBufferPointer) throws {
        timestamps.removeAll(keepingCapacity: true)
        authors.removeAll(keepingCapacity: true)
        edits.removeAll(keepingCapacity: true)
        doubles.removeAll(keepingCapacity: true)
        integers.removeAll(keepingCapacity: true)
        ranges.removeAll(keepingCapacity: true)
        record.removeAll(keepingCapacity: true)
        header = SeriesChunk.Header(kind: 0, firstSequence: 0, count: 0)
        switch try SeriesChunk.header(bytes).kind {
        case 1:
            header = try SeriesChunk.decodeColumns(bytes, timestamps: &timestamps, authors: &authors, edits: &edits,
                                                   doubles: &doubles)
        case 2:
            header = try SeriesChunk.decodeColumns(bytes, timestamps: &timestamps, authors: &authors, edits: &edits,
                                                   integers: &integers)
        default:
            header = try SeriesChunk.decodeColumns(bytes, timestamps: &timestamps, authors: &authors, edits: &edits,
                                                   values: &ranges)
            record.append(contentsOf: bytes)
        }
    }

    /// The original of event `i` if it is an edit.
    func original(_ i: Int) -> SeriesChunk.Original? {
        guard !edits.isEmpty else { return nil }
        var lo = 0, hi = edits.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if edits[mid].index < i { lo = mid + 1 } else { hi = mid }
        }
        return lo < edits.count && edits[lo].index == i ? edits[lo].original : nil
    }

    /// Calls `body` with the §13 bytes of event `i`'s value.
    func withValueBytes<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch header.kind {
        case 1: return try withUnsafeBytes(of: doubles[i].bitPattern.littleEndian, body)
        case 2: return try withUnsafeBytes(of: UInt64(bitPattern: integers[i]).littleEndian, body)
        default: return try record.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[ranges[i]])) }
        }
    }

    /// Appends event `i`'s record (§14.2), in the canonical header form, to `out`.
    func appendEventRecord(_ i: Int, to out: inout [UInt8]) {
        let o = original(i).map { (sequence: $0.sequence, timestampDelta: $0.timestamp, author: $0.author) }
        EventRecord.appendHeader(timestampDelta: UInt64(bitPattern: timestamps[i]), author: authors[i], original: o, to: &out)
        withValueBytes(i) { out.append(contentsOf: $0) }
    }
}
