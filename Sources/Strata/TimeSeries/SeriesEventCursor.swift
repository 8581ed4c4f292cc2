@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Walks the stored events of one series in a snapshot in either direction, whatever their form
/// (FORMAT.md §14.2, §14.6): an event record, or one event of a chunk keyed by its last sequence.
/// Each event comes as its event record, so readers handle one form.
///
/// The walk covers `from…through` (inclusive). A chunk that straddles a bound contributes the
/// events inside. Because a chunk is keyed by its last sequence, the chunk holding `from` is the
/// first key at or after `key(from)`; a reverse walk first finds the key holding `through` so that
/// its cursor starts there.
struct SeriesEventCursor {
    private let cursor: MergedCursor
    private let prefixLength: Int
    private let from: Int64
    private let through: Int64
    private let reverse: Bool
    private let path: String
    /// The chunk being walked (when `inChunk`) and the index of the current event in it.
    private var columns = SeriesChunkColumns()
    private var inChunk = false
    private var index = 0
    private var end = 0
    /// The record of the chunk event at `scratchIndex`, built when asked for.
    private var scratch: [UInt8] = []
    private var scratchIndex = -1
    private(set) var sequence: Int64 = -1
    /// The value column kind the series' type stores (§14.6); nil: not checked.
    private let valueKind: UInt8?

    /// A walk of the events `from…through` of the series whose event keys start with `prefix`.
    /// A chunk whose value kind is not `valueKind` (when given) is corruption of the series.
    init(snapshot: Snapshot, prefix: [UInt8], from: Int64, through: Int64, reverse: Bool, path: String,
         valueKind: UInt8? = nil) throws {
        self.valueKind = valueKind
        self.prefixLength = prefix.count
        self.from = max(from, 0)
        self.through = through
        self.reverse = reverse
        self.path = path
        let seriesEnd = TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF]
        let lower = Self.key(prefix, self.from)
        if !reverse {
            cursor = snapshot.cursor(lower: lower, upper: seriesEnd)
            return
        }
        // The key holding `through`: the first at or after it.
        var upper = seriesEnd
        if through >= 0 {
            let probe = snapshot.cursor(lower: Self.key(prefix, through), upper: seriesEnd)
            if try probe.next() { upper = probe.key + [0] }
        }
        cursor = snapshot.cursor(lower: lower, upper: upper, reverse: true)
    }

    static func key(_ prefix: [UInt8], _ sequence: Int64) -> [UInt8] {
        var k = prefix
        EventRecord.appendUInt(UInt64(max(sequence, 0)), to: &k)
        return k
    }

    private func corrupted(_ reason: String, _ sequence: Int64) -> StrataError {
        .corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): \(reason)")
    }

    /// Moves to the next event of the walk; false at its end.
    mutating func next() throws -> Bool {
        if from > through { return false }
        // Done at the walk's last event, without reading (or decoding) the entry after it.
        if sequence == (reverse ? from : through) { return false }
        if inChunk, index != end {
            index += reverse ? -1 : 1
            if index != end { return load() }
        }
        inChunk = false
        while try cursor.next() {
            let k = try cursor.withKey { k -> Int64 in
                guard let s = EventRecord.sequence(ofKey: k, prefixLength: prefixLength), s <= UInt64(Int64.max) else {
                    throw corrupted("malformed key \(TupleKey.describe(Array(k)))", sequence)
                }
                return Int64(s)
            }
            if SeriesChunk.isChunk(cursor.value) {
                do {
                    try columns.decode(cursor.value)
                } catch let e as StrataError {
                    throw corrupted("chunk ending at \(k): \(e)", k)
                }
                // Checked before any conversion: k ≤ Int64.max, so then is the first sequence.
                guard columns.header.lastSequence == UInt64(k) else {
                    throw corrupted("chunk ending at \(k) holds \(columns.firstSequence)…\(columns.header.lastSequence)", k)
                }
                if let valueKind { try SeriesChunk.checkValueKind(columns.header.kind, expected: valueKind, chunkEnd: k, path: path) }
                let first = Int64(columns.firstSequence)
                let lo = max(first, from), hi = min(k, through)
                if lo > hi {
                    // Forward: a chunk past `through` ends the walk; reverse: one below `from` does.
                    if reverse ? k < from : first > through { return false }
                    continue
                }
                inChunk = true
                index = Int(reverse ? hi - first : lo - first)
                end = Int(reverse ? lo - first - 1 : hi - first + 1)
                return load()
            }
            if reverse ? k < from : k > through { return false }
            if k < from || k > through { continue }
            sequence = k
            return true
        }
        return false
    }

    private mutating func load() -> Bool {
        sequence = Int64(columns.firstSequence) + Int64(index)
        scratchIndex = -1
        return true
    }

    /// The current event's record (§14.2), valid until the next move.
    mutating func withRecord<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard inChunk else { return try body(cursor.value) }
        if scratchIndex != index {
            scratch.removeAll(keepingCapacity: true)
            columns.appendEventRecord(index, to: &scratch)
            scratchIndex = index
        }
        return try scratch.withUnsafeBytes(body)
    }

    /// When the current event is in a chunk, calls `body` with the chunk's columns and the rest
    /// of the walk's events in it, from the current one (a forward walk only); the walk then
    /// moves to the last of them. Returns those events' indexes, or nil (without calling `body`)
    /// on an event record or in a reverse walk.
    mutating func withChunkRun(_ body: (SeriesChunkColumns, Range<Int>) throws -> Void) rethrows -> Range<Int>? {
        guard inChunk, !reverse else { return nil }
        let run = index..<end
        try body(columns, run)
        index = end - 1
        sequence = Int64(columns.firstSequence) + Int64(index)
        return run
    }

    /// The record of event `sequence`, nil if the snapshot holds none.
    static func record(_ sequence: Int64, snapshot: Snapshot, prefix: [UInt8], path: String,
                       valueKind: UInt8? = nil) throws -> [UInt8]? {
        var c = try SeriesEventCursor(snapshot: snapshot, prefix: prefix, from: sequence, through: sequence,
                                      reverse: false, path: path, valueKind: valueKind)
        guard try c.next(), c.sequence == sequence else { return nil }
        return c.withRecord { Array($0) }
    }
}
