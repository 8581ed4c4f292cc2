import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Runs index queries over a snapshot: key ranges, paging, reduction and grouping.
///
/// Works on any ``Snapshot``, so tools reading a store image share it (they pass the reduction
/// code stored in the catalog and cannot run custom reductions).
package enum IndexReader {
    /// One scan of a query: row-key suffixes (after `(5, indexId)`) in `[lower, upper)`, nil for
    /// an open bound.
    struct Span: Sendable {
        var lower: [UInt8]
        var upper: [UInt8]?

        func contains(_ suffix: UnsafeRawBufferPointer) -> Bool {
            let lowerOK = lower.withUnsafeBytes { JSONBinary.compareBytes(suffix, $0) >= 0 }
            guard lowerOK else { return false }
            guard let upper else { return true }
            return upper.withUnsafeBytes { JSONBinary.compareBytes(suffix, $0) < 0 }
        }
    }

    /// Checks the options of `query`; throws ``StrataError/invalidArgument(argument:reason:)`` naming the bad one.
    static func validate(_ query: IndexQuery, index: String, hasReduction: Bool) throws -> Bool {
        if let limit = query.limit, limit < 0 {
            throw StrataError.invalidArgument(argument: "limit", reason: "query of index \(index.debugDescription): limit \(limit) is negative")
        }
        if query.skip < 0 {
            throw StrataError.invalidArgument(argument: "skip", reason: "query of index \(index.debugDescription): skip \(query.skip) is negative")
        }
        if let g = query.groupLevel, g < 0 {
            throw StrataError.invalidArgument(argument: "groupLevel", reason: "query of index \(index.debugDescription): groupLevel \(g) is negative")
        }
        let reducing = query.reduce ?? hasReduction
        if reducing && !hasReduction {
            throw StrataError.invalidArgument(argument: "reduce", reason: "query of index \(index.debugDescription): reduce requested, but the index has no reduction")
        }
        if !reducing, query.groupLevel != nil {
            throw StrataError.invalidArgument(argument: "groupLevel", reason: "query of index \(index.debugDescription): groupLevel needs a reduced query")
        }
        return reducing
    }

    /// The spans a query scans, in scan order, over rows keyed in `collation`.
    static func spans(of query: IndexQuery, collation: DocumentIndex.Collation = .raw) throws -> [Span] {
        let key = collation.key, after = collation.keyAfterEqual
        switch query.selection {
        case .all:
            return [Span(lower: [], upper: nil)]
        case .keys(let keys):
            return try keys.map { Span(lower: try key($0), upper: try after($0)) }
        case .range(let start, let end, let inclusiveEnd):
            var span: Span
            if !query.descending {
                span = Span(lower: try start.map(key) ?? [],
                            upper: try end.map { inclusiveEnd ? try after($0) : try key($0) })
            } else {
                // CouchDB: descending scans from `start` (the upper key) down to `end`.
                span = Span(lower: try end.map { inclusiveEnd ? try key($0) : try after($0) } ?? [],
                            upper: try start.map(after))
            }
            if let upper = span.upper, !span.lower.lexicographicallyPrecedes(upper) {
                span = Span(lower: [], upper: [])  // start beyond end: nothing
            }
            return [span]
        }
    }

    /// Runs `query` on the index whose rows start with `prefix`.
    ///
    /// `reduction` is the index's reduction (nil for none); `storedReduction` stands in for it in
    /// tools that only know the catalog's reduction code (custom reductions cannot run there).
    static func run(_ query: IndexQuery, index: String, prefix: [UInt8], reduction: Reduction?,
                    collation: DocumentIndex.Collation = .raw, snapshot: Snapshot) throws -> IndexQueryResult {
        let reducing = try validate(query, index: index, hasReduction: reduction != nil)
        let prefixEnd = TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF]
        if query.limit == 0 { return IndexQueryResult(rows: []) }
        if !reducing {
            var rows: [QueryRow] = []
            var toSkip = query.skip
            let limit = query.limit ?? .max
            if let l = query.limit { rows.reserveCapacity(Swift.min(l, 4096)) }
            scan: for span in try spans(of: query, collation: collation) {
                let cursor = snapshot.cursor(lower: prefix + span.lower, upper: span.upper.map { prefix + $0 } ?? prefixEnd,
                                             reverse: query.descending)
                while try cursor.next() {
                    if toSkip > 0 { toSkip -= 1; continue }
                    rows.append(try cursor.withKey { key in
                        try decodeRow(key: key, value: cursor.value, prefixLength: prefix.count, collation: collation)
                    })
                    if rows.count >= limit { break scan }
                }
            }
            return IndexQueryResult(rows: rows)
        }
        guard let reduction else { return IndexQueryResult(rows: []) }
        var reducer = GroupReducer(reduction: reduction, index: index, groupLevel: query.groupLevel)
        for span in try spans(of: query, collation: collation) {
            let cursor = snapshot.cursor(lower: prefix + span.lower, upper: span.upper.map { prefix + $0 } ?? prefixEnd,
                                         reverse: query.descending)
            while try cursor.next() {
                try cursor.withKey { key in
                    try reducer.add(key: key, value: cursor.value, prefixLength: prefix.count, collation: collation)
                }
            }
        }
        let rows = try reducer.finish()
        let skipped = rows.dropFirst(Swift.min(query.skip, rows.count))
        return IndexQueryResult(rows: Array(skipped.prefix(query.limit ?? .max)))
    }

    /// The offset of a row key's readable collation key (§13.3): right after the prefix, or after
    /// the Unicode collation key (§13.4) that leads a `.unicode` row.
    static func originalKeyOffset(key: UnsafeRawBufferPointer, prefixLength: Int,
                                  collation: DocumentIndex.Collation) throws -> Int {
        var offset = prefixLength
        if collation == .unicode { try JSON.skipCollationKey(key, at: &offset) }
        return offset
    }

    /// Decodes a row: the key's collation key and document id, and the value.
    package static func decodeRow(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, prefixLength: Int,
                          collation: DocumentIndex.Collation = .raw) throws -> QueryRow {
        var offset = try originalKeyOffset(key: key, prefixLength: prefixLength, collation: collation)
        let json = try JSON.decodeCollationKey(key, at: &offset)
        let id = try documentID(key: key, at: offset)
        // Not a ternary: `nil` there would become `JSON.null` (JSON is ExpressibleByNilLiteral).
        var v: JSON? = nil
        if !value.isEmpty { v = try JSON(binary: value) }
        return QueryRow(key: json, value: v, documentID: id)
    }

    /// The document id element at `offset` of a row key.
    static func documentID(key: UnsafeRawBufferPointer, at offset: Int) throws -> String {
        // The common case, an ASCII id (so without 0x00 bytes and escapes), read in place: the
        // decoder below copies the key, and String(validating:) from raw bytes costs generic
        // metadata lookups on every call. ASCII is valid UTF-8 as it is; any other id, or a
        // malformed element, takes the decoder's path, its strict UTF-8 check and its errors.
        if offset < key.count, key[offset] == TupleKey.TypeCode.string {
            var end = offset + 1
            while end < key.count, key[end] != TupleKey.terminator, key[end] < 0x80 { end += 1 }
            let terminated = end < key.count && key[end] == TupleKey.terminator
            let escaped = end + 1 < key.count && key[end + 1] == TupleKey.escape
            if terminated, !escaped {
                return String(decoding: UnsafeRawBufferPointer(rebasing: key[(offset + 1)..<end]), as: UTF8.self)
            }
        }
        var decoder = TupleKeyDecoder(Array(key[offset...])[...])
        do {
            return try decoder.nextString()
        } catch {
            throw StrataError.corrupted(file: "index row \(TupleKey.describe(Array(key)))", offset: offset,
                                        reason: "no document id after the key: \(error)")
        }
    }
}

