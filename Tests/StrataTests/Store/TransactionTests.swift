import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Store.transaction (Transaction.swift): writes to a series, a channel and a document database
// that commit as one batch or not at all, under each collection's own rules. The kill -9 test is
// TransactionCrashTests.swift; the commit path under it is Engine/CommitPathTests.swift.

private struct Abandon: Error {}

/// A value whose encoding fails when it is negative.
private struct Picky: Codable, Sendable, Equatable {
    var v: Int

    init(_ v: Int) { self.v = v }

    func encode(to encoder: any Encoder) throws {
        if v < 0 { throw Abandon() }
        var c = encoder.singleValueContainer()
        try c.encode(v)
    }

    init(from decoder: any Decoder) throws {
        v = try decoder.singleValueContainer().decode(Int.self)
    }
}

/// Calls the synchronous twin from an `async` context (where Swift picks the `async` one).
private func blocking<T>(_ body: () throws -> T) rethrows -> T { try body() }

/// Expects `body` to throw ``StrataError/invalidArgument(argument:reason:)``.
private func expectInvalidArgument<R>(_ body: () throws -> R, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try body()
        Issue.record("no error thrown", sourceLocation: sourceLocation)
    } catch StrataError.invalidArgument {
    } catch {
        Issue.record("threw \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("Transactions")
struct TransactionTests {
    @Test func commitsSeriesChannelAndDocumentsTogether() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let (event, tt, doc) = try store.transaction { tx in
            let event = try tx.timeSeries("fills", of: Double.self).append(101.5)
            let tt = try tx.channel("orders", of: String.self).publish("filled")
            let doc = try tx.documents("book").save(Document(id: "AAPL", fields: ["last": 101.5]))
            return (event, tt, doc)
        }
        let series = try store.timeSeries("fills", of: Double.self)
        #expect(try series.latest()?.value == 101.5 && series.latest()?.sequence == event.sequence && event.sequence == 0)
        #expect(try series.latest()?.metadata == event)
        let page = try store.channel("orders", of: String.self).history()
        #expect(page.messages.map(\.message) == ["filled"] && page.messages.map(\.timetoken) == [tt])
        let stored = try #require(try store.documents("book").document(id: "AAPL"))
        #expect(stored.metadata.revision == 1 && doc.metadata.revision == 1 && stored["last"]?.doubleValue == 101.5)
        // And after a reopen.
        try store.close()
        let again = try Store.open(at: tmp.url)
        defer { try? again.close() }
        #expect(try again.timeSeries("fills", of: Double.self).latest()?.value == 101.5)
        #expect(try again.channel("orders", of: String.self).history().messages.map(\.timetoken) == [tt])
        #expect(try again.documents("book").document(id: "AAPL")?["last"]?.doubleValue == 101.5)
    }

    @Test func aBodyThatThrowsCommitsNothingAndLeavesNoGap() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let series = try store.timeSeries("s", of: Int64.self)
        let channel = try store.channel("c", of: Int.self)
        let db = try store.documents("d")
        try series.append(0)
        let tt0 = try channel.publish(0)
        try db.save(Document(id: "counter", fields: ["n": 0]))
        let feedBefore = try db.changes(since: 0)
        #expect(throws: Abandon.self) {
            try store.transaction { tx in
                let s = try tx.timeSeries("s", of: Int64.self)
                #expect(try s.append(contentsOf: [1, 2, 3]).map(\.sequence) == [1, 2, 3])
                try s.edit(originalSequence: 0, value: -1)
                try tx.channel("c", of: Int.self).publish(contentsOf: [1, 2])
                let d = try tx.documents("d")
                #expect(try d.update(Document(id: "counter", fields: ["n": 1])).metadata.revision == 2)
                try d.save(Document(id: "other", fields: [:]))
                try d.delete(id: "counter")
                throw Abandon()
            }
        }
        #expect(try series.bounds().next == 1 && series.latest()?.value == 0)
        #expect(try series.query(.edits(.all)).events.map(\.sequence) == [0])
        #expect(try channel.history().messages.map(\.message) == [0])
        #expect(try db.document(id: "counter")?.metadata.revision == 1 && db.document(id: "other") == nil)
        #expect(try db.changes(since: 0).changes == feedBefore.changes)
        // The next single writes continue where the committed state stopped.
        #expect(try series.append(1).sequence == 1)
        #expect(try channel.publish(1) > tt0)
        let updated = try db.update(Document(id: "counter", fields: ["n": 1]))
        #expect(updated.metadata.revision == 2)
        let feed = try db.changes(since: 0)
        #expect(feed.changes.map(\.sequence) == [feedBefore.lastSequence + 1] && feed.changes.map(\.revision) == [2])
        // The locks were released.
        _ = try store.transaction { tx in try tx.timeSeries("s", of: Int64.self).append(2) }
        #expect(try series.bounds().next == 3)
    }

    @Test func aFailedWriteTheBodyCatchesLeavesTheRestCommitted() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let later = Date(timeIntervalSince1970: 2_000_000)
        try store.transaction { tx in
            let s = try tx.timeSeries("s", of: String.self)
            try s.append("a", timestamp: later)
            #expect(throws: StrataError.self) { try s.append("too early", timestamp: later.addingTimeInterval(-1)) }
            try s.append("x", timestamp: later)
            #expect(throws: StrataError.self) { try s.edit(originalSequence: 99, value: "no") }
            try s.append("b", timestamp: later)
            let d = try tx.documents("d")
            #expect(throws: StrataError.self) { try d.update(Document(id: "missing", fields: [:])) }
            #expect(throws: StrataError.self) { try d.delete(id: "missing") }
            try d.save(Document(id: "kept", fields: ["v": 1]))
            #expect(throws: StrataError.self) { try d.add(Document(id: "kept", fields: ["v": 2])) }
            // A write that fails halfway (its second value does not encode) leaves no record.
            let picky = try tx.timeSeries("picky", of: Picky.self)
            #expect(throws: (any Error).self) { try picky.append(contentsOf: [Picky(1), Picky(-1), Picky(2)]) }
            #expect(throws: (any Error).self) { try tx.channel("c", of: Picky.self).publish(contentsOf: [Picky(1), Picky(-1)]) }
            // A collection whose only write failed: taken and released with the transaction.
            #expect(throws: StrataError.self) { try tx.documents("untouched").update(Document(id: "x", fields: [:])) }
        }
        let s = try store.timeSeries("s", of: String.self)
        let events = try s.query(.edits(.all)).events
        #expect(events.map(\.sequence) == [0, 1, 2] && events.map(\.value) == ["a", "x", "b"])
        let d = try store.documents("d")
        #expect(try d.document(id: "missing") == nil)
        #expect(try d.document(id: "kept")?["v"]?.int64Value == 1 && d.document(id: "kept")?.metadata.revision == 1)
        #expect(try d.changes(since: 0).changes.map(\.id) == ["kept"])
        // What recovery finds agrees too (a stray record would move the series' next sequence).
        try store.close()
        store = try Store.open(at: tmp.url)
        let picky = try store.timeSeries("picky", of: Picky.self)
        #expect(try picky.bounds().next == 0 && picky.query(.edits(.all)).events.isEmpty)
        #expect(try picky.append(Picky(3)).sequence == 0)
        #expect(try store.channel("c", of: Picky.self).history().messages.isEmpty)
        let untouched = try store.documents("untouched")
        #expect(try untouched.save(Document(id: "x", fields: [:])).metadata.revision == 1)
        #expect(try untouched.changes(since: 0).changes.map(\.sequence) == [1])
    }

    @Test func twoAppendsAndAnEditOfAnEventOfTheSameTransaction() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let series = try store.timeSeries("s", of: Double.self)
        try series.append(0.5)
        let edit = try store.transaction { tx in
            let s = try tx.timeSeries("s", of: Double.self)
            let a = try s.append(1)
            let b = try s.append(2)
            #expect((a.sequence, b.sequence) == (1, 2))
            let edit = try s.edit(originalSequence: a.sequence, value: 1.5)
            #expect(throws: StrataError.self) { try s.edit(originalSequence: edit.sequence, value: 9) }  // an edit of an edit
            #expect(throws: StrataError.self) { try s.edit(originalSequence: 4, value: 9) }  // not there
            try s.edit(originalSequence: 0, value: 0.75)
            return edit
        }
        #expect(edit.sequence == 3)
        let all = try series.query(.edits(.all)).events
        #expect(all.map(\.sequence) == [0, 1, 2, 3, 4])
        #expect(all[3].originalEvent?.sequence == 1 && all[3].value == 1.5)
        #expect(all[4].originalEvent?.sequence == 0 && all[4].value == 0.75)
        #expect(try series.query(.values).events.map(\.value) == [0.75, 1.5, 2])
        #expect(try series.append(3).sequence == 5)
    }

    /// The same writes of one id inside a transaction and as single writes give the same
    /// revisions, document and change feed.
    @Test func addUpdateDeleteOfOneDocumentInOneTransaction() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let direct = try store.documents("direct")
        let inTx = try store.documents("tx")
        try direct.save(Document(id: "seed", fields: [:]))
        try inTx.save(Document(id: "seed", fields: [:]))
        typealias Op = (DocumentWriter) throws -> Document?
        let ops: [Op] = [
            { try $0.add(Document(id: "d", fields: ["v": 1])) },
            { try $0.update(Document(id: "d", fields: ["v": 2])) },
            { try $0.delete(id: "d"); return nil },
            { try $0.add(Document(id: "d", fields: ["v": 3])) },
            { try $0.save(Document(id: "d", fields: ["v": 4])) },
            { try $0.delete(id: "seed"); return nil },
        ]
        let expected = try ops.map { try $0(DocumentWriter(database: direct))?.metadata.revision }
        let staged = try store.transaction { tx in
            let d = try tx.documents("tx")
            return try ops.map { try $0(DocumentWriter(transaction: d))?.metadata.revision }
        }
        #expect(staged == expected && expected == [1, 2, nil, 4, 5, nil])
        let a = try #require(try direct.document(id: "d")), b = try #require(try inTx.document(id: "d"))
        #expect(a.fields == b.fields && a.metadata.revision == b.metadata.revision && b["v"]?.int64Value == 4)
        #expect(try inTx.document(id: "seed") == nil)
        // The feed: one entry per id at its last change (numbered per commit, so compare the rest).
        func feed(_ db: DocumentDatabase) throws -> [String] {
            try db.changes(since: 0).changes.map { "\($0.id) \($0.revision) \($0.isDeletion)" }.sorted()
        }
        #expect(try feed(direct) == feed(inTx))
        #expect(try feed(inTx) == ["d 5 false", "seed 2 true"])
        // The next single write continues the revisions and the feed.
        #expect(try inTx.update(Document(id: "d", fields: ["v": 5])).metadata.revision == 6)
        let after = try inTx.changes(since: 0)
        #expect(after.changes.map(\.sequence) == after.changes.map(\.sequence).sorted())
    }

    /// Retention applies to a transaction's writes as to single writes: a limited series and a
    /// limited channel written in one transaction end as the same writes made one by one.
    @Test func retainedRangesAndLimitsApplyInsideTransactions() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        // (Store.timeSeries applies the options it is given: the defaults when none are.)
        let limited = TimeSeriesOptions(retainedRange: .limit(3))
        _ = try store.timeSeries("s/tx", of: Int64.self, options: limited)
        _ = try store.channel("c/tx", of: Int.self, options: ChannelOptions(limit: 3))
        let direct = try store.timeSeries("s/direct", of: Int64.self, options: limited)
        let directChannel = try store.channel("c/direct", of: Int.self, options: ChannelOptions(limit: 3))
        try direct.append(contentsOf: [0, 1, 2, 3, 4])
        try direct.edit(originalSequence: 4, value: -4)
        #expect(throws: StrataError.self) { try direct.edit(originalSequence: 0, value: -9) }
        try directChannel.publish(contentsOf: [0, 1])
        try directChannel.publish(contentsOf: [2, 3, 4])
        try store.transaction { tx in
            let s = try tx.timeSeries("s/tx", of: Int64.self)
            try s.append(contentsOf: [0, 1, 2, 3, 4])
            try s.edit(originalSequence: 4, value: -4)
            // Out of the retained range already, though appended in this transaction.
            #expect(throws: StrataError.self) { try s.edit(originalSequence: 0, value: -9) }
            let c = try tx.channel("c/tx", of: Int.self)
            try c.publish(contentsOf: [0, 1])
            try c.publish(contentsOf: [2, 3, 4])
        }
        #expect(throws: Abandon.self) {
            try store.transaction { tx in
                try tx.channel("c/tx", of: Int.self).publish(contentsOf: [5, 6, 7])
                throw Abandon()
            }
        }
        for reopened in [false, true] {
            if reopened {
                try store.close()
                store = try Store.open(at: tmp.url)
            }
            let a = try store.timeSeries("s/tx", of: Int64.self, options: limited)
            let b = try store.timeSeries("s/direct", of: Int64.self, options: limited)
            #expect(try a.bounds() == b.bounds() && a.bounds() == SeriesBounds(count: 3, firstRetained: 3, next: 6), "reopened: \(reopened)")
            #expect(try a.query(.edits(.all)).events.map(\.value) == b.query(.edits(.all)).events.map(\.value))
            let ca = try store.channel("c/tx", of: Int.self), cb = try store.channel("c/direct", of: Int.self)
            #expect(try ca.history().messages.map(\.message) == [2, 3, 4], "reopened: \(reopened)")
            #expect(try cb.history().messages.map(\.message) == [2, 3, 4], "reopened: \(reopened)")
        }
        // Later single writes go on under the same limits.
        try store.channel("c/tx", of: Int.self).publish(5)
        #expect(try store.channel("c/tx", of: Int.self).history().messages.map(\.message) == [3, 4, 5])
    }

    @Test func indexRowsFollowTheTransactionsDocuments() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let byV = DocumentIndex(name: "byV", version: "1") { doc, emit in
            if let v = doc["v"] { emit(v, nil) }
        }
        let db = try store.documents("d", indexes: [byV])
        try db.save(Document(id: "old", fields: ["v": 100]))
        try db.save(Document(id: "gone", fields: ["v": 200]))
        try store.transaction { tx in
            let d = try tx.documents("d")
            try d.save(contentsOf: (0..<5).map { Document(id: "n\($0)", fields: ["v": .int(Int64($0))]) })
            try d.update(Document(id: "old", fields: ["v": 50]))
            try d.update(Document(id: "n3", fields: ["v": 30]))
            try d.delete(id: "gone")
            try d.delete(id: "n4")
        }
        let rows = try db.query("byV", .all).rows
        #expect(rows.map(\.documentID) == ["n0", "n1", "n2", "n3", "old"])
        #expect(rows.map(\.key) == [0, 1, 2, 30, 50])
        // A transaction that throws leaves the rows alone.
        #expect(throws: Abandon.self) {
            try store.transaction { tx in
                try tx.documents("d").save(Document(id: "n9", fields: ["v": 9]))
                throw Abandon()
            }
        }
        #expect(try db.query("byV", .all).rows == rows)
    }

    @Test func subscribersReceiveEachTransactionOnceInCommitOrder() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url)
        let series = try blocking { try store.timeSeries("s", of: Int64.self) }
        let channel = try blocking { try store.channel("c", of: Int.self) }
        let db = try blocking { try store.documents("d") }
        let events = series.subscribe()
        let messages = try channel.messages()
        let changes = try db.changes()
        for k in 0..<20 {
            do {
                try blocking {
                    try store.transaction { tx in
                        let s = try tx.timeSeries("s", of: Int64.self)
                        try s.append(Int64(k))
                        if k % 3 == 0 { try s.append(Int64(k)) }
                        try tx.channel("c", of: Int.self).publish(k)
                        try tx.documents("d").save(Document(id: "k\(k % 4)", fields: ["k": .int(Int64(k))]))
                        if k % 5 == 4 { throw Abandon() }
                    }
                }
            } catch is Abandon {}
        }
        let committed = (0..<20).filter { $0 % 5 != 4 }
        // A final single write of each marks the end of the streams.
        _ = try blocking { try series.append(-1) }
        _ = try blocking { try channel.publish(-1) }
        _ = try blocking { try db.save(Document(id: "end", fields: [:])) }
        var seen: [Int64] = []
        for try await e in events {
            seen.append(e.value)
            if e.value == -1 { break }
        }
        #expect(seen == committed.flatMap { $0 % 3 == 0 ? [Int64($0), Int64($0)] : [Int64($0)] } + [-1])
        var published: [Int] = []
        for try await m in messages {
            published.append(m.message)
            if m.message == -1 { break }
        }
        #expect(published == committed + [-1])
        var commits: [[String]] = []
        for try await c in changes {
            commits.append(c.map(\.id))
            if c.contains(where: { $0.id == "end" }) { break }
        }
        #expect(commits == committed.map { ["k\($0 % 4)"] } + [["end"]])
        try await store.close()
    }

    @Test func aDirectWriteOfAHeldCollectionInsideTheBodyThrows() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let series = try store.timeSeries("s", of: Int64.self)
        let channel = try store.channel("c", of: Int.self)
        let db = try store.documents("d")
        let result = runBounded {
            try store.transaction { tx in
                // Not written by the transaction yet: a direct write goes through on its own.
                try series.append(1)
                try tx.timeSeries("s", of: Int64.self).append(2)
                try tx.channel("c", of: Int.self).publish(2)
                try tx.documents("d").save(Document(id: "a", fields: [:]))
                for write in [{ _ = try series.append(3) }, { _ = try channel.publish(3) },
                              { _ = try db.save(Document(id: "b", fields: [:])) },
                              { _ = try series.edit(originalSequence: 0, value: 3) }, { try db.delete(id: "a") },
                              // Index configuration of a held database would wait for a build that
                              // waits for the transaction's lock.
                              { _ = try store.documents("d", indexes: [DocumentIndex(name: "x", version: "1", map: { _, _ in })]) },
                              { try db.dropIndex("x") }] {
                    expectInvalidArgument(write)
                }
                // Reads see what is committed.
                #expect(try series.latest()?.value == 1 && (try channel.history().messages.isEmpty))
                #expect(try db.document(id: "a") == nil)
            }
        }
        #expect(result != nil, "deadlock")
        if case .failure(let e)? = result { Issue.record("\(e)") }
        #expect(try series.query(.edits(.all)).events.map(\.value) == [1, 2])
        #expect(try channel.history().messages.map(\.message) == [2])
        #expect(try db.document(id: "b") == nil && db.document(id: "a") != nil)
        // Afterwards the handles write again.
        #expect(try series.append(4).sequence == 2)
    }

    @Test func transactionsDoNotNestAndDieWithTheirBody() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let result = runBounded {
            try store.transaction { tx in
                try tx.timeSeries("s", of: Int64.self).append(1)
                expectInvalidArgument({ try store.transaction { _ in } })
                expectInvalidArgument({ try store.transaction { try $0.timeSeries("s", of: Int64.self).append(9) } })
            }
        }
        #expect(result != nil, "deadlock")
        #expect(try store.timeSeries("s", of: Int64.self).query(.edits(.all)).events.map(\.value) == [1])
        // A Transaction and its handles are dead once the body returned or threw.
        var kept: Transaction?
        var keptSeries: TransactionTimeSeries<Int64>?
        try store.transaction { tx in
            kept = tx
            keptSeries = try tx.timeSeries("s", of: Int64.self)
        }
        let tx = try #require(kept)
        expectInvalidArgument({ try keptSeries?.append(2) })
        expectInvalidArgument({ try tx.timeSeries("s", of: Int64.self) })
        expectInvalidArgument({ try tx.channel("c", of: Int.self) })
        expectInvalidArgument({ try tx.documents("d") })
        #expect(throws: Abandon.self) {
            try store.transaction { tx in
                kept = tx
                try tx.channel("c", of: Int.self).publish(1)
                throw Abandon()
            }
        }
        expectInvalidArgument({ try kept?.channel("c", of: Int.self).publish(2) })
        #expect(try store.channel("c", of: Int.self).history().messages.isEmpty)
        #expect(try store.timeSeries("s", of: Int64.self).bounds().next == 1)
    }

    @Test func closeInsideTheBodyFailsTheTransactionAndAfterwardsTransactionsThrowClosed() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var store = try Store.open(at: tmp.url)
        try store.timeSeries("s", of: Int64.self).append(0)
        let s = store
        let result = runBounded {
            try s.transaction { tx in
                try tx.timeSeries("s", of: Int64.self).append(1)
                try tx.documents("d").save(Document(id: "a", fields: [:]))
                try s.close()
            }
        }
        guard let result else { Issue.record("deadlock"); return }
        #expect(throws: StrataError.closed) { try result.get() }
        #expect(throws: StrataError.closed) { try store.transaction { _ in } }
        store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        #expect(try store.timeSeries("s", of: Int64.self).bounds().next == 1)
        #expect(try store.documents("d").document(id: "a") == nil)
        // Close from another thread while a transaction holds its collections: it waits for it.
        let holding = Signal(), closing = Signal()
        let s2 = store
        Thread {
            _ = holding.wait()
            try? s2.close()
            closing.fire()
        }.start()
        let outcome = runBounded {
            try s2.transaction { tx in
                try tx.documents("d").save(Document(id: "b", fields: [:]))
                holding.fire()
            }
        }
        #expect(outcome != nil, "deadlock")
        #expect(closing.wait(), "close never returned")
        let again = try Store.open(at: tmp.url)
        defer { try? again.close() }
        // Committed before the close or refused by it, never in part.
        let b = try again.documents("d").document(id: "b")
        if case .success? = outcome { #expect(b != nil) } else { #expect(b == nil) }
    }

    @Test func theAsyncTwinAndConcurrentTransactionsFromManyTasks() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url)
        let first = try await store.transaction { tx in
            try tx.timeSeries("s", of: Int64.self).append(-1).sequence
        }
        #expect(first == 0)
        await #expect(throws: Abandon.self) {
            try await store.transaction { tx in
                try tx.timeSeries("s", of: Int64.self).append(-2)
                throw Abandon()
            }
        }
        let results = try await withThrowingTaskGroup(of: [(UInt64, UInt64)].self) { group in
            for t in 0..<8 {
                group.addTask {
                    var mine: [(UInt64, UInt64)] = []
                    for k in 0..<10 {
                        let value = Int64(t * 100 + k)
                        mine.append(try await store.transaction { tx in
                            let e = try tx.timeSeries("s", of: Int64.self).append(value)
                            let tt = try tx.channel("c", of: Int64.self).publish(value)
                            try tx.documents("d").save(Document(id: "t\(t)", fields: ["k": .int(Int64(k))]))
                            return (e.sequence, tt.rawValue)
                        })
                    }
                    return mine
                }
            }
            var all: [[(UInt64, UInt64)]] = []
            for try await r in group { all.append(r) }
            return all
        }
        // Each task's transactions in its order; all of them contiguous; series order = channel order.
        for mine in results {
            #expect(mine.map(\.0) == mine.map(\.0).sorted() && mine.map(\.1) == mine.map(\.1).sorted())
        }
        let pairs = results.flatMap { $0 }.sorted { $0.0 < $1.0 }
        #expect(pairs.map(\.0) == Array(1...80))
        #expect(pairs.map(\.1) == pairs.map(\.1).sorted())
        let series = try blocking { try store.timeSeries("s", of: Int64.self) }
        let events = try blocking { try series.query(.edits(.all)).events }
        let messages = try blocking { try store.channel("c", of: Int64.self).history().messages }
        #expect(events.map(\.sequence) == Array(0...80))
        #expect(events.dropFirst().map(\.value) == messages.map(\.message))
        let db = try blocking { try store.documents("d") }
        for t in 0..<8 { #expect(try blocking { try db.document(id: "t\(t)")?["k"]?.int64Value } == 9) }
        try await store.close()
    }

    /// Random transactions (some throw, some with writes that fail and are caught) against a
    /// model of what must be committed: the series' events and edits, the documents with their
    /// revisions, and the change feed.
    @Test(arguments: [3, 4] as [UInt64])
    func randomTransactionsMatchAModel(seed: UInt64) throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var options = StoreOptions(durability: .buffered)
        options.memtableSize = 64 << 10
        var store = try Store.open(at: tmp.url, options: options)
        defer { try? store.close() }
        var random = SplitMix64(seed: seed)
        // The model: events as (value, original), documents as revision and liveness.
        var events: [(value: Int64, original: UInt64?)] = []
        var revisions: [String: UInt64] = [:]
        var live: [String: Int64] = [:]
        for round in 0..<150 {
            var stagedEvents = events, stagedRevisions = revisions, stagedLive = live
            let throwing = random.chance(150)
            do {
                try store.transaction { tx in
                    let series = try tx.timeSeries("s", of: Int64.self)
                    let db = try tx.documents("d")
                    for _ in 0..<(1 + random.below(6)) {
                        let id = "d\(random.below(8))"
                        let v = Int64(random.below(1000))
                        switch random.below(6) {
                        case 0:
                            let n = 1 + random.below(3)
                            let metas = try series.append(contentsOf: (0..<n).map { v + Int64($0) })
                            #expect(metas.map(\.sequence) == (0..<n).map { UInt64(stagedEvents.count + $0) })
                            stagedEvents += (0..<n).map { (v + Int64($0), nil) }
                        case 1:
                            let target = UInt64(random.below(stagedEvents.count + 2))
                            if Int(target) < stagedEvents.count, stagedEvents[Int(target)].original == nil {
                                #expect(try series.edit(originalSequence: target, value: -v).sequence == UInt64(stagedEvents.count))
                                stagedEvents.append((-v, target))
                            } else {
                                #expect(throws: StrataError.self) { try series.edit(originalSequence: target, value: -v) }
                            }
                        case 2:
                            #expect(try db.save(Document(id: id, fields: ["v": .int(v)])).metadata.revision
                                    == stagedRevisions[id, default: 0] + 1)
                            stagedRevisions[id, default: 0] += 1
                            stagedLive[id] = v
                        case 3:
                            if stagedLive[id] != nil {
                                try db.update(Document(id: id, fields: ["v": .int(v)]))
                                stagedRevisions[id, default: 0] += 1
                                stagedLive[id] = v
                            } else {
                                #expect(throws: StrataError.self) { try db.update(Document(id: id, fields: ["v": .int(v)])) }
                            }
                        case 4:
                            if stagedLive[id] == nil {
                                try db.add(Document(id: id, fields: ["v": .int(v)]))
                                stagedRevisions[id, default: 0] += 1
                                stagedLive[id] = v
                            } else {
                                #expect(throws: StrataError.self) { try db.add(Document(id: id, fields: ["v": .int(v)])) }
                            }
                        default:
                            if stagedLive[id] != nil {
                                try db.delete(id: id)
                                stagedRevisions[id, default: 0] += 1
                                stagedLive[id] = nil
                            } else {
                                #expect(throws: StrataError.self) { try db.delete(id: id) }
                            }
                        }
                    }
                    if throwing { throw Abandon() }
                }
            } catch is Abandon {
                stagedEvents = events
                stagedRevisions = revisions
                stagedLive = live
            }
            (events, revisions, live) = (stagedEvents, stagedRevisions, stagedLive)
            if round % 50 == 49 {
                try store.close()
                store = try Store.open(at: tmp.url, options: options)
            }
            let stored = try store.timeSeries("s", of: Int64.self).query(.edits(.all)).events
            #expect(stored.map(\.sequence) == Array(0..<UInt64(events.count)), "round \(round)")
            #expect(stored.map(\.value) == events.map(\.value) && stored.map(\.originalEvent?.sequence) == events.map(\.original),
                    "round \(round)")
            let db = try store.documents("d")
            let docs = try db.documents(ids: (0..<8).map { "d\($0)" })
            #expect(docs.mapValues { $0["v"]?.int64Value } == live.mapValues { Optional($0) }, "round \(round)")
            #expect(docs.mapValues(\.metadata.revision) == revisions.filter { live[$0.key] != nil }, "round \(round)")
            let feed = try db.changes(since: 0).changes
            let expectedFeed = Dictionary(uniqueKeysWithValues: revisions.map { ($0.key, "\($0.value) \(live[$0.key] == nil)") })
            #expect(Dictionary(uniqueKeysWithValues: feed.map { ($0.id, "\($0.revision) \($0.isDeletion)") }) == expectedFeed,
                    "round \(round)")
        }
    }

    /// A reader reads the channel, then the series, then the counter document, then the channel
    /// again, each at its own moment, while a writer commits transactions that write i to all
    /// three: a transaction visible in part would make a later read show less than an earlier one.
    @Test(arguments: [1, 2] as [UInt64])
    func readersNeverSeeHalfATransaction(seed: UInt64) throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var options = StoreOptions(durability: .buffered)
        options.memtableSize = 64 << 10  // flushes happen meanwhile
        let store = try Store.open(at: tmp.url, options: options)
        defer { try? store.close() }
        let series = try store.timeSeries("s", of: Int64.self)
        let channel = try store.channel("c", of: Int64.self)
        let db = try store.documents("d")
        let done = Atomic<Bool>(false)
        let problems = Mutex<[String]>([])
        let reads = Atomic<Int>(0)
        let finished = Signal()
        let reader = Thread {
            defer { finished.fire() }
            do {
                while !done.load(ordering: .acquiring) {
                    let c1 = try channel.history(limit: 1).messages.last?.message ?? -1
                    let s = try series.latest()?.value ?? -1
                    let d = try db.document(id: "counter")?["last"]?.int64Value ?? -1
                    let c2 = try channel.history(limit: 1).messages.last?.message ?? -1
                    if !(c1 <= s && s <= d && d <= c2) {
                        problems.withLock { $0.append("channel \(c1), series \(s), counter \(d), channel \(c2)") }
                    }
                    reads.add(1, ordering: .relaxed)
                }
            } catch {
                problems.withLock { $0.append("\(error)") }
            }
        }
        reader.start()
        var random = SplitMix64(seed: seed)
        var last: Int64 = -1
        for i in Int64(0)..<600 {
            let throwing = random.chance(100)
            do {
                try store.transaction { tx in
                    let s = try tx.documents("d")
                    let t = try tx.timeSeries("s", of: Int64.self)
                    // The collections are taken in a random order: visibility must not depend on it.
                    switch random.below(3) {
                    case 0:
                        try t.append(i)
                        try tx.channel("c", of: Int64.self).publish(i)
                        try s.save(Document(id: "counter", fields: ["last": .int(i)]))
                    case 1:
                        try s.save(Document(id: "counter", fields: ["last": .int(i)]))
                        try tx.channel("c", of: Int64.self).publish(i)
                        try t.append(contentsOf: [i, i])
                    default:
                        try tx.channel("c", of: Int64.self).publish(i)
                        try s.save(Document(id: "e\(i)", fields: [:]))
                        try t.append(i)
                        try s.save(Document(id: "counter", fields: ["last": .int(i)]))
                    }
                    if throwing { throw Abandon() }
                }
                last = i
            } catch is Abandon {}
        }
        done.store(true, ordering: .releasing)
        #expect(finished.wait(seconds: 60), "reader never finished")
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0.prefix(5) })")
        #expect(reads.load(ordering: .relaxed) > 0)
        #expect(try series.latest()?.value == last && (try db.document(id: "counter")?["last"]?.int64Value) == last)
    }
}

/// The same document writes through a database's handle or a transaction's.
private enum DocumentWriter {
    case database(DocumentDatabase)
    case transaction(TransactionDocuments)

    init(database: DocumentDatabase) { self = .database(database) }
    init(transaction: TransactionDocuments) { self = .transaction(transaction) }

    func add(_ d: Document) throws -> Document {
        switch self {
        case .database(let db): try db.add(d)
        case .transaction(let tx): try tx.add(d)
        }
    }

    func update(_ d: Document) throws -> Document {
        switch self {
        case .database(let db): try db.update(d)
        case .transaction(let tx): try tx.update(d)
        }
    }

    func save(_ d: Document) throws -> Document {
        switch self {
        case .database(let db): try db.save(d)
        case .transaction(let tx): try tx.save(d)
        }
    }

    func delete(id: String) throws {
        switch self {
        case .database(let db): try db.delete(id: id)
        case .transaction(let tx): try tx.delete(id: id)
        }
    }
}
