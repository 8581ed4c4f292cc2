import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Index keys: a JSON null key is a row (a nil key emits nothing), `.unicode` collation against
// the CouchDB documentation's own ordering table, and how a collation is stored with its index.

/// Counts map calls across index definitions.
final class MapCalls: Sendable {
    let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
}

@Suite("Index keys: null and Unicode collation")
struct IndexCollationTests {
    /// An index over `doc["k"]` as emitted (`nil` when the document has no `k`).
    static func keyIndex(_ collation: DocumentIndex.Collation, version: String = "1", reduce: Reduction? = nil,
                         calls: MapCalls? = nil) -> DocumentIndex {
        DocumentIndex(name: "k", version: version, map: { doc, emit in
            calls?.count.withLock { $0 += 1 }
            emit(doc["k"], doc["v"])
        }, reduce: reduce, collation: collation)
    }

    /// Saves one document per key, ids "00", "01", … in the order given.
    static func save(_ keys: [JSON], to db: DocumentDatabase) throws {
        try db.save(contentsOf: keys.enumerated().map { i, k in
            Document(id: String(format: "%02d", i), fields: ["k": k, "v": .int(Int64(i))])
        })
    }

    @Test("a null key is a row, first in order; a missing field emits nothing")
    func nullKeyIsARow() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("n", indexes: [Self.keyIndex(.raw)])
        try db.save(Document(id: "null", fields: ["k": .null]))
        try db.save(Document(id: "none", fields: ["other": 1]))
        try db.save(Document(id: "one", fields: ["k": 1]))
        try db.save(Document(id: "false", fields: ["k": false]))
        try db.save(Document(id: "nested", fields: ["k": [.null, 1]]))
        #expect(try db.query("k", .all).rows.map(\.documentID) == ["null", "false", "one", "nested"])
        #expect(try db.query("k", .all).rows.first?.key == .null)
        #expect(try db.query("k", .keys([.null])).rows.map(\.documentID) == ["null"])
        #expect(try db.query("k", .range(start: .null)).rows.map(\.documentID) == ["null", "false", "one", "nested"])
        #expect(try db.query("k", .range(start: .null, end: .null)).rows.map(\.documentID) == ["null"])
        #expect(try db.query("k", .range(start: .null, end: false, inclusiveEnd: false)).rows.map(\.documentID) == ["null"])
        var descending = IndexQuery.range(start: false)
        descending.descending = true
        #expect(try db.query("k", descending).rows.map(\.documentID) == ["false", "null"])
        // An explicit `emit(nil, …)` emits nothing; `emit(.null, …)` a row; both in one map.
        let both = try store.documents("m", indexes: [
            DocumentIndex(name: "m", version: "1", map: { _, emit in
                emit(nil, 1)
                emit(.null, 2)
            }, reduce: .count)
        ])
        try both.save(Document(id: "a", fields: [:]))
        var plain = IndexQuery.all
        plain.reduce = false
        #expect(try both.query("m", plain).rows == [QueryRow(key: .null, value: 2, documentID: "a")])
        #expect(try both.query("m", .all).rows == [QueryRow(key: .null, value: 1, documentID: nil)])
        // Deleting the document removes its null row.
        try db.delete(id: "null")
        #expect(try db.query("k", .keys([.null])).rows.isEmpty)
    }

    @Test("whole-number doubles in keys come back as integers, equal to them in collation and ==")
    func wholeNumberDoubles() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("d", indexes: [Self.keyIndex(.unicode)])
        try db.save(Document(id: "a", fields: ["k": 1.0, "v": 1.0]))
        let row = try #require(try db.query("k", .all).rows.first)
        guard case .int(1) = row.key else { Issue.record("key \(row.key) is not the int 1"); return }
        #expect(row.key == .double(1.0) && JSON.collate(row.key, .double(1.0)) == 0)
        guard case .double(1.0)? = row.value else { Issue.record("value \(String(describing: row.value))"); return }
        #expect(try db.query("k", .keys([1])).rows.count == 1)
    }

    /// The CouchDB documentation's collation specification ("Views Collation", based on
    /// view_collation.js), in its order. Left out: `{b:2, a:1}`, which the table places after
    /// `{b:2}` because CouchDB keeps member order; JSON objects here have no member order and
    /// collate by members sorted by name (so `{b:2, a:1}` is `{a:1, b:2}`, between `{a:1}` and
    /// `{a:2}`).
    static let couchDBTable: [JSON] = [
        .null, false, true,
        1, 2, 3.0, 4,
        "a", "A", "aa", "b", "B", "ba", "bb",
        ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
        ["a": 1], ["a": 2], ["b": 1], ["b": 2], ["b": 2, "c": 2],
    ]

    @Test("a .unicode index orders keys as the CouchDB collation specification does")
    func couchDBCollationTable() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("u", indexes: [Self.keyIndex(.unicode)])
        // Saved in a scrambled order.
        var r = SplitMix64(seed: 16)
        var scrambled = Self.couchDBTable
        scrambled.shuffle(using: &r)
        try Self.save(scrambled, to: db)
        let keys = try db.query("k", .all).rows.map(\.key)
        #expect(keys == Self.couchDBTable)
        // The same order from the encoding alone, and descending reverses it.
        let sorted = Self.couchDBTable.shuffled(using: &r).sorted {
            (try! $0.unicodeCollationKey()).lexicographicallyPrecedes(try! $1.unicodeCollationKey())
        }
        #expect(sorted == Self.couchDBTable)
        var descending = IndexQuery.all
        descending.descending = true
        #expect(try db.query("k", descending).rows.map(\.key) == Self.couchDBTable.reversed())
        // A raw index orders the strings by code point instead.
        let raw = try store.documents("r", indexes: [Self.keyIndex(.raw)])
        try Self.save(scrambled, to: raw)
        let strings = try raw.query("k", .range(start: "", end: [])).rows.map(\.key)
        #expect(strings == ["A", "B", "a", "aa", "b", "ba", "bb"])
    }

    @Test("the documentation's collation sequence of the printable ASCII characters")
    func asciiSequence() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("a", indexes: [Self.keyIndex(.unicode)])
        try Self.save((32...126).map { JSON.string(String(UnicodeScalar(UInt8($0)))) }, to: db)
        let order = try db.query("k", .all).rows.compactMap(\.key.stringValue)
        #expect(order.count == 95)
        // CouchDB's documentation shows this sequence (from an ICU of its time). Since then the
        // UCA has moved "`" and "^" from before "_" to between "%" and "+"; the space sorts first.
        let documented = #"` ^ _ - , ; : ! ? . ' " ( ) [ ] { } @ * / \ & # % + < = > | ~ $ 0 1 2 3 4 5 6 7 8 9 "#
            + "a A b B c C d D e E f F g G h H i I j J k K l L m M n N o O p P q Q r R s S t T u U v V w W x X y Y z Z"
        let moved: Set<String> = ["`", "^", " "]
        let expected = documented.split(separator: " ").map(String.init).filter { !moved.contains($0) }
        #expect(order.filter { !moved.contains($0) } == expected)
        #expect(order.first == " ")
        // The documentation's warning about ranges: "abc" < "Abc" < "ABC" < "abc1" < "AbcZZZZZ".
        let warning: [JSON] = ["abc", "Abc", "ABC", "abc1", "AbcZZZZZ"]
        #expect(warning.map { try! $0.unicodeCollationKey() } == warning.map { try! $0.unicodeCollationKey() }.sorted {
            $0.lexicographicallyPrecedes($1)
        })
    }

    @Test("queries, keys, ranges, groupLevel and reduce of a .unicode index work in UCA order")
    func unicodeQueries() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("q", indexes: [Self.keyIndex(.unicode, reduce: .count)])
        // "\u{e9}" and "e\u{301}" are one string to the UCA (canonically equivalent) but two
        // different JSON strings; both rows keep the key as emitted, and between them the rows
        // order by the keys' code points (UTF-8 65 cc 81 before c3 a9), then by document.
        let keys: [JSON] = ["b", "B", "a", "A", "aa", "\u{e9}", "e\u{301}", "e", "E", ["a", 1], ["A", 2], ["a", 3], ["b", 1]]
        try Self.save(keys, to: db)
        var plain = IndexQuery.all
        plain.reduce = false
        #expect(try db.query("k", plain).rows.map(\.key) == ["a", "A", "aa", "b", "B", "e", "E", "e\u{301}", "\u{e9}",
                                                             ["a", 1], ["a", 3], ["A", 2], ["b", 1]])
        var range = IndexQuery.range(start: "a", end: "b")
        range.reduce = false
        #expect(try db.query("k", range).rows.map(\.key) == ["a", "A", "aa", "b"])
        range = .range(start: "A", end: "B", inclusiveEnd: false)
        range.reduce = false
        #expect(try db.query("k", range).rows.map(\.key) == ["A", "aa", "b"])
        range = .range(start: "B", end: "a")
        range.reduce = false
        range.descending = true
        #expect(try db.query("k", range).rows.map(\.key) == ["B", "b", "aa", "A", "a"])
        var exact = IndexQuery.keys(["A", "\u{e9}"])
        exact.reduce = false
        #expect(try db.query("k", exact).rows.map(\.documentID) == ["03", "06", "05"])
        // The array prefix idiom, with UCA order inside the array.
        range = .range(start: ["a"], end: ["a", [:]])
        range.reduce = false
        #expect(try db.query("k", range).rows.map(\.key) == [["a", 1], ["a", 3]])
        // Reduce and groups: UCA-equal strings are one group, shown as the first row's key.
        var grouped = IndexQuery.all
        grouped.groupLevel = 1
        #expect(try db.query("k", grouped).rows == [
            QueryRow(key: "a", value: 1, documentID: nil), QueryRow(key: "A", value: 1, documentID: nil),
            QueryRow(key: "aa", value: 1, documentID: nil), QueryRow(key: "b", value: 1, documentID: nil),
            QueryRow(key: "B", value: 1, documentID: nil), QueryRow(key: "e", value: 1, documentID: nil),
            QueryRow(key: "E", value: 1, documentID: nil), QueryRow(key: "e\u{301}", value: 2, documentID: nil),
            QueryRow(key: ["a"], value: 2, documentID: nil), QueryRow(key: ["A"], value: 1, documentID: nil),
            QueryRow(key: ["b"], value: 1, documentID: nil),
        ])
        #expect(try db.query("k", .all).rows == [QueryRow(key: .null, value: .int(Int64(keys.count)), documentID: nil)])
        // A custom reduce sees the keys as emitted.
        let seen = Mutex<[JSON]>([])
        let custom = try store.documents("c", indexes: [
            DocumentIndex(name: "k", version: "1", map: { doc, emit in emit(doc["k"], nil) },
                          reduce: .custom { keys, _, _ in seen.withLock { $0 += keys }; return .null },
                          collation: .unicode)
        ])
        try Self.save(["B", "a", "e\u{301}"], to: custom)
        _ = try custom.query("k", .all)
        #expect(seen.withLock { $0 } == ["a", "B", "e\u{301}"])
    }

    @Test("the collation is stored with the index: reopen keeps it, a change of collation rebuilds")
    func collationIsStored() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let calls = MapCalls()
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("s", indexes: [Self.keyIndex(.unicode, calls: calls)])
            try Self.save(["b", "B", "a"], to: db)
            try store.close()
        }
        let afterBuild = calls.value
        let summary = try #require(try DocumentInspector.databases(ofStoreAt: tmp.url.path).first?.indexes.first)
        #expect(summary.collation == "unicode" && summary.rows == 3)
        let dump = try DocumentInspector.dump(database: "s", ofStoreAt: tmp.url.path, index: "k")
        #expect(dump.rows.map(\.key) == ["a", "b", "B"])
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("s", indexes: [Self.keyIndex(.unicode, calls: calls)])
            #expect(calls.value == afterBuild, "reopened with the same collation: not rebuilt")
            #expect(try db.query("k", .all).rows.map(\.key) == ["a", "b", "B"])
            // The same version with another collation rebuilds the rows in that order.
            let raw = try store.documents("s", indexes: [Self.keyIndex(.raw, calls: calls)])
            #expect(calls.value == afterBuild + 3)
            #expect(try raw.query("k", .all).rows.map(\.key) == ["B", "a", "b"])
            try store.close()
        }
        #expect(try DocumentInspector.databases(ofStoreAt: tmp.url.path).first?.indexes.first?.collation == "raw")
    }

    @Test("the catalog payload: layout version 2 with the collation, and for .unicode the ICU collator version")
    func catalogPayload() throws {
        let raw = DocumentLayout.indexPayload(version: "7", state: DocumentLayout.indexReady, reduction: .sum)
        #expect(raw == [2, 1, 1, 0x37, 2, 0, 0])
        let payload = DocumentLayout.indexPayload(version: "7", state: DocumentLayout.indexReady, reduction: .sum,
                                                  collation: .unicode, collatorVersion: [9, 8, 7, 6])
        #expect(payload == [2, 1, 1, 0x37, 2, 1, 9, 8, 7, 6, 0])
        let decoded = try DocumentLayout.decodeIndexPayload(payload, name: "x\u{0}k")
        #expect(decoded.collation == .unicode && decoded.collatorVersion == [9, 8, 7, 6] && decoded.version == "7")
        // Another ICU (another collator version) does not match: the index is rebuilt.
        #expect(!DocumentLayout.rowsAreCurrent(decoded, .unicode))
        let current = try DocumentLayout.decodeIndexPayload(
            DocumentLayout.indexPayload(version: "7", state: 1, reduction: nil, collation: .unicode), name: "x\u{0}k")
        #expect(current.collatorVersion == UnicodeCollation.version)
        #expect(DocumentLayout.rowsAreCurrent(current, .unicode) && !DocumentLayout.rowsAreCurrent(current, .raw))
        #expect(DocumentLayout.rowsAreCurrent(try DocumentLayout.decodeIndexPayload(raw, name: "x\u{0}k"), .raw))
        // Layout 1 (written when null keys were skipped) still decodes, as raw, but is not current.
        let old = try DocumentLayout.decodeIndexPayload([1, 1, 1, 0x37, 2], name: "x\u{0}k")
        #expect(old.layout == 1 && old.collation == .raw && old.version == "7")
        #expect(!DocumentLayout.rowsAreCurrent(old, .raw))
        // Damaged payloads are refused, never trusted.
        for bad in [[2, 1, 1, 0x37, 2], [2, 1, 1, 0x37, 2, 0], [2, 1, 1, 0x37, 2, 2, 9, 8, 7, 6, 0],
                    [2, 1, 1, 0x37, 2, 1, 9, 8], [2, 1, 1, 0x37, 2, 0, 0, 0], [1, 1, 1, 0x37, 2, 0],
                    [3, 1, 1, 0x37, 2, 0, 0]] as [[UInt8]] {
            #expect(throws: StrataError.self) { try DocumentLayout.decodeIndexPayload(bad, name: "x\u{0}k") }
        }
    }

    @Test("an index stored by a build that skipped null keys is rebuilt once, and then has its null rows")
    func layoutOneIsRebuilt() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let calls = MapCalls()
        var store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("o", indexes: [Self.keyIndex(.raw, calls: calls)])
        try Self.save([.null, 1], to: db)
        // Make the entry look as an older build left it: layout 1, and no null row.
        let catalogName = DocumentLayout.indexCatalogName(database: "o", index: "k")
        let snapshot = try store.engine.snapshot()
        let entry = try #require(try Catalog.entries(kind: .documentIndex, in: snapshot).first { $0.name == catalogName }?.entry)
        var batch = WriteBatch()
        Catalog.put(CatalogEntry(id: entry.id, payload: [1, 1, 1, 0x31, 0]), kind: .documentIndex, name: catalogName, into: &batch)
        let prefix = DocumentLayout.indexPrefix(entry.id)
        batch.deleteRangeRaw(prefix + [JSONCollationType.null], prefix + [JSONCollationType.false])
        try store.engine.write(batch)
        #expect(try db.query("k", .all).rows.map(\.documentID) == ["01"])
        // An open database keeps its attached index in memory: the older entry is met at the next open.
        try store.close()
        store = try Store.open(at: tmp.url, options: documentStoreOptions())
        let before = calls.value
        let reopened = try store.documents("o", indexes: [Self.keyIndex(.raw, calls: calls)])
        #expect(calls.value == before + 2, "rebuilt from both documents")
        #expect(try reopened.query("k", .all).rows.map(\.documentID) == ["00", "01"])
    }

    @Test("a live query of a .unicode index sees the rows a commit touches")
    func unicodeLiveQuery() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try await store.documents("l", indexes: [Self.keyIndex(.unicode)])
        try await db.save(Document(id: "1", fields: ["k": "b"]))
        var iterator = try db.observe("k", .range(start: "a", end: "b")).makeAsyncIterator()
        #expect(try await iterator.next()?.rows.map(\.key) == ["b"])
        try await db.save(Document(id: "2", fields: ["k": "A"]))
        #expect(try await iterator.next()?.rows.map(\.key) == ["A", "b"])
    }

    @Test("FORMAT.md §16.5's unicode row key, byte for byte")
    func unicodeRowKeyExample() throws {
        let index = ActiveIndex(definition: Self.keyIndex(.unicode), id: 9)
        let rows = try IndexMaintenance.rows(of: Document(id: "d", fields: ["k": "a"]), index: index)
        var sortKey: [UInt8] = []
        try UnicodeCollation.appendSortKey("a", to: &sortKey)
        #expect(rows.map(\.key) == [[0x11, 0x05, 0x11, 0x09, 0x40] + sortKey + [0x00, 0x40, 0x61, 0x00, 0x02, 0x64, 0x00, 0x10]])
        // The example's sort key is that of the ICU Swift 6.3 ships (collator version 153.128.0.0,
        // UCA 16); other ICU versions may differ.
        if UnicodeCollation.version == [153, 128, 0, 0] { #expect(sortKey == [0x2b, 0x01, 0x05, 0x01, 0x05]) }
        // The readable key after the sort key decodes back; the row decodes as emitted.
        let row = try rows[0].key.withUnsafeBytes { k in
            try rows[0].value.withUnsafeBytes { v in try IndexReader.decodeRow(key: k, value: v, prefixLength: 4, collation: .unicode) }
        }
        #expect(row == QueryRow(key: "a", value: nil, documentID: "d"))
    }

    @Test("randomized: a .unicode index against brute force over UCA sort keys", arguments: 0..<3)
    func unicodeRandomized(seed: Int) throws {
        var r = SplitMix64(seed: 0x1CA0 + UInt64(seed))
        let strings: [JSON] = ["a", "A", "\u{e1}", "\u{c1}", "aa", "Ab", "b", "B", "e\u{301}", "\u{e9}", "E", "\u{df}",
                               "ss", "SS", "", " ", "-a", "a-", "1", "10", "9", "\u{3c9}", "\u{3a9}"]
        func scalar() -> JSON {
            switch r.below(10) {
            case 0: return .null
            case 1: return .int(Int64(r.below(3)))
            case 2: return .double(1.0)
            default: return strings[r.below(strings.count)]
            }
        }
        func key() -> JSON? {
            switch r.below(12) {
            case 0: return nil
            case 1, 2, 3: return .array((0..<(1 + r.below(3))).map { _ in scalar() })
            case 4: return .object([strings[r.below(strings.count)].stringValue ?? "k": scalar()])
            default: return scalar()
            }
        }
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("r", indexes: [
            DocumentIndex(name: "k", version: "1", map: { doc, emit in
                if case .array(let keys)? = doc["keys"] { for k in keys { emit(k["k"], doc["v"]) } }
            }, reduce: .count, collation: .unicode)
        ])
        struct Row { var key: JSON; var u: [UInt8]; var raw: [UInt8]; var id: String; var emit: Int }
        var documents: [String: [JSON?]] = [:]
        for step in 0..<300 {
            let id = "d\(r.below(120))"
            if r.below(10) == 0, documents[id] != nil {
                try db.delete(id: id)
                documents[id] = nil
                continue
            }
            let keys = (0..<r.below(4)).map { _ in key() }
            // Each emitted key is wrapped in an object so that nil (no "k") reaches the map as nil.
            let wrapped: [JSON] = keys.map { k in k.map { ["k": $0] } ?? [:] }
            try db.save(Document(id: id, fields: ["keys": .array(wrapped), "v": .int(Int64(step))]))
            documents[id] = keys
        }
        var rows: [Row] = []
        for (id, keys) in documents {
            var n = 0
            for case let k? in keys {
                rows.append(Row(key: k, u: try k.unicodeCollationKey(), raw: k.collationKey, id: id, emit: n))
                n += 1
            }
        }
        func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }
        rows.sort { a, b in
            if a.u != b.u { return less(a.u, b.u) }
            if a.raw != b.raw { return less(a.raw, b.raw) }
            if a.id != b.id { return less(Array(a.id.utf8), Array(b.id.utf8)) }
            return a.emit < b.emit
        }
        let all = try db.query("k", { var q = IndexQuery.all; q.reduce = false; return q }()).rows
        #expect(all.map(\.documentID) == rows.map(\.id))
        #expect(all.map(\.key) == rows.map(\.key))
        for _ in 0..<300 {
            let pick = { () -> JSON in rows.isEmpty || r.below(4) == 0 ? (key() ?? .null) : rows[r.below(rows.count)].key }
            var q: IndexQuery
            var selected: [Row]
            let descending = r.below(3) == 0
            switch r.below(3) {
            case 0:
                q = .all
                selected = rows
            case 1:
                let keys = (0..<(1 + r.below(3))).map { _ in pick() }
                q = .keys(keys)
                selected = []
                for k in keys {
                    let u = try k.unicodeCollationKey()
                    let matching = rows.filter { $0.u == u }
                    selected += descending ? matching.reversed() : matching
                }
            default:
                let start: JSON? = r.below(5) == 0 ? nil : pick()
                let end: JSON? = r.below(5) == 0 ? nil : pick()
                let inclusive = r.below(3) != 0
                q = .range(start: start, end: end, inclusiveEnd: inclusive)
                let su = try start.map { try $0.unicodeCollationKey() }, eu = try end.map { try $0.unicodeCollationKey() }
                selected = rows.filter { row in
                    if !descending {
                        return (su.map { !less(row.u, $0) } ?? true)
                            && (eu.map { inclusive ? !less($0, row.u) : less(row.u, $0) } ?? true)
                    }
                    return (su.map { !less($0, row.u) } ?? true)
                        && (eu.map { inclusive ? !less(row.u, $0) : less($0, row.u) } ?? true)
                }
            }
            if descending, case .keys = q.selection {} else if descending { selected.reverse() }
            q.descending = descending
            q.skip = r.below(4) == 0 ? r.below(5) : 0
            q.limit = r.below(4) == 0 ? r.below(8) : nil
            var expected: [QueryRow]
            if r.below(2) == 0 {
                q.reduce = false
                expected = selected.map { QueryRow(key: $0.key, value: .int(0), documentID: $0.id) }
            } else {
                let level = [nil, 0, 1, 2, Int.max][r.below(5)]
                q.groupLevel = level
                var groups: [(key: JSON, u: [UInt8], count: Int64)] = []
                for row in selected {
                    var g = JSON.null
                    if let level, level > 0 {
                        if case .array(let e) = row.key, e.count > level { g = .array(Array(e.prefix(level))) } else { g = row.key }
                    }
                    let gu = try g.unicodeCollationKey()
                    if let last = groups.last, last.u == gu { groups[groups.count - 1].count += 1 } else { groups.append((g, gu, 1)) }
                }
                expected = groups.map { QueryRow(key: $0.key, value: .int($0.count), documentID: nil) }
            }
            expected = Array(expected.dropFirst(q.skip).prefix(q.limit ?? .max))
            let got = try db.query("k", q).rows
            if q.reduce == false {
                #expect(got.map(\.key) == expected.map(\.key) && got.map(\.documentID) == expected.map(\.documentID), "\(q)")
            } else {
                #expect(got == expected, "\(q)")
            }
        }
    }
}
