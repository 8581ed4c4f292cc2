import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The one commit path (Commit.swift, Engine+Commit.swift): participants derive records that
// commit if and only if the change does, `Engine.write` numbers commits in order, and observers
// see commits in commit order.

/// Adds an "outbox" key-value row `outbox/<series id>/<sequence:08>` for every event a commit
/// appends to a time series; throws while `refusing` is set.
private final class Outbox: CommitParticipant {
    let refusing = Atomic<Bool>(false)
    let prepared = Atomic<Int>(0)

    static func key(series: UInt64, sequence: UInt64) -> [UInt8] {
        let s = String(sequence)
        return Array("outbox/\(series)/\(String(repeating: "0", count: max(0, 8 - s.count)) + s)".utf8)
    }

    func prepare(_ batch: inout CommitBatch) throws {
        prepared.add(1, ordering: .relaxed)
        if refusing.load(ordering: .relaxed) { throw StrataError.conflict("the outbox refuses the commit") }
        for case let events as SeriesState.Events in batch.changes {
            for (k, record) in events.records.enumerated() {
                batch.records.put(Self.key(series: events.seriesID, sequence: events.first + UInt64(k)), record)
            }
        }
    }
}

private struct Abandon: Error {}

/// Calls the synchronous twin from an `async` context (where Swift picks the `async` one).
private func blocking<T>(_ body: () throws -> T) rethrows -> T { try body() }

@Suite("Commit path")
struct CommitPathTests {
    /// The outbox rows of series `id`, as sequences.
    private func outbox(_ store: Store, series id: UInt64) throws -> [UInt64] {
        let prefix = Array("outbox/\(id)/".utf8)
        return try store.scan(from: prefix, to: prefix.dropLast() + [UInt8(ascii: "/") + 1]).map {
            UInt64(String(decoding: $0.key.dropFirst(prefix.count), as: UTF8.self)) ?? .max
        }
    }

