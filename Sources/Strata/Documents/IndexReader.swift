import Foundation

/// Runs index queries over a snapshot: key ranges, paging, reduction and grouping.
///
/// Works on any ``Snapshot``, so tools reading a store image share it (they pass the reduction
/// code stored in the catalog and cannot run custom reductions).
enum IndexReader {
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

    /// Checks the options of `query`; throws ``StrataError/invalidArgument(_:)`` naming the bad one.
    static func validate(_ query: IndexQuery, index: String, hasReduction: Bool) throws -> Bool {
        if let limit = query.limit, limit < 0 {
            throw StrataError.invalidArgument("query of index \(index.debugDescription): limit \(limit) is negative")
        }
        if query.skip < 0 {
            throw StrataError.invalidArgument("query of index \(index.debugDescription): skip \(query.skip) is negative")
        }
        if let g = query.groupLevel, g < 0 {
            throw StrataError.invalidArgument("query of index \(index.debugDescription): groupLevel \(g) is negative")
        }
        let reducing = query.reduce ?? hasReduction
        if reducing && !hasReduction {
            throw StrataError.invalidArgument("query of index \(index.debugDescription): reduce requested, but the index has no reduction")
        }
        if !reducing, query.groupLevel != nil {
            throw StrataError.invalidArgument("query of index \(index.debugDescription): groupLevel needs a reduced query")
        }
        return reducing
    }

    /// The spans a query scans, in scan order.
    static func spans(of query: IndexQuery) -> [Span] {
        switch query.selection {
        case .all:
            return [Span(lower: [], upper: nil)]
        case .keys(let keys):
            return keys.map { Span(lower: $0.collationKey, upper: $0.collationKeyAfterEqual) }
        case .range(let start, let end, let inclusiveEnd):
            var span: Span
            if !query.descending {
                span = Span(lower: start?.collationKey ?? [],
                            upper: end.map { inclusiveEnd ? $0.collationKeyAfterEqual : $0.collationKey })
            } else {
                // CouchDB: descending scans from `start` (the upper key) down to `end`.
                span = Span(lower: end.map { inclusiveEnd ? $0.collationKey : $0.collationKeyAfterEqual } ?? [],
                            upper: start?.collationKeyAfterEqual)
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
                    snapshot: Snapshot) throws -> IndexQueryResult {
        let reducing = try validate(query, index: index, hasReduction: reduction != nil)
        let prefixEnd = TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF]
        if query.limit == 0 { return IndexQueryResult(rows: []) }
        if !reducing {
            var rows: [QueryRow] = []
            var toSkip = query.skip
            let limit = query.limit ?? .max
            if let l = query.limit { rows.reserveCapacity(Swift.min(l, 4096)) }
            scan: for span in spans(of: query) {
                let cursor = snapshot.cursor(lower: prefix + span.lower, upper: span.upper.map { prefix + $0 } ?? prefixEnd,
                                             reverse: query.descending)
                while try cursor.next() {
                    if toSkip > 0 { toSkip -= 1; continue }
                    rows.append(try cursor.withKey { key in try decodeRow(key: key, value: cursor.value, prefixLength: prefix.count) })
                    if rows.count >= limit { break scan }
                }
            }
            return IndexQueryResult(rows: rows)
        }
        guard let reduction else { return IndexQueryResult(rows: []) }
        var reducer = GroupReducer(reduction: reduction, index: index, groupLevel: query.groupLevel)
        for span in spans(of: query) {
            let cursor = snapshot.cursor(lower: prefix + span.lower, upper: span.upper.map { prefix + $0 } ?? prefixEnd,
                                         reverse: query.descending)
            while try cursor.next() {
                try cursor.withKey { key in try reducer.add(key: key, value: cursor.value, prefixLength: prefix.count) }
            }
        }
        let rows = try reducer.finish()
        let skipped = rows.dropFirst(Swift.min(query.skip, rows.count))
        return IndexQueryResult(rows: Array(skipped.prefix(query.limit ?? .max)))
    }

    /// Decodes a row: the key's collation key and document id, and the value.
    static func decodeRow(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, prefixLength: Int) throws -> QueryRow {
        var offset = prefixLength
        let json = try JSON.decodeCollationKey(key, at: &offset)
        let id = try documentID(key: key, at: offset)
        // Not a ternary: `nil` there would become `JSON.null` (JSON is ExpressibleByNilLiteral).
        var v: JSON? = nil
        if !value.isEmpty { v = try JSON(binary: value) }
        return QueryRow(key: json, value: v, documentID: id)
    }

    /// The document id element at `offset` of a row key.
    static func documentID(key: UnsafeRawBufferPointer, at offset: Int) throws -> String {
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
struct GroupReducer {
    let reduction: Reduction
    let index: String
    let groupLevel: Int?
    private var rows: [QueryRow] = []
    private var group: JSON?
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

    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, prefixLength: Int) throws {
        if let level = groupLevel {
            var offset = prefixLength
            let json = try JSON.decodeCollationKey(key, at: &offset)
            let g = level == 0 ? JSON.null : Self.groupKey(json, level: level)
            if started, let current = group, JSON.collate(current, g) != 0 {
                rows.append(QueryRow(key: current, value: try accumulator.result(), documentID: nil))
                accumulator = ReductionAccumulator(reduction: reduction, index: index)
            }
            group = g
            started = true
            try accumulator.add(keyBytes: key, prefixLength: prefixLength, value: value)
        } else {
            started = true
            try accumulator.add(keyBytes: key, prefixLength: prefixLength, value: value)
        }
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
            throw StrataError.invalidArgument("index \(index.debugDescription): custom reduce failed: \(error)")
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
