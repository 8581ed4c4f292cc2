import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The reads of a transaction's handles (Transaction.swift): they see the transaction's staged
// writes on top of what is committed, while the store's ordinary handles see only what is
// committed; a failed write, and a body that throws, leave nothing for them to see.

private struct Abandon: Error {}

/// A message whose encoding fails when `ok` is false.
private struct Refused: Codable, Sendable, Equatable {
    var ok: Bool

    func encode(to encoder: any Encoder) throws {
        if !ok { throw Abandon() }
        var c = encoder.singleValueContainer()
        try c.encode(ok)
    }

    init(ok: Bool) { self.ok = ok }

    init(from decoder: any Decoder) throws {
        ok = try decoder.singleValueContainer().decode(Bool.self)
    }
}

@Suite("Transactions read their own writes")
struct TransactionReadTests {
    @Test func documentsSeeTheirSavesAndDeletes() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let db = try store.documents("book")
        let stored = try db.save(Document(id: "a", fields: ["n": 1]))
        try db.save(Document(id: "b", fields: ["n": 2]))

        let seen = try store.transaction { tx -> Document? in
            let book = try tx.documents("book")
            #expect(try book.document(id: "a") == stored, "before any write: the stored version")
            #expect(try book.document(id: "zz") == nil)
            var changed = Document(id: "a", fields: ["n": 10])
            changed.attachments["note"] = Attachment(data: Data("hi".utf8), contentType: "text/plain")
            let saved = try book.save(changed)
            let read = try #require(try book.document(id: "a"))
            #expect(read == saved && read["n"] == 10 && read.attachments["note"]?.data == Data("hi".utf8))
            #expect(read.metadata.revisionID != stored.metadata.revisionID)
            #expect(try db.document(id: "a") == stored, "an ordinary handle reads what is committed")
            try book.delete(id: "b")
            #expect(try book.document(id: "b") == nil, "deleted in the transaction")
            #expect(try db.document(id: "b")?["n"] == 2)
            let added = try book.add(Document(id: "c", fields: ["n": 3]))
            #expect(try book.document(id: "c") == added)
            try book.delete(id: "c")
            #expect(try book.document(id: "c") == nil)
            try book.save(Document(id: "b", fields: ["n": 20]))
            #expect(try book.document(id: "b")?["n"] == 20, "saved again after its deletion")
            return try book.document(id: "a")
        }
        #expect(try db.document(id: "a") == seen, "the transaction read what the commit stored")
        #expect(try db.document(id: "b")?["n"] == 20 && db.document(id: "c") == nil)
    }

    @Test func timeSeriesSeesItsAppendsAndEdits() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let series = try store.timeSeries("s", of: Int64.self, options: TimeSeriesOptions(retainedRange: .limit(4)))
        try series.append(contentsOf: [0, 1, 2])

        try store.transaction { tx in
            let s = try tx.timeSeries("s", of: Int64.self)
            #expect(try s.latest() == series.latest() && s.latest()?.value == 2, "before any write: the committed latest")
            #expect(try s.bounds() == SeriesBounds(count: 3, firstRetained: 0, next: 3))
            #expect(try s.event(sequence: 1)?.value == 1 && s.event(sequence: 3) == nil)
            try s.append(3)
            try s.append(contentsOf: [4, 5])
            #expect(try s.latest()?.sequence == 5 && s.latest()?.value == 5)
            #expect(try s.bounds() == SeriesBounds(count: 4, firstRetained: 2, next: 6), "the retained range applies to staged appends")
            #expect(try s.event(sequence: 4)?.value == 4)
            #expect(try s.event(sequence: 1) == nil, "pushed out by the transaction's appends")
            #expect(try s.event(sequence: 2)?.value == 2, "a committed event")
            #expect(try s.event(sequence: 6) == nil)
            let edit = try s.edit(originalSequence: 4, value: 40)
            let read = try #require(try s.latest())
            #expect(read.metadata == edit && read.value == 40 && read.originalEvent?.sequence == 4)
            #expect(try s.event(sequence: 6)?.value == 40 && s.event(sequence: 6)?.isEditEvent == true)
            #expect(try s.edit(originalSequence: 3, value: 30).sequence == 7)
            #expect(try s.event(sequence: 7)?.originalEvent?.sequence == 3 && s.event(sequence: 7)?.value == 30)
            // The store's own handle sees none of it.
            #expect(try series.latest()?.value == 2 && series.bounds().next == 3)
        }
        #expect(try series.latest()?.sequence == 7 && series.bounds() == SeriesBounds(count: 4, firstRetained: 4, next: 8))
        // A later transaction reads the committed events through its handle before it writes.
        try store.transaction { tx in
            let s = try tx.timeSeries("s", of: Int64.self)
            #expect(try s.event(sequence: 6)?.value == 40 && s.event(sequence: 3) == nil && s.latest()?.sequence == 7)
            #expect(try s.bounds() == SeriesBounds(count: 4, firstRetained: 4, next: 8))
        }
    }

    @Test func channelSeesItsPublishes() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let room = try store.channel("room", of: String.self)
        let first = try room.publish("committed")

        let staged = try store.transaction { tx -> [Timetoken] in
            let r = try tx.channel("room", of: String.self)
            #expect(try r.stagedMessages().isEmpty)
            #expect(try r.lastMessage()?.message == "committed" && r.lastMessage()?.timetoken == first)
            let one = try r.publish("one", meta: ["k": 1], publisher: "alice")
            let more = try r.publish(contentsOf: ["two", "three"])
            let messages = try r.stagedMessages()
            #expect(messages.map(\.message) == ["one", "two", "three"])
            #expect(messages.map(\.timetoken) == [one] + more)
            #expect(messages[0].meta == ["k": 1] && messages[0].publisher == "alice")
            #expect(try r.lastMessage()?.message == "three")
            #expect(try room.history().messages.map(\.message) == ["committed"], "not in the history before the commit")
            return [one] + more
        }
        let history = try room.history().messages
        #expect(history.map(\.message) == ["committed", "one", "two", "three"] && Array(history.map(\.timetoken).dropFirst()) == staged)
        try store.transaction { (tx: Transaction) throws in
            #expect(try tx.channel("room", of: String.self).stagedMessages().isEmpty, "a new transaction starts empty")
        }
    }

    @Test func aBodyThatThrowsLeavesNoTrace() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let db = try store.documents("d")
        try db.save(Document(id: "a", fields: ["n": 1]))
        let series = try store.timeSeries("s", of: Int64.self)
        try series.append(1)
        let room = try store.channel("room", of: String.self)

        #expect(throws: Abandon.self) {
            try store.transaction { tx in
                let d = try tx.documents("d"), s = try tx.timeSeries("s", of: Int64.self), r = try tx.channel("room", of: String.self)
                try d.save(Document(id: "a", fields: ["n": 2]))
                try d.delete(id: "a")
                try s.append(2)
                try r.publish("lost")
                #expect(try d.document(id: "a") == nil && s.latest()?.value == 2 && r.lastMessage()?.message == "lost")
                throw Abandon()
            }
        }
        #expect(try db.document(id: "a")?["n"] == 1 && series.bounds().next == 1 && room.history().messages.isEmpty)
        try store.transaction { (tx: Transaction) throws in
            #expect(try tx.documents("d").document(id: "a")?["n"] == 1)
            #expect(try tx.timeSeries("s", of: Int64.self).latest()?.value == 1)
            #expect(try tx.timeSeries("s", of: Int64.self).bounds() == SeriesBounds(count: 1, firstRetained: 0, next: 1))
            #expect(try tx.channel("room", of: String.self).stagedMessages().isEmpty)
            #expect(try tx.channel("room", of: String.self).lastMessage() == nil)
        }
    }

    @Test func aFailedWriteLeavesTheReadsAsTheyWere() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let t0 = Date(timeIntervalSince1970: 1_000)

        let (doc, latest) = try store.transaction { tx -> (Document?, Event<Int64>?) in
            let d = try tx.documents("d")
            try d.save(Document(id: "a", fields: ["n": 1]))
            let before = try d.document(id: "a")
            #expect(throws: StrataError.self) { try d.add(Document(id: "a", fields: ["n": 2])) }
            #expect(throws: StrataError.self) { try d.update(Document(id: "nobody", fields: [:])) }
            #expect(throws: StrataError.self) { try d.delete(id: "nobody") }
            #expect(try d.document(id: "a") == before && d.document(id: "nobody") == nil)

            let s = try tx.timeSeries("s", of: Int64.self)
            try s.append(1, timestamp: t0.addingTimeInterval(10))
            let latest = try s.latest()
            #expect(throws: StrataError.self) { try s.append(2, timestamp: t0) }
            #expect(throws: StrataError.self) { try s.edit(originalSequence: 5, value: 3) }
            #expect(try s.latest() == latest && s.bounds() == SeriesBounds(count: 1, firstRetained: 0, next: 1))
            #expect(try s.event(sequence: 1) == nil)

            let r = try tx.channel("c", of: Refused.self)
            try r.publish(Refused(ok: true))
            #expect(throws: (any Error).self) { try r.publish(contentsOf: [Refused(ok: true), Refused(ok: false)]) }
            #expect(try r.stagedMessages().map(\.message) == [Refused(ok: true)])
            return (try d.document(id: "a"), latest)
        }
        #expect(try store.documents("d").document(id: "a") == doc)
        #expect(try store.timeSeries("s", of: Int64.self).latest() == latest)
        #expect(try store.channel("c", of: Refused.self).history().messages.map(\.message) == [Refused(ok: true)])
    }

    @Test func readsNeedReadTopicInASession() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        var policy = SecurityPolicy()
        policy.roles["writer"] = Role(paths: ["w": [.modifyTopic, .updateTopic]])
        policy.roles["reader"] = Role(paths: ["w": [.modifyTopic, .updateTopic, .readTopic]])
        policy.principals["wo"] = ["writer"]
        policy.principals["rw"] = ["reader"]
        try store.setSecurityPolicy(policy)
        func denied(_ body: () throws -> Void) {
            #expect(throws: StrataError.permissionDenied(principal: "wo", permission: .readTopic, path: "w")) { try body() }
        }
        try store.session(principal: "wo").transaction { tx in
            let d = try tx.documents("w"), s = try tx.timeSeries("w", of: Int64.self), c = try tx.channel("w", of: Int64.self)
            try d.save(Document(id: "a", fields: [:]))
            try s.append(1)
            try c.publish(1)
            denied { _ = try d.document(id: "a") }
            denied { _ = try s.latest() }
            denied { _ = try s.event(sequence: 0) }
            denied { _ = try s.bounds() }
            denied { _ = try c.stagedMessages() }
            denied { _ = try c.lastMessage() }
        }
        try store.session(principal: "rw").transaction { tx in
            let d = try tx.documents("w"), s = try tx.timeSeries("w", of: Int64.self), c = try tx.channel("w", of: Int64.self)
            try s.append(2)
            try c.publish(2)
            #expect(try d.document(id: "a") != nil && s.latest()?.value == 2 && s.event(sequence: 0)?.value == 1)
            #expect(try s.bounds().next == 2 && c.stagedMessages().map(\.message) == [2] && c.lastMessage()?.message == 2)
        }
    }

    @Test func handlesCannotBeReadAfterTheirTransaction() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let (d, s, c) = try store.transaction { tx in
            (try tx.documents("d"), try tx.timeSeries("s", of: Int64.self), try tx.channel("c", of: Int64.self))
        }
        func ended(_ body: () throws -> Void) {
            do {
                try body()
                Issue.record("a handle read after its transaction succeeded")
            } catch StrataError.invalidArgument {
            } catch {
                Issue.record("threw \(error)")
            }
        }
        ended { _ = try d.document(id: "a") }
        ended { _ = try s.latest() }
        ended { _ = try s.event(sequence: 0) }
        ended { _ = try s.bounds() }
        ended { _ = try c.stagedMessages() }
        ended { _ = try c.lastMessage() }
    }
}
