import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The document store: save/add/update/delete/fetch, metadata, attachments, the Codable helpers,
// atomic batches, the persistent change feed and errors.

/// A clock tests advance by hand.
final class TestClock: Sendable {
    private let now = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
    func read() -> Date { now.withLock { $0 } }
    func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
}

func documentStoreOptions(clock: TestClock? = nil) -> StoreOptions {
    var options = StoreOptions(durability: .buffered)
    options.memtableSize = 256 << 10
    if let clock { options.clock = { clock.read() } }
    let counter = Atomic<Int>(0)
    options.documentIDFactory = { "auto-\(counter.add(1, ordering: .relaxed).newValue)" }
    return options
}

@Suite struct DocumentStoreTests {
    @Test("save keeps createDate, sets lastChange, raises the revision; fetch returns what was saved")
    func saveAndFetch() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let clock = TestClock()
        let store = try Store.open(at: tmp.url, options: documentStoreOptions(clock: clock))
        defer { try? store.close() }
        let db = try store.documents("main")
        var doc: Document = ["InvoiceNumber": "A-1", "TotalCost": 1200, "Lines": [["sku": "X", "qty": 2]], "Paid": false]
        doc.metadata.type = "invoice"
        doc.metadata.channels = ["billing", "eu"]
        let first = try db.save(doc)
        #expect(first.metadata.id == "auto-1")
        #expect(first.metadata.revision == 1)
        #expect(first.metadata.createDate == clock.read())
        #expect(first.metadata.lastChange == clock.read())
        let created = clock.read()
        clock.advance(10)
        var changed = first
        changed["Paid"] = true
        changed["Lines"] = nil
        let second = try db.save(changed)
        #expect(second.metadata.revision == 2)
        #expect(second.metadata.createDate == created)
        #expect(second.metadata.lastChange == clock.read())
        let fetched = try #require(try db.document(id: "auto-1"))
        #expect(fetched == second)
        #expect(fetched["Paid"] == true)
        #expect(fetched["Lines"] == nil)
        #expect(fetched.metadata.type == "invoice")
        #expect(fetched.metadata.channels == ["billing", "eu"])
        #expect(try db.document(id: "nope") == nil)
        let many = try db.documents(ids: ["auto-1", "nope", "auto-1"])
        #expect(many.count == 1 && many["auto-1"] == second)
    }

    @Test("add conflicts on an existing id, update and delete need one; delete leaves a counting tombstone")
    func addUpdateDelete() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents()
        let a = try db.add(Document(id: "a", fields: ["n": 1]))
        #expect(a.metadata.revision == 1)
        #expect(throws: StrataError.self) { try db.add(Document(id: "a", fields: ["n": 2])) }
        do {
            try db.add(Document(id: "a"))
            Issue.record("add of an existing id did not throw")
        } catch StrataError.conflict(let message) {
            #expect(message.contains("\"a\""))
        }
        do {
            try db.update(Document(id: "b"))
            Issue.record("update of a missing id did not throw")
        } catch StrataError.notFound(.document, let id, let message) {
            #expect(id == "b")
            #expect(message.contains("\"b\""))
        }
        do {
            try db.delete(id: "b")
            Issue.record("delete of a missing id did not throw")
        } catch StrataError.notFound {}
        #expect(try db.update(Document(id: "a", fields: ["n": 3])).metadata.revision == 2)
        try db.delete(id: "a")
        #expect(try db.document(id: "a") == nil)
        #expect(throws: StrataError.notFound(kind: .document, name: "a", reason: "document \"a\" in database \"default\"")) { try db.delete(id: "a") }
        #expect(throws: StrataError.self) { try db.update(Document(id: "a")) }
        // Saved again, the id continues from the tombstone's revision.
        let again = try db.add(Document(id: "a", fields: ["n": 4]))
        #expect(again.metadata.revision == 4)
        #expect(try db.document(id: "a")?["n"] == 4)
    }

    @Test("attachments are stored, fetched, kept when unchanged, removed when dropped or deleted")
    func attachments() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents()
        var doc = Document(id: "d", fields: ["title": "scan"])
        let big = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        doc.attachments["scan.pdf"] = Attachment(data: big, contentType: "application/pdf")
        doc.attachments["note.txt"] = Attachment(data: Data("hello".utf8), contentType: "text/plain")
        try db.save(doc)
        let fetched = try #require(try db.document(id: "d"))
        #expect(fetched.attachments == doc.attachments)
        #expect(fetched.attachments["scan.pdf"]?.length == 200_000)
        var changed = fetched
        changed.attachments["note.txt"] = nil
        changed["title"] = "scan 2"
        try db.save(changed)
        let after = try #require(try db.document(id: "d"))
        #expect(after.attachments.keys.sorted() == ["scan.pdf"])
        #expect(after.attachments["scan.pdf"]?.data == big)
        let prefix = DocumentLayout.attachmentPrefix(db.state.id, "d")
        #expect(try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix)).countAll() == 1)
        try db.delete(id: "d")
        #expect(try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix)).countAll() == 0)
    }

    @Test("documents, indexes and the change feed survive reopen; sequences continue")
    func persistence() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("p")
            for i in 0..<50 { try db.save(Document(id: "d\(i)", fields: ["i": .int(Int64(i))])) }
            try db.delete(id: "d3")
            try db.save(Document(id: "d4", fields: ["i": 400]))
            try store.close()
        }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("p")
        #expect(try db.document(id: "d7")?["i"] == 7)
        #expect(try db.document(id: "d4")?["i"] == 400)
        #expect(try db.document(id: "d3") == nil)
        // One entry per document, its latest change, in sequence order.
        let (all, last) = try db.changes(since: 0)
        #expect(all.count == 50)
        #expect(last == 52)
        #expect(all.map(\.sequence) == all.map(\.sequence).sorted())
        let d4 = try #require(try db.document(id: "d4")?.metadata.revisionID)
        #expect(all.last == DocumentChange(id: "d4", isDeletion: false, revisionID: d4, sequence: 52))
        #expect(d4.generation == 2 && all.last?.revision == 2)
        let d3 = try #require(all.first { $0.id == "d3" })
        #expect(d3.isDeletion && d3.revisionID.generation == 2 && d3.revision == 2 && d3.sequence == 51)
        let saved = try db.save(Document(id: "new", fields: [:]))
        let (tail, tailLast) = try db.changes(since: last)
        #expect(tail == [DocumentChange(id: "new", isDeletion: false, revisionID: saved.metadata.revisionID!, sequence: 53)])
        #expect(tailLast == 53)
        let (none, noneLast) = try db.changes(since: 53)
        #expect(none.isEmpty && noneLast == 53)
        let (page, pageLast) = try db.changes(since: 0, limit: 10)
        #expect(page.count == 10 && pageLast == page[9].sequence)
        #expect(throws: StrataError.self) { try db.changes(since: 0, limit: -1) }
    }

    @Test("save(contentsOf:) is one atomic batch; a failing map writes nothing")
    func atomicBatch() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        struct MapFailure: Error {}
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("b", indexes: [
            DocumentIndex(name: "byN", version: "1", map: { doc, emit in
                if doc["fail"] != nil { throw MapFailure() }
                if let n = doc["n"] { emit(n, nil) }
            }),
            DocumentIndex(name: "bad", version: "1", map: { doc, emit in
                if doc["nan"] != nil { emit(.double(.nan), nil) }
            }),
        ])
        let saved = try db.save(contentsOf: [Document(id: "x", fields: ["n": 1]), Document(id: "y", fields: ["n": 2]),
                                             Document(id: "x", fields: ["n": 3])])
        #expect(saved.map(\.metadata.revision) == [1, 1, 2])
        #expect(try db.document(id: "x")?["n"] == 3)
        #expect(try db.query("byN", .all).rows.map(\.key) == [2, 3])
        do {
            try db.save(contentsOf: [Document(id: "z", fields: ["n": 5]), Document(id: "w", fields: ["fail": true])])
            Issue.record("a throwing map did not fail the batch")
        } catch StrataError.invalidArgument(_, let message) {
            #expect(message.contains("byN") && message.contains("\"w\""))
        }
        #expect(try db.document(id: "z") == nil)
        #expect(throws: StrataError.self) { try db.save(Document(id: "q", fields: ["nan": true])) }
        #expect(try db.document(id: "q") == nil)
        #expect(try db.query("byN", .all).rows.map(\.key) == [2, 3])
        #expect(try db.changes(since: 0).changes.count == 2)
    }

    @Test("Codable helpers, JSON text, ids and names: errors are typed")
    func codableAndErrors() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        struct Invoice: Codable, Equatable { var number: String; var total: Int; var due: Date }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("c")
        let invoice = Invoice(number: "A-1", total: 1200, due: Date(timeIntervalSinceReferenceDate: 800_000_000.25))
        try db.save(invoice, id: "A-1")
        #expect(try db.document(id: "A-1", as: Invoice.self) == invoice)
        #expect(try db.document(id: "none", as: Invoice.self) == nil)
        #expect(throws: StrataError.self) { try db.save([1, 2] as [Int], id: "arr") }
        let parsed = try Document(json: #"{"a": 1, "b": [true, null], "c": {"d": "e"}}"#)
        #expect(parsed["a"] == 1 && parsed["c"]?["d"] == "e")
        #expect(parsed.metadata.id == "")
        let roundTrip = try Document(json: parsed.jsonData())
        #expect(roundTrip.fields == parsed.fields)
        #expect(throws: StrataError.self) { try Document(json: "[1, 2]") }
        #expect(throws: StrataError.self) { try Document(json: "{1: 2}") }
        #expect(throws: StrataError.self) { try Document(json: Data("{\"a\": ".utf8)) }
        #expect(throws: StrataError.notFound(kind: .index, name: "missing", reason: "index \"missing\" of document database \"c\"")) {
            try db.query("missing", .all)
        }
        #expect(throws: StrataError.self) { try db.observe("missing", .all) }
        #expect(throws: StrataError.self) { try store.documents("") }
        #expect(throws: StrataError.self) { try store.documents("a\u{0}b") }
        #expect(throws: StrataError.self) {
            try store.documents("c", indexes: [DocumentIndex(name: "i", version: "1", map: { _, _ in }),
                                               DocumentIndex(name: "i", version: "1", map: { _, _ in })])
        }
        // Iteration and literals.
        let doc: Document = ["x": 1, "y": "z"]
        #expect(Dictionary(uniqueKeysWithValues: doc.map { ($0.key, $0.value) }) == ["x": 1, "y": "z"])
        try store.close()
        #expect(throws: StrataError.closed) { try db.save(Document(id: "late")) }
        #expect(throws: StrataError.closed) { try db.document(id: "A-1") }
    }
}

