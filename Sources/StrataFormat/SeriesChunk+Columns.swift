/// The fast decoding of a chunk (FORMAT.md §14.6): its columns go straight into the caller's
/// arrays (appended, so one set of arrays collects a run of chunks), with no array per column, no
/// `SeriesChunk` value and no per-value bounds check in the inner loops (see ``ColumnReader``).
/// Every check of ``SeriesChunk/decode(_:)`` is made; on a throw the arrays are as they were.
extension SeriesChunk {
    /// The fields in front of a chunk's columns.
    package struct Header: Equatable, Sendable {
        /// 0 bytes, 1 `Double`, 2 `Int64` (``Values/kind``).
        package var kind: UInt8
        package var firstSequence: UInt64
        /// The number of events, 1…``ColumnHeader/maximumCount``.
        package var count: Int

        package var lastSequence: UInt64 { firstSequence &+ UInt64(count) &- 1 }

    package init(kind: UInt8, firstSequence: UInt64, count: Int) {
        self.kind = kind
        self.firstSequence = firstSequence
        self.count = count
    }
}

    /// An edit event of a chunk: its index in the chunk (its sequence is the first sequence plus
    /// the index) and its original.
    package struct Edit: Equatable, Sendable {
        package var index: Int
        package var original: Original

    package init(index: Int, original: Original) {
        self.index = index
        self.original = original
    }
}

    /// The header of a chunk without decoding its columns (a count of events costs four fields).
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` as ``decode(_:)`` does for them.
    package static func header(_ bytes: UnsafeRawBufferPointer) throws -> Header {
        var r = ColumnReader(bytes)
        return try readHeader(&r)
    }

    /// Decodes a record as the `[UInt8]` overload does, from borrowed bytes.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> SeriesChunk {
        let header = try header(bytes)
        var timestamps: [Int64] = [], authors: [UInt64] = [], edits: [Edit] = []
        let values: Values
        switch header.kind {
        case 1:
            var doubles: [Double] = []
            _ = try decodeColumns(bytes, timestamps: &timestamps, authors: &authors, edits: &edits, doubles: &doubles)
            values = .doubles(doubles)
        case 2:
            var integers: [Int64] = []
            _ = try decodeColumns(bytes, timestamps: &timestamps, authors: &authors, edits: &edits, integers: &integers)
            values = .integers(integers)
        default:
            var ranges: [Range<Int>] = []
            _ = try decodeColumns(bytes, timestamps: &timestamps, authors: &authors, edits: &edits, values: &ranges)
            values = .bytes(ranges.map { Array(bytes[$0]) })
        }
        var originals = [Original?](repeating: nil, count: header.count)
        for e in edits { originals[e.index] = e.original }
        return SeriesChunk(firstSequence: header.firstSequence, timestamps: timestamps.map { UInt64(bitPattern: $0) },
                           authors: authors, originals: originals, values: values)
    }

    /// Decodes only a chunk's header and timestamps (plus `base`), appended to `timestamps` — what
    /// a search by time needs; the columns after them are neither decoded nor checked.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` for what ``decode(_:)`` refuses in
    ///   the header and timestamp column; `timestamps` is then left as it was.
    package static func decodeTimestamps(_ bytes: UnsafeRawBufferPointer, base: Int64 = 0, into timestamps: inout [Int64]) throws -> Header {
        let mark = timestamps.count
        do {
            var r = ColumnReader(bytes)
            let header = try readHeader(&r)
            try appending(header.count, to: &timestamps) { try TimestampColumn.decode(from: &r, count: header.count, offset: base, into: $0) }
            return header
        } catch {
            timestamps.removeSubrange(mark...)
            throw error
        }
    }

    /// Decodes a `Double` chunk, appending each event's timestamp plus `base` to `timestamps`,
    /// its author index to `authors`, each edit event to `edits` (with its index counted from
    /// this chunk's first event) and each value to `doubles`.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` for whatever ``decode(_:)``
    ///   refuses and for a chunk of another value kind; the arrays are then left as they were.
    package static func decodeColumns(_ bytes: UnsafeRawBufferPointer, base: Int64 = 0, timestamps: inout [Int64],
                              authors: inout [UInt64], edits: inout [Edit], doubles: inout [Double]) throws -> Header {
        try decodeColumns(bytes, kind: 1, base: base, timestamps: &timestamps, authors: &authors, edits: &edits,
                          values: &doubles) { r, n, out in try DoubleColumn.decode(from: &r, count: n, into: out) }
    }