/// Folds the rows of a scan into reduced rows, one per group.
///
/// A group is told by bytes: the part of the row's ordering key (the collation key, or a
/// `.unicode` row's Unicode collation key) that encodes the group key — all of it, or for an
/// array key with more than `groupLevel` elements, the array's first `groupLevel` elements
/// (without the array's end byte, so that `[a, b]` and `[a, b, c]` share the group `[a, b]`
/// at level 2). Keys that collate equal have equal bytes, and a group's rows are adjacent in the
/// scan. The reduced row's key is the group key of the group's first row, as emitted.
struct GroupReducer {
    let reduction: Reduction
    let index: String
    let groupLevel: Int?
    private var rows: [QueryRow] = []
    private var group: JSON?
    private var groupBytes: [UInt8] = []
    private var started = false
    private var accumulator: ReductionAccumulator

    init(reduction: Reduction, index: String, groupLevel: Int?) {
        self.reduction = reduction
        self.index = index
        self.groupLevel = groupLevel
        self.accumulator = ReductionAccumulator(reduction: reduction, index: index)
    }

    /// The group of a row key: the whole key, or an array key's first `level` elements.
    static func groupKey(_ key: JSON, level: Int) -> JSON {
        if case .array(let elements) = key, elements.count > level { return .array(Array(elements.prefix(level))) }
        return key
    }

