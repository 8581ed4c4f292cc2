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
struct SeriesChunk: Equatable, Sendable {
    /// An edit event's original: its sequence, timestamp (relative to base) and author index.
    struct Original: Equatable, Sendable {
        var sequence: UInt64
        var timestamp: UInt64
        var author: UInt64
    }

    /// The values of the events, in the column form of the series' value type.
    enum Values: Equatable, Sendable {
        /// Any encoding (§13): the value bytes of each event.
        case bytes([[UInt8]])
        /// `Double` series.
        case doubles([Double])
        /// `Int64` series.
        case integers([Int64])

        var count: Int {
            switch self {
            case .bytes(let v): v.count
            case .doubles(let v): v.count
            case .integers(let v): v.count
            }
        }

        var kind: UInt8 {
            switch self {
            case .bytes: 0
            case .doubles: 1
            case .integers: 2
            }
        }
    }

    static let marker: UInt8 = 0x80
    static let what = "time-series chunk"

    var firstSequence: UInt64
    /// Each event's timestamp in ms relative to the series' base.
    var timestamps: [UInt64]
    /// Each event's author index (into the series' author table).
    var authors: [UInt64]
    /// Each event's original, nil for an original event.
    var originals: [Original?]
    var values: Values

    var count: Int { timestamps.count }
    var lastSequence: UInt64 { firstSequence &+ UInt64(count) &- 1 }

    /// Whether a record's value is a chunk (not a single event).
    @inline(__always)
    static func isChunk(_ bytes: UnsafeRawBufferPointer) -> Bool { bytes.first == marker }

