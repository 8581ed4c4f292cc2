import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The document id of an index row is read in place when it is ASCII, and through the tuple
// decoder otherwise (non-ASCII, a 0x00 byte stored escaped): every kind comes back exact, in
// memtable and in segments.

@Suite struct IndexDocumentIDTests {
    private static let ids = ["plain", "ünïcödé", "with\u{0}zero", "\u{0}", "emoji 🙂", "tab\tand ~ \u{7F}",
                              "a longer ASCII id than a small string holds"]

    @Test(arguments: [false, true])
    func idsComeBackExact(settled: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try store.documents("ids", indexes: [
            DocumentIndex(name: "n", version: "1", map: { doc, emit in if let n = doc["n"] { emit(n, nil) } }),
        ])
        for (i, id) in Self.ids.enumerated() {
            try db.save(Document(id: id, fields: ["n": .int(Int64(i))]))
        }
        if settled { try store.compact() }
        let rows = try db.query("n", .all).rows
        #expect(rows.map(\.documentID) == Self.ids)
        #expect(rows.map(\.key) == Self.ids.indices.map { .int(Int64($0)) })
        var q = IndexQuery.all
        q.descending = true
        let descending = try db.query("n", q).rows
        #expect(descending.map(\.documentID) == Self.ids.reversed())
    }
}