extension MergedCursor {
    /// The number of records left (test helper).
    func countAll() throws -> Int {
        var n = 0
        while try next() { n += 1 }
        return n
    }
}

@Suite struct DocumentFormatTests {
    @Test("the worked example of FORMAT.md 16.2 encodes as written")
    func workedExample() throws {
        let key = DocumentLayout.documentKey(1, "A-1")
        #expect(TupleKey.hex(key) == "x'1104110102412d3100'")
        let record = DocumentRecord(isDeleted: false, revision: 1, changeSequence: 1,
                                    createDate: Date(timeIntervalSinceReferenceDate: 0),
                                    lastChange: Date(timeIntervalSinceReferenceDate: 0),
                                    type: nil, channels: [], attachments: [])
        var value: [UInt8] = []
        record.appendHeader(to: &value)
        JSON.object(["n": 2]).appendBinary(to: &value)
        #expect(TupleKey.hex(value) == "x'000101" + String(repeating: "00", count: 17) + "080106010001" + "6e0304'")
        let decoded = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: "A-1") }
        #expect(decoded.revision == 1 && decoded.bodyOffset == 20 && !decoded.isDeleted)
        // Damaged records are typed errors.
        for cut in [0, 1, 5, 19] {
            #expect(throws: StrataError.self) { try Array(value[..<cut]).withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: "A-1") } }
        }
        #expect(throws: StrataError.self) { try [0x80, 1, 1].withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: "x") } }
    }
}

