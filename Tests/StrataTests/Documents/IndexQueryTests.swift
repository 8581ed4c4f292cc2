import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Index queries against a brute-force reference: seeded random documents and maps with mixed
// int/double, string, array and object keys; every query option, reduce with and without
// groupLevel, descending ranges, skip + limit; plus row maintenance after updates and deletes.

/// The reference: every row of an index, computed from the documents by running the map.
struct ReferenceIndex {
    struct Row {
        var key: JSON
        var value: JSON?
        var id: String
        var emit: Int
    }

    var rows: [Row] = []

    init(documents: [String: Document], map: DocumentIndex.Map) throws {
        for (id, doc) in documents {
            var emitted: [(JSON?, JSON?)] = []
            try map(doc) { k, v in emitted.append((k, v)) }
            var n = 0
            // API.md: a nil key emits nothing; `.null` is a row.
            for case let (k?, v) in emitted {
                rows.append(Row(key: k, value: v, id: id, emit: n))
                n += 1
            }
        }
        rows.sort(by: Self.ascending)
    }

    static func ascending(_ a: Row, _ b: Row) -> Bool {
        let c = JSON.collate(a.key, b.key)
        if c != 0 { return c < 0 }
        if a.id != b.id { return Array(a.id.utf8).lexicographicallyPrecedes(Array(b.id.utf8)) }
        return a.emit < b.emit
    }

    func run(_ q: IndexQuery, reduction: Reduction?) throws -> [QueryRow] {
        var selected: [Row]
        switch q.selection {
        case .all:
            selected = q.descending ? rows.reversed() : rows
        case .keys(let keys):
            selected = []
            for k in keys {
                let matching = rows.filter { JSON.collate($0.key, k) == 0 }
                selected += q.descending ? matching.reversed() : matching
            }
        case .range(let start, let end, let inclusiveEnd):
            if !q.descending {
                selected = rows.filter { r in
                    (start.map { JSON.collate(r.key, $0) >= 0 } ?? true)
                        && (end.map { inclusiveEnd ? JSON.collate(r.key, $0) <= 0 : JSON.collate(r.key, $0) < 0 } ?? true)
                }
            } else {
                selected = rows.reversed().filter { r in
                    (start.map { JSON.collate(r.key, $0) <= 0 } ?? true)
                        && (end.map { inclusiveEnd ? JSON.collate(r.key, $0) >= 0 : JSON.collate(r.key, $0) > 0 } ?? true)
                }
            }
        }
        var out: [QueryRow]
        if q.reduce ?? (reduction != nil), let reduction {
            var groups: [(JSON, [Row])] = []
            for r in selected {
                let g: JSON
                if let level = q.groupLevel {
                    if level == 0 { g = .null } else if case .array(let e) = r.key, e.count > level { g = .array(Array(e.prefix(level))) } else { g = r.key }
                } else {
                    g = .null
                }
                if let last = groups.last, JSON.collate(last.0, g) == 0 {
                    groups[groups.count - 1].1.append(r)
                } else {
                    groups.append((g, [r]))
                }
            }
            out = try groups.map { QueryRow(key: $0.0, value: try Self.reduce($0.1, reduction), documentID: nil) }
        } else {
            out = selected.map { QueryRow(key: $0.key, value: $0.value, documentID: $0.id) }
        }
        out = Array(out.dropFirst(q.skip))
        if let limit = q.limit { out = Array(out.prefix(limit)) }
        return out
    }

    static func reduce(_ rows: [Row], _ reduction: Reduction) throws -> JSON {
        switch reduction {
        case .count:
            return .int(Int64(rows.count))
        case .sum, .stats:
            var intSum: Int64 = 0
            var isInt = true
            var doubleSum = 0.0
            var n: Int64 = 0
            var sq = 0.0
            var lo: JSON?
            var hi: JSON?
            for r in rows {
                guard let v = r.value, let d = v.doubleValue else { continue }
                n += 1
                if isInt, case .int(let i) = v, case (let s, false) = intSum.addingReportingOverflow(i) {
                    intSum = s
                } else {
                    if isInt { isInt = false; doubleSum = Double(intSum) }
                    doubleSum += d
                }
                sq += d * d
                if lo == nil || JSON.collate(v, lo!) < 0 { lo = v }
                if hi == nil || JSON.collate(v, hi!) > 0 { hi = v }
            }
            let sum: JSON = isInt ? .int(intSum) : .double(doubleSum)
            if case .sum = reduction { return sum }
            return ["sum": sum, "count": .int(n), "min": lo ?? .null, "max": hi ?? .null, "sumsqr": .double(sq)]
        case .custom(let f):
            return try f(rows.map(\.key), rows.map { $0.value ?? .null }, false)
        }
    }
}