    /// Decodes an `Int64` chunk as ``decodeColumns(_:base:timestamps:authors:edits:doubles:)``
    /// decodes a `Double` one, appending its values to `integers`.
    package static func decodeColumns(_ bytes: UnsafeRawBufferPointer, base: Int64 = 0, timestamps: inout [Int64],
                              authors: inout [UInt64], edits: inout [Edit], integers: inout [Int64]) throws -> Header {
        try decodeColumns(bytes, kind: 2, base: base, timestamps: &timestamps, authors: &authors, edits: &edits,
                          values: &integers) { r, n, out in try IntegerColumn.decode(from: &r, count: n, into: out) }
    }

    /// A chunk of value kind `kind` whose value column `decodeValues` reads.
    private static func decodeColumns<T: AdditiveArithmetic>(
        _ bytes: UnsafeRawBufferPointer, kind: UInt8, base: Int64, timestamps: inout [Int64], authors: inout [UInt64],
        edits: inout [Edit], values: inout [T],
        _ decodeValues: (inout ColumnReader, Int, UnsafeMutablePointer<T>) throws -> Void
    ) throws -> Header {
        let marks = (timestamps.count, authors.count, edits.count, values.count)
        do {
            var r = ColumnReader(bytes)
            let header = try readMetadata(&r, kind: kind, base: base, timestamps: &timestamps, authors: &authors, edits: &edits)
            try appending(header.count, to: &values) { try decodeValues(&r, header.count, $0) }
            try checkEnd(r)
            return header
        } catch {
            restore(marks.0, &timestamps, marks.1, &authors, marks.2, &edits)
            values.removeSubrange(marks.3...)
            throw error
        }
    }

    /// Decodes a chunk of byte values (§13 encodings) as
    /// ``decodeColumns(_:base:timestamps:authors:edits:doubles:)`` decodes a `Double` one,
    /// appending where each value lies in `bytes` to `values` (nothing is copied).
    package static func decodeColumns(_ bytes: UnsafeRawBufferPointer, base: Int64 = 0, timestamps: inout [Int64],
                              authors: inout [UInt64], edits: inout [Edit], values: inout [Range<Int>]) throws -> Header {
        let marks = (timestamps.count, authors.count, edits.count, values.count)
        do {
            var r = ColumnReader(bytes)
            let header = try readMetadata(&r, kind: 0, base: base, timestamps: &timestamps, authors: &authors, edits: &edits)
            let n = header.count
            let start = values.count
            values.append(contentsOf: repeatElement(0..<0, count: n))
            // Lengths first (each within the record, so their sum cannot overflow), then the
            // ranges once the byte-aligned start of the values is known.
            var total = 0
            _ = try ColumnHeader.read(from: &r, what: IntegerColumn.what, count: n, expected: .integerPacked)
            let at = r.byteOffset
            try PackedIntegers.unpack(count: n, from: &r, what: IntegerColumn.what) { i, length in
                guard length >= 0, length <= Int64(bytes.count) else {
                    throw StrataError.corrupted(file: what, offset: at, reason: "value length \(length) exceeds the \(bytes.count)-byte record")
                }
                values[start + i] = total..<total + Int(length)
                total += Int(length)
            }
            let dataStart = (r.position + 7) / 8
            guard total == bytes.count - dataStart else {
                throw StrataError.corrupted(file: what, offset: dataStart,
                                            reason: "value lengths total \(total) bytes where \(bytes.count - dataStart) remain")
            }
            for i in start..<values.count {
                values[i] = values[i].lowerBound + dataStart..<values[i].upperBound + dataStart
            }
            return header
        } catch {
            restore(marks.0, &timestamps, marks.1, &authors, marks.2, &edits)
            values.removeSubrange(marks.3...)
            throw error
        }
    }

    // MARK: - The parts

    private static func readHeader(_ r: inout ColumnReader) throws -> Header {
        guard let marker = r.read(bits: 8), let kind = r.read(bits: 8) else { throw ColumnHeader.truncated(what, r) }
        guard marker == UInt64(Self.marker) else { throw ColumnHeader.corrupted(what, r, "not a chunk (first byte \(marker))") }
        guard kind <= 2 else { throw ColumnHeader.corrupted(what, r, "unknown value kind \(kind)") }
        guard let rawCount = r.readVarint(), let first = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
        guard rawCount >= 1, rawCount <= UInt64(ColumnHeader.maximumCount) else {
            throw ColumnHeader.corrupted(what, r, "event count \(rawCount)")
        }
        let n = Int(rawCount)
        guard first <= UInt64.max - UInt64(n - 1) else {
            throw ColumnHeader.corrupted(what, r, "\(n) events from sequence \(first) pass UInt64.max")
        }
        return Header(kind: UInt8(kind), firstSequence: first, count: n)
    }