    @Test func aParticipantsRecordsCommitIfAndOnlyIfTheChangeDoes() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let participant = Outbox()
        store.engine.register(participant)
        #expect(store.engine.hasParticipants)
        let series = try store.timeSeries("s", of: Int64.self)
        let id = series.state.id
        try series.append(0)
        try series.append(contentsOf: [1, 2])
        try series.edit(originalSequence: 1, value: -1)
        try store.transaction { tx in
            let s = try tx.timeSeries("s", of: Int64.self)
            try s.append(4)
            try s.edit(originalSequence: 4, value: -4)
            try tx.documents("d").save(Document(id: "x", fields: [:]))
        }
        #expect(throws: Abandon.self) {
            try store.transaction { tx in
                try tx.timeSeries("s", of: Int64.self).append(99)
                throw Abandon()
            }
        }
        // A write that fails on its own (a timestamp before the latest) adds nothing either.
        #expect(throws: StrataError.self) { try series.append(98, timestamp: Date(timeIntervalSince1970: 0)) }
        #expect(try outbox(store, series: id) == [0, 1, 2, 3, 4, 5])
        // Each row holds its event's record, as the series stores it.
        for sequence in try outbox(store, series: id) {
            let stored = try store.engine.get(EventRecord.key(series: id, sequence: sequence))
            let row = try store.get(Outbox.key(series: id, sequence: sequence))
            #expect(stored != nil && row == stored)
        }
        // And across a reopen: the rows were part of the events' batches.
        try store.close()
        let again = try Store.open(at: tmp.url)
        defer { try? again.close() }
        #expect(try outbox(again, series: id) == [0, 1, 2, 3, 4, 5])
    }

    @Test func aParticipantThatThrowsFailsTheWriteWithNothingCommitted() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        let participant = Outbox()
        store.engine.register(participant)
        let series = try store.timeSeries("s", of: Int64.self)
        let channel = try store.channel("c", of: Int.self)
        let db = try store.documents("d")
        try series.append(0)
        let before = store.engine.visibleSequence.load(ordering: .acquiring)
        participant.refusing.store(true, ordering: .relaxed)
        #expect(throws: StrataError.conflict("the outbox refuses the commit")) { try series.append(1) }
        #expect(throws: StrataError.conflict("the outbox refuses the commit")) { try channel.publish(1) }
        #expect(throws: StrataError.conflict("the outbox refuses the commit")) { try db.save(Document(id: "a", fields: [:])) }
        #expect(throws: StrataError.conflict("the outbox refuses the commit")) {
            try store.transaction { tx in
                try tx.timeSeries("s", of: Int64.self).append(1)
                try tx.channel("c", of: Int.self).publish(1)
                try tx.documents("d").save(Document(id: "a", fields: [:]))
            }
        }
        #expect(store.engine.visibleSequence.load(ordering: .acquiring) == before)
        #expect(try series.bounds().next == 1)
        #expect(try channel.history().messages.isEmpty)
        #expect(try db.document(id: "a") == nil && db.changes(since: 0).changes.isEmpty)
        // Once it accepts again, every collection goes on where it stood: no gap, no stale head.
        participant.refusing.store(false, ordering: .relaxed)
        #expect(try series.append(1).sequence == 1)
        try channel.publish(1)
        #expect(try db.save(Document(id: "a", fields: [:])).metadata.revision == 1)
        #expect(try db.changes(since: 0).changes.map(\.sequence) == [1])
        #expect(try outbox(store, series: series.state.id) == [0, 1])
        #expect(try channel.history().messages.map(\.message) == [1])
    }

    @Test func engineWriteReturnsIncreasingSequenceNumbers() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        store.engine.register(Outbox())
        let series = try store.timeSeries("s", of: Int64.self)
        var last: UInt64 = 0
        for k in 0..<20 {
            var batch = WriteBatch()
            for j in 0...(k % 4) { batch.put(Array("k\(k)/\(j)".utf8), [UInt8(j)]) }
            let sequence = try store.engine.write(batch)
            #expect(sequence > last, "write \(k): \(sequence) after \(last)")
            // A snapshot at the commit's sequence sees the whole batch.
            #expect(store.engine.visibleSequence.load(ordering: .acquiring) >= sequence)
            #expect(try store.get(Array("k\(k)/\(k % 4)".utf8)) == [UInt8(k % 4)])
            last = sequence
            if k % 3 == 0 { try series.append(Int64(k)) }
        }
        // An empty batch commits nothing and returns the last commit's sequence.
        let visible = store.engine.visibleSequence.load(ordering: .acquiring)
        #expect(try store.engine.write(WriteBatch()) == visible)
        #expect(store.engine.visibleSequence.load(ordering: .acquiring) == visible)
    }

    @Test func observersSeeCommitsInCommitOrderUnderConcurrentWriters() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        let writers = 4, perWriter = 60
        let states = try blocking { try (0..<writers).map { try store.timeSeries("s\($0)", of: Int64.self).state } }
        let ids = Dictionary(uniqueKeysWithValues: states.enumerated().map { ($1.id, $0) })
        // One element per commit of a series: its sequence, its series' writer, its first event.
        let stream = try store.broadcaster.subscribe(
            after: 0, buffering: .bounded(writers * perWriter * 2), overflow: { "commit-order test" },
            transform: { commit -> [(UInt64, Int, UInt64, Int)] in
                commit.changes.compactMap { change in
                    guard let e = change as? SeriesState.Events, let w = ids[e.seriesID] else { return nil }
                    return (commit.sequence, w, e.first, e.records.count)
                }
            })
        let done = Signal()
        let finished = Atomic<Int>(0)
        for w in 0..<writers {
            Thread {
                defer { if finished.add(1, ordering: .relaxed).newValue == writers { done.fire() } }
                do {
                    let series = TimeSeries<Int64>(state: states[w])
                    for k in 0..<perWriter {
                        switch k % 3 {
                        case 0: try series.append(Int64(k))
                        case 1: try series.append(contentsOf: [Int64(k), Int64(k)])
                        default:
                            _ = try store.transaction { tx in
                                try tx.timeSeries("s\(w)", of: Int64.self).append(Int64(k))
                                // Every writer's transactions also touch one shared series.
                                try tx.timeSeries("s\((w + 1) % writers)", of: Int64.self).append(-1)
                            }
                        }
                    }
                } catch {
                    Issue.record("writer \(w): \(error)")
                }
            }.start()
        }
        #expect(done.wait(seconds: 120), "writers never finished")
        let total = blocking { states.reduce(0) { $0 + Int((try? TimeSeries<Int64>(state: $1).bounds().next) ?? 0) } }
        var seen: [(UInt64, Int, UInt64, Int)] = []
        var events = 0
        for try await element in stream {
            seen.append(element)
            events += element.3
            if events == total { break }
        }
        #expect(events == total)
        // Commit order: sequences never go back (a transaction's two changes share one).
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        // Each series' events arrive in order with no gap.
        for w in 0..<writers {
            var next: UInt64 = 0
            for e in seen where e.1 == w {
                #expect(e.2 == next, "series s\(w): commit of \(e.2) after \(next)")
                next = e.2 + UInt64(e.3)
            }
        }
        try await store.close()
    }
}