/// Random documents whose fields give keys of every kind, including ints and doubles of equal value.
enum DocumentGenerator {
    static let scalars: [JSON] = [.int(-3), .int(0), .int(1), .double(1.0), .double(1.5), .int(2), .double(-0.5),
                                  .int(Int64.max), .double(1e300), "a", "ab", "", "b", "é", true, false]

    static func scalar(_ r: inout SplitMix64) -> JSON { scalars[r.below(scalars.count)] }

    static func document(id: String, _ r: inout SplitMix64) -> Document {
        var d = Document(id: id)
        d["k"] = r.chance(80) ? scalar(&r) : (r.chance(500) ? .null : .array([scalar(&r), scalar(&r)]))
        d["g"] = .string(["x", "y", "z"][r.below(3)])
        d["v"] = r.chance(700) ? .int(Int64(r.below(100)) - 20) : (r.chance(500) ? .double(Double(r.below(1000)) / 8) : "text")
        if r.chance(300) { d["tags"] = .array((0..<r.below(3)).map { _ in scalar(&r) }) }
        if r.chance(100) { d["o"] = ["p": scalar(&r)] }
        return d
    }

    /// Maps: a scalar key with a value, composite array keys, several emits per document.
    static let byK: DocumentIndex.Map = { doc, emit in
        if let k = doc["k"] { emit(k, doc["v"]) }
    }
    static let composite: DocumentIndex.Map = { doc, emit in
        if let g = doc["g"], let k = doc["k"] { emit([g, k], doc["v"]) }
        if let o = doc["o"] { emit(o, nil) }
    }
    static let tags: DocumentIndex.Map = { doc, emit in
        if case .array(let tags)? = doc["tags"] { for t in tags { emit([t, doc["g"] ?? nil, 1], doc["v"]) } }
    }
    /// A custom count, CouchDB style, to check rereduce.
    static let customCount: Reduction = .custom { _, values, rereduce in
        if rereduce { return .int(values.reduce(0) { $0 + ($1.int64Value ?? 0) }) }
        return .int(Int64(values.count))
    }
}

@Suite struct IndexQueryTests {
    static func randomQuery(_ r: inout SplitMix64, keys: [JSON]) -> IndexQuery {
        func key() -> JSON {
            if r.chance(150) { return .array([DocumentGenerator.scalar(&r)]) }
            if r.chance(150), !keys.isEmpty { return keys[r.below(keys.count)] }
            return DocumentGenerator.scalar(&r)
        }
        var q: IndexQuery
        switch r.below(4) {
        case 0: q = .all
        case 1: q = .keys((0..<r.below(4)).map { _ in key() })
        default:
            let start: JSON? = r.chance(250) ? Optional<JSON>.none : key()
            let end: JSON? = r.chance(250) ? Optional<JSON>.none : key()
            q = .range(start: start, end: end, inclusiveEnd: r.chance(500))
        }
        q.descending = r.chance(400)
        if r.chance(400) { q.limit = r.below(12) }
        if r.chance(300) { q.skip = r.below(8) }
        return q
    }

