import Foundation
import Strata
import Testing

/// The store and its raw key-value data through the public API only (`import Strata`, no
/// `@testable`): what a program embedding Strata can do, it can do from here.
@Suite struct StoreAPITests {
    @Test func keyValueDataSurvivesReopen() throws {
        let temporary = TemporaryStore()
        var store = try temporary.open()
        try store.put(Array("user/42".utf8), Array("Ada".utf8))
        var batch = WriteBatch()
        batch.put(Array("user/43".utf8), Array("Grace".utf8))
        batch.put(Array("tmp/1".utf8), Array("x".utf8))
        batch.deleteRange(from: Array("tmp/".utf8), to: Array("tmp0".utf8))
        try store.write(batch)
        #expect(Store.opened(at: temporary.directory) === store)
        try store.close()
        #expect(Store.opened(at: temporary.directory) == nil)

        store = try temporary.open()
        #expect(try store.get(Array("user/42".utf8)) == Array("Ada".utf8))
        #expect(try store.get(Array("tmp/1".utf8)) == nil)
        let users = try store.scan(from: Array("user/".utf8), to: Array("user0".utf8))
        #expect(users.map { String(decoding: $0.key, as: UTF8.self) } == ["user/42", "user/43"])
        try store.close()
    }

    @Test func aClosedStoreThrowsClosed() throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        let prices = try store.timeSeries("prices/ACME", of: Double.self)
        try store.close()
        try store.close()   // idempotent
        let error = #expect(throws: StrataError.self) { try store.put([1], [2]) }
        #expect(isStrataError(error) { if case .closed = $0 { true } else { false } })
        let append = #expect(throws: StrataError.self) { try prices.append(1) }
        #expect(isStrataError(append) { if case .closed = $0 { true } else { false } })
    }

    @Test func aTransactionIsAllOrNothing() throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        struct Rollback: Error {}
        #expect(throws: Rollback.self) {
            try store.transaction { tx in
                try tx.timeSeries("fills/ACME", of: Double.self).append(1)
                try tx.channel("orders", of: String.self).publish("filled")
                throw Rollback()
            }
        }
        #expect(try store.timeSeries("fills/ACME", of: Double.self).query(.values).events.isEmpty)
        #expect(try store.channel("orders", of: String.self).history().messages.isEmpty)

        let saved = try store.transaction { tx in
            let fill = try tx.timeSeries("fills/ACME", of: Double.self).append(101.5)
            try tx.channel("orders", of: String.self).publish("filled")
            return try tx.documents("book").save(Document(id: "ACME", fields: ["event": .int(Int64(fill.sequence))]))
        }
        #expect(saved.metadata.id == "ACME")
        #expect(try store.timeSeries("fills/ACME", of: Double.self).query(.values).events.map(\.value) == [101.5])
        #expect(try store.channel("orders", of: String.self).history().messages.map(\.message) == ["filled"])
        #expect(try store.documents("book").document(id: "ACME")?["event"] == .int(0))
        try store.close()
    }

    @Test func theAsyncTwinsAndStreamsWorkFromATask() async throws {
        let temporary = TemporaryStore()
        let store = try await Store.open(at: temporary.directory)
        let prices = try await store.timeSeries("prices/ACME", of: Double.self)
        try await prices.append(100)
        var events = prices.subscribe().makeAsyncIterator()
        let first = try await events.next()
        #expect(first?.value == 100)                    // the subscription range: the latest event
        try await prices.append(101)
        #expect(try await events.next()?.value == 101)  // then each event as it commits
        try await store.close()
        do {
            while try await events.next() != nil {}
            Issue.record("the stream finished without an error at close")
        } catch {
            #expect(isStrataError(error) { if case .closed = $0 { true } else { false } })
        }
    }
}