@Suite struct DocumentInspectorTests {
    @Test("the inspector lists databases, indexes, documents and rows from the files")
    func inspect() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("inv", indexes: [
                DocumentIndex(name: "cost", version: "7", map: { doc, emit in if let c = doc["c"] { emit(c, doc["n"]) } }, reduce: .sum)
            ])
            var a = Document(id: "a", fields: ["c": 5, "n": "A"])
            a.attachments["x"] = Attachment(data: Data([1, 2, 3]), contentType: "application/octet-stream")
            try db.save(a)
            try db.save(Document(id: "b", fields: ["c": 2]))
            try db.save(Document(id: "c", fields: ["c": 9]))
            try db.delete(id: "c")
            try store.close()
        }
        let all = try DocumentInspector.databases(ofStoreAt: tmp.path)
        #expect(all.count == 1)
        let s = try #require(all.first)
        #expect(s.name == "inv" && s.documents == 2 && s.tombstones == 1 && s.attachments == 1 && s.attachmentBytes == 3)
        #expect(s.changes == 3 && s.lastSequence == 4)
        #expect(s.indexes == [DocumentIndexSummary(name: "cost", id: s.indexes[0].id, version: "7", state: "ready", reduction: "sum", collation: "raw", rows: 2)])
        let docs = try DocumentInspector.dump(database: "inv", ofStoreAt: tmp.path)
        #expect(docs.documents.map(\.id) == ["a", "b", "c"])
        #expect(docs.documents[0].fields == ["c": 5, "n": "A"] && docs.documents[0].attachments.count == 1)
        #expect(docs.documents[2].deleted && docs.documents[2].fields == nil)
        let rows = try DocumentInspector.dump(database: "inv", ofStoreAt: tmp.path, index: "cost")
        #expect(rows.rows == [IndexRowDump(key: 2, documentID: "b", value: nil), IndexRowDump(key: 5, documentID: "a", value: "A")])
        #expect(throws: StrataError.self) { try DocumentInspector.dump(database: "nope", ofStoreAt: tmp.path) }
        #expect(throws: StrataError.self) { try DocumentInspector.dump(database: "inv", ofStoreAt: tmp.path, index: "nope") }
    }
}
