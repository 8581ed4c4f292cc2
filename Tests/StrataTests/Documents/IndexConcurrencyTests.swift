import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Application code (maps, reduces) never runs under a lock of its database: maps and reduces may
// read and write the database; builds let writes go on; indexes not named at open are kept and
// caught up from the change feed. Operations that could deadlock run on a thread with a 20 s
// bound, so that a deadlock fails the test instead of hanging the suite.

private func isNotFound(_ error: any Error, containing text: String) -> Bool {
    if case StrataError.notFound(_, _, let what) = error { return what.contains(text) }
    return false
}

/// The `(key, documentID)` of every row of `index`, in order.
private func rows(_ db: DocumentDatabase, _ index: String) throws -> [String] {
    var q = IndexQuery.all
    q.reduce = false
    return try db.query(index, q).rows.map { "\($0.key)|\($0.documentID ?? "-")" }
}

/// What the `v` index must hold for the live documents of `db`: one row per document with a
/// `v` field, keyed by it.
private func expectedRows(_ db: DocumentDatabase, ids: [String]) throws -> [String] {
    var out: [(JSON, String)] = []
    for (id, doc) in try db.documents(ids: ids) { if let v = doc["v"] { out.append((v, id)) } }
    out.sort { a, b in
        let c = JSON.collate(a.0, b.0)
        return c != 0 ? c < 0 : Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
    }
    return out.map { "\($0.0)|\($0.1)" }
}

private func byV(calls: CallCounter? = nil) -> DocumentIndex {
    DocumentIndex(name: "v", version: "1", map: { doc, emit in
        calls?.add()
        if let v = doc["v"] { emit(v, nil) }
    })
}