    /// Everything before the values: header, timestamps, authors, edits.
    private static func readMetadata(_ r: inout ColumnReader, kind: UInt8, base: Int64, timestamps: inout [Int64],
                                     authors: inout [UInt64], edits: inout [Edit]) throws -> Header {
        let header = try readHeader(&r)
        guard header.kind == kind else {
            throw ColumnHeader.corrupted(what, r, "a chunk of value kind \(header.kind) where \(kind) was expected")
        }
        let n = header.count
        try appending(n, to: &timestamps) { try TimestampColumn.decode(from: &r, count: n, offset: base, into: $0) }

        guard let k = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
        guard k >= 1, k <= UInt64(n) else { throw ColumnHeader.corrupted(what, r, "\(k) distinct authors for \(n) events") }
        let distinct = Int(k)
        // Each author takes at least a byte: bounds the slots below by the record's size.
        guard distinct * 8 <= r.remainingBits else { throw ColumnHeader.truncated(what, r) }
        if distinct == 1 {
            guard let a = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
            authors.append(contentsOf: repeatElement(a, count: n))
        } else {
            // n slots for the events, then (removed at the end) the k distinct authors.
            try appending(n + distinct, to: &authors) { p in
                for j in 0..<distinct {
                    guard let a = r.readVarint() else { throw ColumnHeader.truncated(what, r) }
                    p[n + j] = a
                }
                _ = try ColumnHeader.read(from: &r, what: IntegerColumn.what, count: n, expected: .integerPacked)
                let at = r.byteOffset
                try PackedIntegers.unpack(count: n, from: &r, what: IntegerColumn.what) { i, position in
                    guard position >= 0, position < Int64(distinct) else {
                        throw StrataError.corrupted(file: what, offset: at, reason: "author position \(position) outside 0…\(distinct - 1)")
                    }
                    p[i] = p[n + Int(position)]
                }
            }
            authors.removeLast(distinct)
        }

        guard let anyEdits = r.readBit() else { throw ColumnHeader.truncated(what, r) }
        if anyEdits {
            guard n <= r.remainingBits else { throw ColumnHeader.truncated(what, r) }
            let start = edits.count
            let zero = Original(sequence: 0, timestamp: 0, author: 0)
            for i in 0..<n where r.readUnchecked(bits: 1) == 1 {
                edits.append(Edit(index: i, original: zero))
            }
            let m = edits.count - start
            guard m > 0 else { throw ColumnHeader.corrupted(what, r, "the edit bitmap is empty") }
            try edits.withUnsafeMutableBufferPointer { buffer in
                let e = buffer.baseAddress.map { $0 + start }
                guard let e else { return }
                _ = try ColumnHeader.read(from: &r, what: IntegerColumn.what, count: m, expected: .integerPacked)
                let at = r.byteOffset
                try PackedIntegers.unpack(count: m, from: &r, what: IntegerColumn.what) { j, raw in
                    let sequence = header.firstSequence + UInt64(e[j].index)
                    let distance = UInt64(bitPattern: raw)
                    guard distance >= 1, distance <= sequence else {
                        throw StrataError.corrupted(file: what, offset: at, reason: "event \(sequence) edits an original \(raw) before it")
                    }
                    e[j].original.sequence = sequence - distance
                }
                _ = try ColumnHeader.read(from: &r, what: IntegerColumn.what, count: m, expected: .integerPacked)
                try PackedIntegers.unpack(count: m, from: &r, what: IntegerColumn.what) { j, t in
                    e[j].original.timestamp = UInt64(bitPattern: t)
                }
                _ = try ColumnHeader.read(from: &r, what: IntegerColumn.what, count: m, expected: .integerPacked)
                try PackedIntegers.unpack(count: m, from: &r, what: IntegerColumn.what) { j, a in
                    e[j].original.author = UInt64(bitPattern: a)
                }
            }
        }
        return header
    }

    /// Appends `count` zeros to `array` and lets `fill` write them through a pointer.
    @inline(__always)
    private static func appending<T: AdditiveArithmetic>(_ count: Int, to array: inout [T],
                                                         _ fill: (UnsafeMutablePointer<T>) throws -> Void) throws {
        let start = array.count
        array.append(contentsOf: repeatElement(.zero, count: count))
        try array.withUnsafeMutableBufferPointer { buffer in
            if let p = buffer.baseAddress { try fill(p + start) }
        }
    }

    private static func checkEnd(_ r: ColumnReader) throws {
        guard r.remainingBits < 8 else { throw ColumnHeader.corrupted(what, r, "\(r.remainingBits / 8) bytes after the values") }
    }

    private static func restore(_ t: Int, _ timestamps: inout [Int64], _ a: Int, _ authors: inout [UInt64],
                                _ e: Int, _ edits: inout [Edit]) {
        timestamps.removeSubrange(min(t, timestamps.count)...)
        authors.removeSubrange(min(a, authors.count)...)
        edits.removeSubrange(min(e, edits.count)...)
    }
}
