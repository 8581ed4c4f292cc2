/// A run of consecutive events of one time series stored as one record of columns — the
/// settled form of events that flush and compaction will write in place of one record per event
/// (issue 15). FORMAT.md §14.6 specifies the bytes, bit by bit; the layout, through a ``BitWriter``:
///
///     marker       8 bits  0x80 (bit 7: a chunk; an event record's flags never set it)
///     kind         8 bits  0 bytes, 1 Double, 2 Int64 (the value column below)
///     count        varint  n, 1…ColumnHeader.maximumCount
///     first        varint  the first event's sequence (the key holds the last, first + n - 1)
///     timestamps   TimestampColumn of the n timestamps, in ms relative to the series' base
///     authors      varint k (1…n distinct author indexes) ‖ k × varint author index
///                  ‖ when k > 1: IntegerColumn of the n positions in that list
///     edits        1 bit: 0 none; 1: n bits (1 = the event is an edit), then for the m edits,
///                  in order, IntegerColumn of (sequence - original sequence) (each ≥ 1),
///                  IntegerColumn of original timestamps (relative to base), IntegerColumn of
///                  original author indexes
///     values       kind 1: DoubleColumn; kind 2: IntegerColumn; kind 0: IntegerColumn of the
///                  n byte lengths, zero bits to a byte boundary, the bytes one after another
///
/// A decoder checks every count against n, every length against what is left, and that the
/// record ends where the values end (with at most 7 padding bits). ``decode(_:)`` builds a
/// `SeriesChunk` (the reference decoder, for tools and tests); readers of many events use
/// `decodeColumns` (SeriesChunk+Columns.swift), which appends the columns straight to their arrays.
package struct SeriesChunk: Equatable, Sendable {
    /// An edit event's original: its sequence, timestamp (relative to base) and author index.
    package struct Original: Equatable, Sendable {
        package var sequence: UInt64
        package var timestamp: UInt64
        package var author: UInt64

    package init(sequence: UInt64, timestamp: UInt64, author: UInt64) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.author = author
    }
}

    /// The values of the events, in the column form of the series' value type.
    package enum Values: Equatable, Sendable {
        /// Any encoding (§13): the value bytes of each event.
        case bytes([[UInt8]])
        /// `Double` series.
        case doubles([Double])
        /// `Int64` series.
        case integers([Int64])

        package var count: Int {
            switch self {
            case .bytes(let v): v.count
            case .doubles(let v): v.count
            case .integers(let v): v.count
            }
        }

        package var kind: UInt8 {
            switch self {
            case .bytes: 0
            case .doubles: 1
            case .integers: 2
            }
        }
    }

    package static let marker: UInt8 = 0x80
    package static let what = "time-series chunk"

    package var firstSequence: UInt64
    /// Each event's timestamp in ms relative to the series' base.
    package var timestamps: [UInt64]
    /// Each event's author index (into the series' author table).
    package var authors: [UInt64]
    /// Each event's original, nil for an original event.
    package var originals: [Original?]
    package var values: Values

    package var count: Int { timestamps.count }
    package var lastSequence: UInt64 { firstSequence &+ UInt64(count) &- 1 }

    /// Whether a record's value is a chunk (not a single event).
    @inlinable @inline(__always)
    package static func isChunk(_ bytes: UnsafeRawBufferPointer) -> Bool { bytes.first == marker }

    /// The record.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for columns of different lengths, no event,
    ///   too many, a sequence range past `UInt64.max`, or an original not before its edit.
    package func encode() throws -> [UInt8] {
        let n = count
        guard n > 0, n <= ColumnHeader.maximumCount, authors.count == n, originals.count == n, values.count == n else {
            throw StrataError.invalidArgument(argument: "chunk", reason: "\(Self.what): \(n) timestamps, \(authors.count) authors, \(originals.count) originals, \(values.count) values (1…\(ColumnHeader.maximumCount), all equal)")
        }
        guard firstSequence <= UInt64.max - UInt64(n - 1) else {
            throw StrataError.invalidArgument(argument: "chunk", reason: "\(Self.what): \(n) events from sequence \(firstSequence) pass UInt64.max")
        }
        var w = BitWriter(capacity: n * 4 + 32)
        w.write(UInt64(Self.marker), bits: 8)
        w.write(UInt64(values.kind), bits: 8)
        w.writeVarint(UInt64(n))
        w.writeVarint(firstSequence)
        try TimestampColumn.encode(timestamps.map { Int64(bitPattern: $0) }, to: &w)

        var distinct: [UInt64] = []
        var position: [UInt64: Int64] = [:]
        var positions: [Int64] = []
        positions.reserveCapacity(n)
        for a in authors {
            if let p = position[a] {
                positions.append(p)
            } else {
                position[a] = Int64(distinct.count)
                positions.append(Int64(distinct.count))
                distinct.append(a)
            }
        }
        w.writeVarint(UInt64(distinct.count))
        for a in distinct { w.writeVarint(a) }
        if distinct.count > 1 { try IntegerColumn.encode(positions, to: &w) }

        let edits = originals.enumerated().compactMap { i, o in o.map { (i, $0) } }
        w.write(bit: !edits.isEmpty)
        if !edits.isEmpty {
            for o in originals { w.write(bit: o != nil) }
            var distances: [Int64] = []
            for (i, o) in edits {
                let sequence = firstSequence + UInt64(i)
                guard o.sequence < sequence else {
                    throw StrataError.invalidArgument(argument: "chunk", reason: "\(Self.what): event \(sequence) edits \(o.sequence), which is not before it")
                }
                distances.append(Int64(bitPattern: sequence - o.sequence))
            }
            try IntegerColumn.encode(distances, to: &w)
            try IntegerColumn.encode(edits.map { Int64(bitPattern: $0.1.timestamp) }, to: &w)
            try IntegerColumn.encode(edits.map { Int64(bitPattern: $0.1.author) }, to: &w)
        }

        switch values {
        case .doubles(let v):
            try DoubleColumn.encode(v, to: &w)
        case .integers(let v):
            try IntegerColumn.encode(v, to: &w)
        case .bytes(let v):
            try IntegerColumn.encode(v.map { Int64($0.count) }, to: &w)
            var out = w.finish()
            for bytes in v { out += bytes }
            return out
        }
        return w.finish()
    }

    /// Decodes a record (through the fast column decoders, ``decodeColumns(_:base:timestamps:authors:edits:doubles:)``).
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` naming the offset of whatever
    ///   does not decode, never a crash, and never allocating beyond what the record's size and
    ///   ``ColumnHeader/maximumCount`` allow.
    package static func decode(_ bytes: [UInt8]) throws -> SeriesChunk {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    package init(firstSequence: UInt64, timestamps: [UInt64], authors: [UInt64], originals: [Original?], values: Values) {
        self.firstSequence = firstSequence
        self.timestamps = timestamps
        self.authors = authors
        self.originals = originals
        self.values = values
    }
}