    /// The bytes of `key` from `start` that tell its group at `level` (see the type's comment).
    static func groupSpan(_ key: UnsafeRawBufferPointer, from start: Int, level: Int) throws -> UnsafeRawBufferPointer {
        var end = start
        if level > 0, start < key.count, key[start] == JSONCollationType.array {
            end += 1
            var elements = 0
            while elements < level, end < key.count, key[end] != JSONCollationType.end {
                try JSON.skipCollationKey(key, at: &end)
                elements += 1
            }
            // Fewer elements than `level`: the whole array, less its end byte.
        } else {
            try JSON.skipCollationKey(key, at: &end)
        }
        return UnsafeRawBufferPointer(rebasing: key[start..<end])
    }

    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, prefixLength: Int,
                      collation: DocumentIndex.Collation = .raw) throws {
        let originalOffset = try IndexReader.originalKeyOffset(key: key, prefixLength: prefixLength, collation: collation)
        if let level = groupLevel {
            let span = level == 0 ? UnsafeRawBufferPointer(rebasing: key[prefixLength..<prefixLength])
                : try Self.groupSpan(key, from: prefixLength, level: level)
            let same = started && span.elementsEqual(groupBytes)
            if !same {
                if started, let current = group {
                    rows.append(QueryRow(key: current, value: try accumulator.result(), documentID: nil))
                    accumulator = ReductionAccumulator(reduction: reduction, index: index)
                }
                var offset = originalOffset
                let json = try JSON.decodeCollationKey(key, at: &offset)
                group = level == 0 ? JSON.null : Self.groupKey(json, level: level)
                groupBytes = Array(span)
            }
            started = true
        } else {
            started = true
        }
        try accumulator.add(keyBytes: key, prefixLength: originalOffset, value: value)
    }

    mutating func finish() throws -> [QueryRow] {
        guard started else { return rows }
        rows.append(QueryRow(key: groupLevel == nil ? .null : (group ?? .null), value: try accumulator.result(), documentID: nil))
        return rows
    }
}

/// The running reduction of one group.
struct ReductionAccumulator {
    let reduction: Reduction
    let index: String
    var count: Int64 = 0
    var numericCount: Int64 = 0
    var intSum: Int64 = 0
    var sumIsInt = true
    var doubleSum: Double = 0
    var sumsqr: Double = 0
    var minimum: JSON?
    var maximum: JSON?
    // Custom reductions: the current chunk and the partial results so far.
    var keys: [JSON] = []
    var values: [JSON] = []
    var partials: [JSON] = []