    @Test("every query option matches the brute-force reference", arguments: [1, 2, 3] as [UInt64])
    func queriesMatchReference(seed: UInt64) throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var r = SplitMix64(seed: seed)
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let definitions = [
            DocumentIndex(name: "byK", version: "1", map: DocumentGenerator.byK, reduce: .sum),
            DocumentIndex(name: "composite", version: "1", map: DocumentGenerator.composite, reduce: .stats),
            DocumentIndex(name: "tags", version: "1", map: DocumentGenerator.tags, reduce: .count),
            DocumentIndex(name: "custom", version: "1", map: DocumentGenerator.composite, reduce: DocumentGenerator.customCount),
        ]
        let db = try store.documents("q", indexes: definitions)
        var model: [String: Document] = [:]
        for round in 0..<6 {
            // Inserts, updates and deletes, some in batches.
            var batch: [Document] = []
            for _ in 0..<120 {
                let id = "doc\(r.below(300))"
                if r.chance(300) {
                    batch.append(DocumentGenerator.document(id: id, &r))
                    model[id] = batch.last
                    continue
                }
                // A direct write follows the batch so far.
                try db.save(contentsOf: batch)
                batch.removeAll()
                if r.chance(150), model[id] != nil {
                    try db.delete(id: id)
                    model[id] = nil
                } else {
                    model[id] = try db.save(DocumentGenerator.document(id: id, &r))
                }
            }
            try db.save(contentsOf: batch)
            for definition in definitions {
                let reference = try ReferenceIndex(documents: model, map: definition.map)
                let keys = reference.rows.map(\.key)
                #expect(try db.query(definition.name, IndexQuery(.all).with { $0.reduce = false }).rows.count == reference.rows.count)
                for _ in 0..<60 {
                    var q = Self.randomQuery(&r, keys: keys)
                    if r.chance(400) {
                        q.reduce = true
                        if r.chance(600) { q.groupLevel = [0, 1, 2, 3, Int.max][r.below(5)] }
                    } else if r.chance(500) {
                        q.reduce = false
                    } else {
                        q.reduce = nil
                    }
                    let expected = try reference.run(q, reduction: definition.reduce)
                    let actual = try db.query(definition.name, q)
                    #expect(actual.rows == expected, "round \(round), index \(definition.name), query \(q)")
                    #expect(actual.count == expected.count)
                }
            }
        }
    }

    @Test("a custom reduction over more rows than a chunk is re-reduced, grouped or not")
    func customRereduce() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let calls = Mutex<(plain: Int, rereduce: Int)>((0, 0))
        let db = try store.documents("r", indexes: [
            DocumentIndex(name: "n", version: "1", map: { doc, emit in emit([doc["g"] ?? nil, doc["i"] ?? nil], doc["i"]) },
                          reduce: .custom { keys, values, rereduce in
                              calls.withLock { if rereduce { $0.rereduce += 1 } else { $0.plain += 1 } }
                              if !rereduce { #expect(keys.count == values.count) }
                              return .int(values.reduce(0) { $0 + ($1.int64Value ?? 0) })
                          })
        ])
        var docs: [Document] = []
        for i in 0..<3000 { docs.append(Document(id: "d\(i)", fields: ["i": .int(Int64(i)), "g": .int(Int64(i % 2))])) }
        try db.save(contentsOf: docs)
        let total = try db.query("n", .all)
        #expect(total.rows == [QueryRow(key: .null, value: .int(Int64(2999 * 3000 / 2)), documentID: nil)])
        #expect(calls.withLock { $0.rereduce } >= 1)
        var grouped = IndexQuery.all
        grouped.groupLevel = 1
        let groups = try db.query("n", grouped)
        let evens = Int64((0..<3000).filter { $0 % 2 == 0 }.reduce(0, +))
        #expect(groups.rows == [QueryRow(key: [0], value: .int(evens), documentID: nil),
                                QueryRow(key: [1], value: .int(Int64(2999 * 3000 / 2) - evens), documentID: nil)])
    }

    @Test("mixed int and double keys collate by value; array keys element by element; CouchDB ranges")
    func collationThroughQueries() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("k", indexes: [
            DocumentIndex(name: "k", version: "1", map: { doc, emit in if let k = doc["k"] { emit(k, nil) } })
        ])
        let keys: [JSON] = [[:], ["a": 1], [1, "b"], [1], [], "b", "a", "A", 2.5, 2, 1.0, -1, true, false, ["x": nil], [1, 2], [2]]
        for (i, k) in keys.enumerated() { try db.save(Document(id: String(format: "%02d", i), fields: ["k": k])) }
        let rows = try db.query("k", .all).rows
        #expect(rows.map(\.key) == [false, true, -1, 1, 2, 2.5, "A", "a", "b", [], [1], [1, 2], [1, "b"], [2], [:], ["a": 1], ["x": nil]])
        // 1.0 was stored as a double and comes back as the int 1 (the same collation class).
        #expect(try db.query("k", .keys([1])).rows.map(\.documentID) == ["10"])
        #expect(try db.query("k", .range(start: 1, end: 2.5, inclusiveEnd: false)).rows.map(\.key) == [1, 2])
        // Descending: start is the upper key.
        var q = IndexQuery.range(start: "b", end: 2)
        q.descending = true
        #expect(try db.query("k", q).rows.map(\.key) == ["b", "a", "A", 2.5, 2])
        // The CouchDB prefix idiom: [1] ... [1, {}].
        #expect(try db.query("k", .range(start: [1], end: [1, [:]])).rows.map(\.key) == [[1], [1, 2], [1, "b"]])
        // Start beyond end: nothing.
        #expect(try db.query("k", .range(start: 3, end: 1)).rows.isEmpty)
        // Option errors.
        var bad = IndexQuery.all
        bad.limit = -1
        #expect(throws: StrataError.self) { try db.query("k", bad) }
        bad = .all
        bad.reduce = true
        #expect(throws: StrataError.self) { try db.query("k", bad) }
        bad = .all
        bad.groupLevel = 1
        #expect(throws: StrataError.self) { try db.query("k", bad) }
    }
}

extension IndexQuery {
    func with(_ change: (inout IndexQuery) -> Void) -> IndexQuery {
        var copy = self
        change(&copy)
        return copy
    }
}
