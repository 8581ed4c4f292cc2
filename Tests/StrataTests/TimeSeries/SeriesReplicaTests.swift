import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A replicating series' local half (FORMAT.md §14.7), without a gateway: the one-writer rule
/// (a reader's or an unanswered claimer's writes are typed errors, across reopens), the events a
/// writer uploads, and the events a reader applies at the writer's sequences.
@Suite struct SeriesReplicaTests {
    static let url = "http://127.0.0.1:1/main"

    struct Fixture {
        let dir: TemporaryDirectory
        var store: Store

        init() throws {
            dir = try TemporaryDirectory()
            store = try Store.open(at: dir.url)
        }

        mutating func reopen() throws {
            try store.close()
            store = try Store.open(at: dir.url)
        }

        func prices() throws -> TimeSeries<Double> { try store.timeSeries("prices/AAPL", of: Double.self) }

        func close() {
            try? store.close()
            dir.remove()
        }
    }

    static func isConflict(_ error: any Error) -> Bool {
        if case StrataError.conflict = error { return true }
        return false
    }

    static func value(_ d: Double) -> [UInt8] {
        var out: [UInt8] = []
        try! ValueCodec<Double>().encode(d, into: &out)
        return out
    }

    @Test("a reader refuses appends and edits with a conflict, also after a reopen; pulled events land at the writer's sequences")
    func readerAppliesAndRefuses() throws {
        var f = try Fixture()
        defer { f.close() }
        let prices = try f.prices()
        #expect(try prices.state.beginReplication(pushes: false) == nil)
        #expect(prices.state.replicationRole == .reader)
        #expect { try prices.append(1.5) } throws: { Self.isConflict($0) }
        let t0: Int64 = 1_700_000_000_000
        // The gateway's series starts at 5 (the writer's retained range had moved on).
        try prices.state.applyPulled([
            .init(sequence: 5, timestamp: t0, author: "w", value: Self.value(10), original: nil),
            .init(sequence: 6, timestamp: t0 + 1, author: "w", value: Self.value(11), original: nil),
            .init(sequence: 7, timestamp: t0 + 1, author: "x", value: Self.value(12), original: nil),
            .init(sequence: 8, timestamp: t0 + 2, author: "w", value: Self.value(10.5), original: 5),
        ], checkpoint: Self.url, since: 40)
        let all = try prices.query(.edits(.all)).events
        #expect(all.map(\.sequence) == [5, 6, 7, 8])
        #expect(all.map(\.value) == [10, 11, 12, 10.5])
        #expect(all.map(\.author) == ["w", "w", "x", "w"])
        #expect(all.map(\.timestamp.timeIntervalSince1970) == [1_700_000_000, 1_700_000_000.001, 1_700_000_000.001, 1_700_000_000.002])
        #expect(all[3].originalEvent?.sequence == 5)
        #expect(try prices.query(.values).events.map(\.value) == [10.5, 11, 12])
        #expect(try prices.bounds().firstRetained == 5 && prices.bounds().next == 9)
        #expect(try prices.state.replicaCounter(prices.state.replica.checkpoint(Self.url), what: "t") == 40)
        // A page pulled again changes nothing; a gap is the gateway's fault.
        try prices.state.applyPulled([.init(sequence: 6, timestamp: t0 + 1, author: "w", value: Self.value(11), original: nil)],
                                     checkpoint: Self.url, since: 40)
        #expect(try prices.bounds().next == 9)
        #expect(throws: StrataError.self) {
            try prices.state.applyPulled([.init(sequence: 10, timestamp: t0 + 3, author: "w", value: Self.value(1), original: nil)],
                                         checkpoint: Self.url, since: 41)
        }
        #expect(try prices.bounds().next == 9)
        try f.reopen()
        let again = try f.prices()
        #expect(again.state.replicationRole == .reader)
        #expect { try again.append(2) } throws: { Self.isConflict($0) }
        #expect { try again.edit(originalSequence: 6, value: 2) } throws: { Self.isConflict($0) }
        #expect(try again.query(.edits(.all)).events.map(\.sequence) == [5, 6, 7, 8])
        // The catalog payload is layout 2.
        #expect(try f.store.catalog.entry(kind: .timeSeries, name: "prices/AAPL")?.payload.first == 2)
    }

    @Test("a claim not yet answered refuses local writes; granted, the store writes and its events are read back for upload as JSON")
    func claimThenWrite() throws {
        var f = try Fixture()
        defer { f.close() }
        let prices = try f.prices()
        let id = try #require(try prices.state.beginReplication(pushes: true))
        #expect(prices.state.replicationRole == .claiming(writerID: id))
        #expect { try prices.append(1.5) } throws: { Self.isConflict($0) }
        try f.reopen()
        let reopened = try f.prices()
        #expect(try reopened.state.beginReplication(pushes: true) == id)
        #expect(try reopened.state.claimAnswered(granted: true))
        #expect(reopened.state.replicationRole == .writer(writerID: id))
        try reopened.append(1.5, timestamp: Date(timeIntervalSince1970: 1_700_000_000), author: "me")
        try reopened.append(2.5, timestamp: Date(timeIntervalSince1970: 1_700_000_001), author: "me")
        try reopened.edit(originalSequence: 0, value: 1.75, author: "me")
        let (events, next) = try reopened.state.events(from: 1, limit: 10)
        #expect(next == 3)
        #expect(events.map(\.sequence) == [1, 2])
        #expect(events.map(\.value) == [.double(2.5), .double(1.75)])
        #expect(events.map(\.original) == [nil, 0])
        #expect(events[0].timestamp == 1_700_000_001_000 && events[0].author == "me")
        try reopened.state.setUploaded(3, url: Self.url)
        #expect(try reopened.state.replicaCounter(reopened.state.replica.uploaded(Self.url), what: "t") == 3)
        // A writer applying its own events again skips them.
        try reopened.state.applyPulled([.init(sequence: 1, timestamp: 1_700_000_001_000, author: "me", value: Self.value(2.5), original: nil)],
                                       checkpoint: Self.url, since: 9)
        #expect(try reopened.bounds().next == 3)
    }

    @Test("a refused claim makes a series without events a reader; one with events stays claiming, and a pull-only start of it is a conflict")
    func refusedClaims() throws {
        let f = try Fixture()
        defer { f.close() }
        let empty = try f.store.timeSeries("empty", of: Double.self)
        _ = try empty.state.beginReplication(pushes: true)
        #expect(try empty.state.claimAnswered(granted: false))
        #expect(empty.state.replicationRole == .reader)

        let mine = try f.store.timeSeries("mine", of: Double.self)
        try mine.append(1)
        #expect { try mine.state.beginReplication(pushes: false) } throws: { Self.isConflict($0) }
        #expect(mine.state.replicationRole == nil)
        _ = try mine.state.beginReplication(pushes: true)
        #expect(try mine.state.claimAnswered(granted: false) == false)
        if case .claiming? = mine.state.replicationRole {} else { Issue.record("\(String(describing: mine.state.replicationRole))") }
        #expect(try mine.query(.values).events.map(\.value) == [1])
    }

    @Test("payload layout 2 carries the role; layout 1 has none; an unknown role is corruption")
    func payloadBytes() throws {
        var payload = SeriesPayload(typeName: "Double", options: TimeSeriesOptions())
        #expect(payload.encode().first == 1)
        let id = [UInt8](repeating: 7, count: 16)
        for role in [SeriesReplicationRole.claiming(writerID: id), .writer(writerID: id), .reader] {
            payload.replication = role
            let bytes = payload.encode()
            #expect(bytes.first == 2)
            #expect(try SeriesPayload.decode(bytes, name: "s").replication == role)
        }
        payload.replication = .reader
        var bad = payload.encode()
        bad[bad.count - 1] = 9
        #expect(throws: StrataError.self) { try SeriesPayload.decode(bad, name: "s") }
        var truncated = payload.encode()
        truncated.removeLast()
        #expect(throws: StrataError.self) { try SeriesPayload.decode(truncated, name: "s") }
        #expect(SeriesReplicationRole.text([0, 1, 0xab, 0xff] + [UInt8](repeating: 0, count: 12)) == "0001abff" + String(repeating: "0", count: 24))
    }

    @Test("a writer's append in a transaction wakes the upload when the transaction commits")
    func transactionWakesTheUploadAtCommit() throws {
        let f = try Fixture()
        defer { f.close() }
        let prices = try f.prices()
        _ = try #require(try prices.state.beginReplication(pushes: true))
        #expect(try prices.state.claimAnswered(granted: true))
        let before = prices.state.uploadSignal.generation
        try f.store.transaction { tx in
            _ = try tx.timeSeries("prices/AAPL", of: Double.self).append(1.5)
            #expect(prices.state.uploadSignal.generation == before)
        }
        #expect(prices.state.uploadSignal.generation > before)
        #expect(try prices.state.events(from: 0, limit: 10).events.count == 1)
    }
}