    init(reduction: Reduction, index: String) {
        self.reduction = reduction
        self.index = index
    }

    mutating func add(keyBytes: UnsafeRawBufferPointer, prefixLength: Int, value: UnsafeRawBufferPointer) throws {
        count += 1
        switch reduction {
        case .count:
            return
        case .sum, .stats:
            try addNumber(value)
        case .custom(let f):
            var offset = prefixLength
            keys.append(try JSON.decodeCollationKey(keyBytes, at: &offset))
            values.append(value.isEmpty ? .null : try JSON(binary: value))
            if keys.count >= Reduction.chunkSize {
                partials.append(try call(f, keys, values, false))
                keys.removeAll(keepingCapacity: true)
                values.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Adds a numeric value read straight from its binary form; other values count as 0 for
    /// `sum` and are left out of `stats`.
    private mutating func addNumber(_ value: UnsafeRawBufferPointer) throws {
        guard !value.isEmpty else { return }
        let type = value[0]
        var asInt: Int64?
        var asDouble: Double
        if type == JSONBinaryType.int {
            var offset = 1
            guard let z = Varint.read(value, at: &offset), offset == value.count else {
                throw StrataError.corrupted(file: "index \(index.debugDescription) row value", offset: 1, reason: "bad int")
            }
            let i = Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
            asInt = i
            asDouble = Double(i)
        } else if type == JSONBinaryType.double {
            guard value.count == 9 else {
                throw StrataError.corrupted(file: "index \(index.debugDescription) row value", offset: 1, reason: "bad double")
            }
            asDouble = Double(bitPattern: LittleEndian.uint64(value, at: 1))
        } else {
            return
        }
        numericCount += 1
        if sumIsInt, let i = asInt {
            let (s, overflow) = intSum.addingReportingOverflow(i)
            if overflow { sumIsInt = false; doubleSum = Double(intSum) + Double(i) } else { intSum = s }
        } else {
            if sumIsInt { sumIsInt = false; doubleSum = Double(intSum) }
            doubleSum += asDouble
        }
        if case .stats = reduction {
            sumsqr += asDouble * asDouble
            let number: JSON = asInt.map { .int($0) } ?? .double(asDouble)
            if let m = minimum { if JSON.collate(number, m) < 0 { minimum = number } } else { minimum = number }
            if let m = maximum { if JSON.collate(number, m) > 0 { maximum = number } } else { maximum = number }
        }
    }

    private func call(_ f: @Sendable ([JSON], [JSON], Bool) throws -> JSON, _ k: [JSON], _ v: [JSON], _ rereduce: Bool) throws -> JSON {
        do {
            return try f(k, v, rereduce)
        } catch {
            throw StrataError.invalidArgument(argument: "reduce", reason: "index \(index.debugDescription): custom reduce failed: \(error)")
        }
    }

    var sum: JSON { sumIsInt ? .int(intSum) : .double(doubleSum) }

    mutating func result() throws -> JSON {
        switch reduction {
        case .count:
            return .int(count)
        case .sum:
            return sum
        case .stats:
            return .object(["sum": sum, "count": .int(numericCount), "min": minimum ?? .null, "max": maximum ?? .null,
                            "sumsqr": .double(sumsqr)])
        case .custom(let f):
            if partials.isEmpty { return try call(f, keys, values, false) }
            if !keys.isEmpty { partials.append(try call(f, keys, values, false)) }
            // Re-reduce the partial results, a chunk at a time, until one is left.
            var level = partials
            while level.count > 1 {
                var next: [JSON] = []
                var start = 0
                while start < level.count {
                    let end = Swift.min(start + Reduction.chunkSize, level.count)
                    next.append(try call(f, [], Array(level[start..<end]), true))
                    start = end
                }
                level = next
            }
            return level[0]
        }
    }
}