@Suite struct IndexConcurrencyTests {
    @Test("a map that reads its own database, through the store, works in saves and builds")
    func mapThatReads() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        // The map looks the document's parent up and emits its name.
        let parentName = DocumentIndex(name: "parent", version: "1", map: { doc, emit in
            guard case .string(let parent)? = doc["parent"] else { return }
            let db = try store.documents("r")
            if let p = try db.document(id: parent), let name = p["name"] { emit(name, nil) }
            _ = try db.query("v", .all)
        })
        let outcome = runBounded {
            let db = try store.documents("r", indexes: [byV()])
            try db.save(Document(id: "p", fields: ["name": "root", "v": 1]))
            try db.save(Document(id: "c1", fields: ["parent": "p"]))
            _ = try store.documents("r", indexes: [byV(), parentName])  // a build runs the map
            try db.save(Document(id: "c2", fields: ["parent": "p"]))  // a save runs it
            return try rows(db, "parent")
        }
        let result = try #require(outcome, "a map that reads its database deadlocked")
        #expect(try result.get() == ["\"root\"|c1", "\"root\"|c2"])
    }

    @Test("a map that saves to its own database works in saves and builds")
    func mapThatSaves() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        // For each order it maps, the map records an audit document (which it does not index).
        let audited = DocumentIndex(name: "orders", version: "1", map: { doc, emit in
            guard doc.metadata.id.hasPrefix("order-") else { return }
            try store.documents("s").save(Document(id: "audit-" + doc.metadata.id, fields: ["seen": true]))
            emit(doc["total"] ?? nil, nil)
        })
        let outcome = runBounded {
            let db = try store.documents("s")
            try db.save(Document(id: "order-1", fields: ["total": 10]))
            let indexed = try store.documents("s", indexes: [audited])  // build
            try indexed.save(Document(id: "order-2", fields: ["total": 20]))  // save
            return (try rows(indexed, "orders"), try indexed.documents(ids: ["audit-order-1", "audit-order-2"]).keys.sorted())
        }
        let result = try #require(outcome, "a map that saves to its database deadlocked")
        let (orderRows, audits) = try result.get()
        #expect(orderRows == ["10|order-1", "20|order-2"])
        #expect(audits == ["audit-order-1", "audit-order-2"])
    }

    @Test("a map that names the index it is building is refused, not deadlocked; the index is built next time")
    func mapThatReconfigures() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let reopen = Atomic<Bool>(true)
        let box = Mutex<DocumentIndex?>(nil)
        let index = DocumentIndex(name: "self", version: "1", map: { doc, emit in
            if reopen.load(ordering: .relaxed), let me = box.withLock({ $0 }) { _ = try store.documents("m", indexes: [me]) }
            emit(doc["v"] ?? nil, nil)
        })
        box.withLock { $0 = index }
        let db = try store.documents("m")
        try db.save(Document(id: "a", fields: ["v": 1]))
        let outcome = runBounded { try store.documents("m", indexes: [index]) }
        let result = try #require(outcome, "a map that names its index deadlocked")
        #expect { try result.get() } throws: { e in
            if case StrataError.invalidArgument = e { return true }
            return false
        }
        #expect { try db.query("self", .all) } throws: { isNotFound($0, containing: "stored but not open") }
        reopen.store(false, ordering: .relaxed)
        _ = try store.documents("m", indexes: [index])
        #expect(try rows(db, "self") == ["1|a"])
    }

    @Test("a custom reduce that reads its database works in queries and live queries")
    func reduceThatReads() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        // Sums the values, scaled by a factor stored in the database.
        let scaled = DocumentIndex(name: "scaled", version: "1", map: { doc, emit in
            if let v = doc["v"] { emit(v, v) }
        }, reduce: .custom { _, values, _ in
            let factor = try store.documents("f").document(id: "factor")?["k"]?.int64Value ?? 1
            return .int(values.reduce(0) { $0 + ($1.int64Value ?? 0) } * factor)
        })
        let outcome = runBounded {
            let db = try store.documents("f", indexes: [scaled])
            try db.save(Document(id: "factor", fields: ["k": 1]))
            try db.save(Document(id: "a", fields: ["v": 2]))
            try db.save(Document(id: "b", fields: ["v": 3]))
            return try db.query("scaled", .all).rows.first?.value
        }
        let result = try #require(outcome, "a reduce that reads its database deadlocked")
        #expect(try result.get() == .int(5))
        let db = try await store.documents("f")
        var iterator = try db.observe("scaled", .all).makeAsyncIterator()
        #expect(try await iterator.next()?.rows.first?.value == .int(5))
        try await db.save(Document(id: "c", fields: ["v": 5]))
        #expect(try await iterator.next()?.rows.first?.value == .int(10))
    }

    @Test("a live query whose re-run fails ends by throwing the error")
    func liveQueryErrorEndsTheStream() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        struct Refused: Error {}
        let failing = DocumentIndex(name: "n", version: "1", map: { doc, emit in
            if let v = doc["v"] { emit(v, v) }
        }, reduce: .custom { _, values, _ in
            if values.contains(.int(13)) { throw Refused() }
            return .int(Int64(values.count))
        })
        let db = try await store.documents("e", indexes: [failing])
        var iterator = try db.observe("n", .all).makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        try await db.save(Document(id: "x", fields: ["v": 13]))
        await #expect(throws: StrataError.self) { _ = try await iterator.next() }
    }

    @Test("concurrent saves and deletes of the same documents keep the rows exact")
    func concurrentSavesKeepRowsExact() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("c", indexes: [byV()])
        let ids = (0..<20).map { "d\($0)" }
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            var random = SplitMix64(seed: UInt64(thread + 1))
            for i in 0..<300 {
                let id = ids[Int(random.next() % UInt64(ids.count))]
                do {
                    if random.next() % 4 == 0 {
                        try? db.delete(id: id)
                    } else {
                        try db.save(contentsOf: [Document(id: id, fields: ["v": .int(Int64(thread * 1000 + i))]),
                                                 Document(id: ids[(i + thread) % ids.count], fields: ["v": .int(Int64(i))])])
                    }
                } catch {
                    Issue.record(error)
                }
            }
        }
        #expect(try rows(db, "v") == expectedRows(db, ids: ids))
    }

    @Test("a build lets writes go on, and catches up with them")
    func buildDoesNotHoldTheWriterLock() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("b")
        var all: [String] = []
        for i in 0..<2500 {
            all.append("d\(i)")
            try db.save(Document(id: "d\(i)", fields: ["v": .int(Int64(i % 97))]))
        }
        // While the build maps the first document, another thread saves and must get through.
        let saved = Signal()
        let blockedTooLong = Atomic<Bool>(false)
        let once = Atomic<Bool>(false)
        let index = DocumentIndex(name: "v", version: "1", map: { doc, emit in
            if !once.exchange(true, ordering: .relaxed) {
                Thread {
                    do {
                        try db.save(Document(id: "during", fields: ["v": 1000]))
                        try db.save(Document(id: "d5", fields: ["v": 2000]))
                        try db.delete(id: "d7")
                        try db.save(Document(id: "d2400", fields: ["v": 3000]))
                    } catch {
                        Issue.record(error)
                    }
                    saved.fire()
                }.start()
                if !saved.wait(seconds: 20) { blockedTooLong.store(true, ordering: .relaxed) }
            }
            if let v = doc["v"] { emit(v, nil) }
        })
        // More concurrent writes through the whole build.
        let stop = Atomic<Bool>(false)
        let writer = Signal()
        Thread {
            var i = 0
            while !stop.load(ordering: .relaxed) {
                let id = "d\((i * 7919) % 2500)"
                do {
                    if i % 5 == 4 { try? db.delete(id: id) } else { try db.save(Document(id: id, fields: ["v": .int(Int64(i))])) }
                } catch {
                    Issue.record(error)
                }
                i += 1
            }
            writer.fire()
        }.start()
        let built = runBounded { try store.documents("b", indexes: [index]) }
        stop.store(true, ordering: .relaxed)
        #expect(writer.wait(seconds: 60))
        let indexed = try #require(built, "the build deadlocked")
        _ = try indexed.get()
        let tooLong = blockedTooLong.load(ordering: .relaxed)
        #expect(!tooLong, "a save waited for the build")
        all.append("during")
        #expect(try rows(db, "v") == expectedRows(db, ids: all))
        #expect(try Catalog.entry(store, database: "b", index: "v")?.state == DocumentLayout.indexReady)
    }

    @Test("a catch-up from the feed lets writes go on, and ends with exact rows")
    func catchUpWithConcurrentWrites() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let ids = (0..<3000).map { "d\($0)" }
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("u", indexes: [byV()])
            try db.save(contentsOf: ids.map { Document(id: $0, fields: ["v": .int(Int64($0.count))]) })
            try store.close()
        }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("u")
        // 2,400 documents change while the index is not named.
        for (i, id) in ids.enumerated() where i % 5 != 0 {
            if i % 7 == 0 { try db.delete(id: id) } else { try db.save(Document(id: id, fields: ["v": .int(Int64(i))])) }
        }
        let stop = Atomic<Bool>(false)
        let writer = Signal()
        Thread {
            var i = 0
            while !stop.load(ordering: .relaxed) {
                let id = ids[(i * 7919) % ids.count]
                do {
                    if i % 5 == 4 { try? db.delete(id: id) } else { try db.save(Document(id: id, fields: ["v": .int(Int64(-i))])) }
                } catch {
                    Issue.record(error)
                }
                i += 1
            }
            writer.fire()
        }.start()
        let caughtUp = runBounded { try store.documents("u", indexes: [byV()]) }
        stop.store(true, ordering: .relaxed)
        #expect(writer.wait(seconds: 60))
        _ = try #require(caughtUp, "the catch-up deadlocked").get()
        #expect(try rows(db, "v") == expectedRows(db, ids: ids))
        #expect(try Catalog.entry(store, database: "u", index: "v")?.state == DocumentLayout.indexReady)
    }

    @Test("an index not named at open is kept, refuses queries, and catches up from the feed when named")
    func unnamedIndexesAreKept() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var ids = (0..<300).map { "d\($0)" }
        var indexID: UInt64 = 0
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("k", indexes: [byV()])
            for id in ids { try db.save(Document(id: id, fields: ["v": .int(Int64(id.count))])) }
            indexID = try db.state.indexes.activeIndex("v").id
            try store.close()
        }
        do {
            // A plain open destroys nothing; the index cannot be queried; writes go on.
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("k")
            #expect(try storedRowCount(store, indexId: indexID) == 300)
            #expect { try db.query("v", .all) } throws: { isNotFound($0, containing: "stored but not open") }
            #expect { try db.observe("v", .all) } throws: { isNotFound($0, containing: "stored but not open") }
            #expect { try db.query("nope", .all) } throws: { e in
                isNotFound(e, containing: "nope") && !isNotFound(e, containing: "stored")
            }
            try db.save(Document(id: "d1", fields: ["v": 100]))
            try db.save(Document(id: "d2", fields: ["x": 1]))  // no row any more
            try db.delete(id: "d3")
            try db.save(Document(id: "new", fields: ["v": 200]))
            ids.append("new")
            #expect(try Catalog.entry(store, database: "k", index: "v")?.state == DocumentLayout.indexBehind)
            try store.close()
        }
        do {
            // Named again: only the changed documents are mapped; rows are right; same id.
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let calls = CallCounter()
            let db = try store.documents("k", indexes: [byV(calls: calls)])
            #expect(calls.value == 3)  // d1, d2, new (d3 is deleted)
            #expect(try db.state.indexes.activeIndex("v").id == indexID)
            #expect(try rows(db, "v") == expectedRows(db, ids: ids))
            #expect(try Catalog.entry(store, database: "k", index: "v")?.state == DocumentLayout.indexReady)
            // In one open: a plain handle, writes, then naming it catches up at once.
            try db.save(Document(id: "d4", fields: ["v": 300]))
            #expect(try rows(db, "v") == expectedRows(db, ids: ids))
            try store.close()
        }
        do {
            // Current at close: named again without writes in between, nothing is mapped.
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let calls = CallCounter()
            let db = try store.documents("k", indexes: [byV(calls: calls)])
            #expect(calls.value == 0)
            #expect(try rows(db, "v") == expectedRows(db, ids: ids))
            try db.dropIndex("v")
            #expect(try storedRowCount(store, indexId: indexID) == 0)
            #expect { try db.query("v", .all) } throws: { e in
                isNotFound(e, containing: "\"v\"") && !isNotFound(e, containing: "stored")
            }
            #expect { try db.dropIndex("v") } throws: { isNotFound($0, containing: "\"v\"") }
            try store.close()
        }
    }

    @Test("index catalog payloads: layout 2 carries the reflected sequence; layout 1 still reads")
    func indexPayloadLayouts() throws {
        let v2 = DocumentLayout.indexPayload(version: "7", state: DocumentLayout.indexBehind, reduction: .count, reflected: 300)
        // FORMAT.md 16.1: layout 2, state 2, version "7", reduction 1 (count), raw collation, reflected 300.
        #expect(v2 == [0x02, 0x02, 0x01, 0x37, 0x01, 0x00, 0xAC, 0x02])
        #expect(try DocumentLayout.decodeIndexPayload(v2, name: "x") ==
                DocumentLayout.IndexPayload(state: 2, version: "7", reduction: 1, reflected: 300))
        let v1: [UInt8] = [0x01, 0x01, 0x01, 0x37, 0x02]
        #expect(try DocumentLayout.decodeIndexPayload(v1, name: "x") ==
                DocumentLayout.IndexPayload(state: 1, version: "7", reduction: 2, layout: 1, reflected: 0))
        // Layout 1 knows no state 2; trailing bytes and unknown layouts are refused.
        #expect(throws: StrataError.self) { try DocumentLayout.decodeIndexPayload([0x01, 0x02, 0x01, 0x37, 0x02], name: "x") }
        #expect(throws: StrataError.self) { try DocumentLayout.decodeIndexPayload(v2 + [0], name: "x") }
        #expect(throws: StrataError.self) { try DocumentLayout.decodeIndexPayload([0x03] + v2.dropFirst(), name: "x") }
    }
}

extension Catalog {
    /// The decoded catalog payload of index `index` of database `database`.
    static func entry(_ store: Store, database: String, index: String) throws -> DocumentLayout.IndexPayload? {
        let name = DocumentLayout.indexCatalogName(database: database, index: index)
        return try store.catalog.entry(kind: .documentIndex, name: name).map { try DocumentLayout.decodeIndexPayload($0.payload, name: name) }
    }
}
