import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Index maintenance across versions, drops and reopen; live queries and the change stream.

/// Every stored row of an index (engine keys), for checks that no stale row is left.
func storedRowCount(_ store: Store, indexId: UInt64) throws -> Int {
    let prefix = DocumentLayout.indexPrefix(indexId)
    return try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix)).countAll()
}

final class CallCounter: Sendable {
    let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

@Suite struct IndexMaintenanceTests {
    static func byCost(_ version: String, calls: CallCounter? = nil) -> DocumentIndex {
        DocumentIndex(name: "cost", version: version, map: { doc, emit in
            calls?.add()
            if let c = doc["cost"] { emit(version == "1" ? c : [c], doc["n"]) }
        }, reduce: .sum)
    }

    @Test("updates and deletes remove stale rows; a version change rebuilds; an unlisted index is dropped; reopen keeps rows")
    func maintenance() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var firstId: UInt64 = 0
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("m", indexes: [Self.byCost("1")])
            for i in 0..<20 { try db.save(Document(id: "d\(i)", fields: ["cost": .int(Int64(i)), "n": 1])) }
            try db.save(Document(id: "d5", fields: ["cost": 100, "n": 2]))
            try db.save(Document(id: "d6", fields: ["n": 3]))  // no cost: no row
            try db.delete(id: "d7")
            let rows = try db.query("cost", IndexQuery.all.with { $0.reduce = false }).rows
            #expect(rows.map(\.documentID) == (0..<20).filter { ![5, 6, 7].contains($0) }.map { "d\($0)" } + ["d5"])
            #expect(try db.query("cost", .all).rows.first?.value == .int(17 + 2))
            firstId = try db.state.indexes.activeIndex("cost").id
            #expect(try storedRowCount(store, indexId: firstId) == 18)
            try store.close()
        }
        do {
            // Same version: no rebuild (the map is not run on open).
            let calls = CallCounter()
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("m", indexes: [Self.byCost("1", calls: calls)])
            #expect(calls.value == 0)
            #expect(try db.state.indexes.activeIndex("cost").id == firstId)
            #expect(try db.query("cost", .range(start: 100)).rows.first?.value == 2)
            // New version: rebuilt under a new id, old rows gone.
            let rebuilt = try store.documents("m", indexes: [Self.byCost("2", calls: calls)])
            #expect(calls.value == 19)  // every live document, d6 too
            let newId = try rebuilt.state.indexes.activeIndex("cost").id
            #expect(newId != firstId)
            #expect(try storedRowCount(store, indexId: firstId) == 0)
            #expect(try storedRowCount(store, indexId: newId) == 18)
            #expect(try db.query("cost", IndexQuery.keys([[100]]).with { $0.reduce = false }).rows.map(\.documentID) == ["d5"])
            try store.close()
        }
        do {
            let store = try Store.open(at: tmp.url, options: documentStoreOptions())
            let db = try store.documents("m", indexes: [Self.byCost("2")])
            let id = try db.state.indexes.activeIndex("cost").id
            #expect(try db.query("cost", IndexQuery.all.with { $0.reduce = false }).count == 18)
            // Kept when no longer listed; dropped on purpose.
            _ = try store.documents("m", indexes: [])
            #expect(try storedRowCount(store, indexId: id) == 18)
            try db.dropIndex("cost")
            #expect(try storedRowCount(store, indexId: id) == 0)
            #expect(throws: StrataError.self) { try db.query("cost", .all) }
            #expect(try Catalog.entries(kind: .documentIndex, in: store.engine.snapshot()).isEmpty)
            #expect { try db.dropIndex("cost") } throws: { e in
                if case StrataError.notFound = e { return true }
                return false
            }
            try store.close()
        }
    }

    @Test("live queries yield the current result, then only after commits that change it")
    func liveQueries() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: documentStoreOptions())
        let db = try await store.documents("l", indexes: [Self.byCost("1")])
        try await db.save(Document(id: "a", fields: ["cost": 5, "n": 1]))
        var q = IndexQuery.range(start: 10, end: 20)
        q.reduce = false
        let stream = try db.observe("cost", q)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next()?.rows.isEmpty == true)
        // Outside the range, and a save that changes no row: nothing.
        try await db.save(Document(id: "b", fields: ["cost": 50, "n": 1]))
        try await db.save(Document(id: "a", fields: ["cost": 5, "n": 1, "other": true]))
        // Inside: a new result.
        try await db.save(Document(id: "c", fields: ["cost": 15, "n": 7]))
        let next = try await iterator.next()
        #expect(next?.rows == [QueryRow(key: 15, value: 7, documentID: "c")])
        try await db.delete(id: "c")
        #expect(try await iterator.next()?.rows.isEmpty == true)
        // Changes stream: one array per commit.
        let changes = try db.changes()
        var changeIterator = changes.makeAsyncIterator()
        try await db.save(contentsOf: [Document(id: "x", fields: [:]), Document(id: "y", fields: [:])])
        try await db.delete(id: "x")
        let first = try await changeIterator.next()
        #expect(first?.map(\.id) == ["x", "y"])
        #expect(try await changeIterator.next()?.map(\.isDeletion) == [true])
        // Closing the store ends both streams by throwing `.closed`.
        try await store.close()
        await #expect(throws: StrataError.closed) { _ = try await iterator.next() }
        await #expect(throws: StrataError.closed) { _ = try await changeIterator.next() }
    }

    @Test("a burst of commits coalesces; a cancelled live query is freed")
    func coalescingAndCancellation() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try await store.documents("c", indexes: [Self.byCost("1")])
        let stream = try db.observe("cost", .all)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next()?.rows.isEmpty == true)
        for i in 0..<200 { try await db.save(Document(id: "d\(i)", fields: ["cost": .int(Int64(i)), "n": 1])) }
        // The consumer sees at most a few results, the last one final.
        var last: IndexQueryResult?
        var seen = 0
        while let r = try await iterator.next() {
            seen += 1
            last = r
            if r.rows.first?.value == 200 { break }
        }
        #expect(last?.rows == [QueryRow(key: nil, value: 200, documentID: nil)])
        #expect(seen <= 200)
        #expect(db.state.broadcaster.count == 1)
        let task = Task {
            for try await _ in try db.observe("cost", .all) {}
        }
        for _ in 0..<500 where db.state.broadcaster.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(db.state.broadcaster.count == 2)
        task.cancel()
        for _ in 0..<500 where db.state.broadcaster.count > 1 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(db.state.broadcaster.count == 1)
    }

    @Test("a changes() subscriber that falls more than 1,024 commits behind gets its buffer, then the end")
    func changeStreamOverflow() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try await store.documents("o")
        let stream = try db.changes()
        for i in 0..<(documentChangesBufferLimit + 10) { try await db.save(Document(id: "d\(i)")) }
        // Delivery is asynchronous: let it reach the stream before the consumer starts draining it
        // (a consumer that keeps up never overflows).
        db.state.broadcaster.waitForDeliveries()
        var received = 0
        var ending: (any Error)?
        do {
            for try await batch in stream {
                #expect(batch.count == 1 && batch[0].id == "d\(received)")
                received += 1
            }
        } catch {
            ending = error
        }
        #expect(received == documentChangesBufferLimit)
        if case StrataError.subscriberOverflow? = ending {} else { Issue.record("the stream ended with \(String(describing: ending))") }
        db.state.broadcaster.waitForDeliveries()
        #expect(db.state.broadcaster.count == 0)
        // The persistent feed has everything.
        #expect(try await db.changes(since: UInt64(received)).changes.first?.id == "d\(received)")
    }
}