    /// The record.
    ///
    /// - Throws: ``StrataError/invalidArgument(_:)`` for columns of different lengths, no event,
    ///   too many, a sequence range past `UInt64.max`, or an original not before its edit.
    func encode() throws -> [UInt8] {
        let n = count
        guard n > 0, n <= ColumnHeader.maximumCount, authors.count == n, originals.count == n, values.count == n else {
            throw StrataError.invalidArgument("\(Self.what): \(n) timestamps, \(authors.count) authors, \(originals.count) originals, \(values.count) values (1…\(ColumnHeader.maximumCount), all equal)")
        }
        guard firstSequence <= UInt64.max - UInt64(n - 1) else {
            throw StrataError.invalidArgument("\(Self.what): \(n) events from sequence \(firstSequence) pass UInt64.max")
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
                    throw StrataError.invalidArgument("\(Self.what): event \(sequence) edits \(o.sequence), which is not before it")
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

    /// Decodes a record.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` naming the offset of whatever
    ///   does not decode, never a crash, and never allocating beyond what the record's size and
    ///   ``ColumnHeader/maximumCount`` allow.
    static func decode(_ bytes: [UInt8]) throws -> SeriesChunk {
        var r = BitReader(bytes)
        func fail(_ reason: String) -> StrataError { ColumnHeader.corrupted(what, r, reason) }
        guard let marker = r.read(bits: 8), let kind = r.read(bits: 8) else { throw ColumnHeader.truncated(what, r) }
        guard marker == UInt64(Self.marker) else { throw fail("not a chunk (first byte \(marker))") }
        guard kind <= 2 else { throw fail("unknown value kind \(kind)") }
        guard let rawCount = r.readVarint(), let first = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
        guard rawCount >= 1, rawCount <= UInt64(ColumnHeader.maximumCount) else { throw fail("event count \(rawCount)") }
        let n = Int(rawCount)
        guard first <= UInt64.max - UInt64(n - 1) else { throw fail("\(n) events from sequence \(first) pass UInt64.max") }

        var times: [Int64] = []
        try TimestampColumn.decode(from: &r, into: &times)
        guard times.count == n else { throw fail("\(times.count) timestamps for \(n) events") }

        guard let k = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
        guard k >= 1, k <= rawCount else { throw fail("\(k) distinct authors for \(n) events") }
        var distinct: [UInt64] = []
        distinct.reserveCapacity(Int(k))
        for _ in 0..<k {
            guard let a = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
            distinct.append(a)
        }
        var authors: [UInt64]
        if k == 1 {
            authors = Array(repeating: distinct[0], count: n)
        } else {
            var positions: [Int64] = []
            try IntegerColumn.decode(from: &r, into: &positions)
            guard positions.count == n else { throw fail("\(positions.count) author positions for \(n) events") }
            authors = []
            authors.reserveCapacity(n)
            for p in positions {
                guard p >= 0, p < Int64(k) else { throw fail("author position \(p) outside 0…\(k - 1)") }
                authors.append(distinct[Int(p)])
            }
        }

        guard let anyEdits = r.readBit() else { throw ColumnHeader.truncated(what, r) }
        var originals = [Original?](repeating: nil, count: n)
        if anyEdits {
            guard r.remainingBits >= n else { throw ColumnHeader.truncated(what, r) }
            var editIndexes: [Int] = []
            for i in 0..<n where r.readBit() == true { editIndexes.append(i) }
            guard !editIndexes.isEmpty else { throw fail("the edit bitmap is empty") }
            var distances: [Int64] = [], stamps: [Int64] = [], owners: [Int64] = []
            try IntegerColumn.decode(from: &r, into: &distances)
            try IntegerColumn.decode(from: &r, into: &stamps)
            try IntegerColumn.decode(from: &r, into: &owners)
            guard distances.count == editIndexes.count, stamps.count == editIndexes.count, owners.count == editIndexes.count else {
                throw fail("edit columns of \(distances.count), \(stamps.count), \(owners.count) values for \(editIndexes.count) edits")
            }
            for (j, i) in editIndexes.enumerated() {
                let sequence = first + UInt64(i)
                let distance = UInt64(bitPattern: distances[j])
                guard distance >= 1, distance <= sequence else { throw fail("event \(sequence) edits an original \(distances[j]) before it") }
                originals[i] = Original(sequence: sequence - distance, timestamp: UInt64(bitPattern: stamps[j]),
                                        author: UInt64(bitPattern: owners[j]))
            }
        }

        let values: Values
        switch kind {
        case 1:
            var v: [Double] = []
            try DoubleColumn.decode(from: &r, into: &v)
            guard v.count == n else { throw fail("\(v.count) values for \(n) events") }
            values = .doubles(v)
        case 2:
            var v: [Int64] = []
            try IntegerColumn.decode(from: &r, into: &v)
            guard v.count == n else { throw fail("\(v.count) values for \(n) events") }
            values = .integers(v)
        default:
            var lengths: [Int64] = []
            try IntegerColumn.decode(from: &r, into: &lengths)
            guard lengths.count == n else { throw fail("\(lengths.count) value lengths for \(n) events") }
            var offset = (r.position + 7) / 8
            var v: [[UInt8]] = []
            v.reserveCapacity(n)
            for length in lengths {
                guard length >= 0, length <= Int64(bytes.count - offset) else {
                    throw StrataError.corrupted(file: what, offset: offset, reason: "value length \(length) exceeds the \(bytes.count - offset) bytes left")
                }
                v.append(Array(bytes[offset..<offset + Int(length)]))
                offset += Int(length)
            }
            guard offset == bytes.count else {
                throw StrataError.corrupted(file: what, offset: offset, reason: "\(bytes.count - offset) bytes after the values")
            }
            return SeriesChunk(firstSequence: first, timestamps: times.map { UInt64(bitPattern: $0) }, authors: authors,
                               originals: originals, values: .bytes(v))
        }
        guard r.remainingBits < 8 else { throw fail("\(r.remainingBits / 8) bytes after the values") }
        return SeriesChunk(firstSequence: first, timestamps: times.map { UInt64(bitPattern: $0) }, authors: authors,
                           originals: originals, values: values)
    }
}
