import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A clock tests move by hand: starts at 1,000,000,000,000 ms and moves only when told.
final class ManualClock: Sendable {
    private let ms = Mutex<Int64>(1_000_000_000_000)
    var now: Date { SeriesTime.date(ms.withLock { $0 }) }
    func advance(_ delta: Int64) { ms.withLock { $0 += delta } }
    func set(_ value: Int64) { ms.withLock { $0 = value } }
    var milliseconds: Int64 { ms.withLock { $0 } }
}

func openStore(_ dir: TemporaryDirectory, clock: ManualClock? = nil, principal: String = "tester",
               durability: Durability = .buffered, small: Bool = false) throws -> Store {
    var options = StoreOptions(durability: durability)
    options.principal = principal
    if let clock { options.clock = { clock.now } }
    if small {
        options.memtableSize = 64 << 10
        options.blockSize = 4 << 10
        options.segmentSize = 256 << 10
    }
    return try Store.open(at: dir.url, options: options)
}

@Suite("TimeSeries basics")
struct TimeSeriesTests {
    @Test("opening a series without options keeps its stored options, here and across reopen, as a channel does")
    func openingWithoutOptionsKeepsThem() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let custom = TimeSeriesOptions(retainedRange: .limit(10), subscriptionRange: .none)
        do {
            let store = try openStore(dir)
            _ = try store.timeSeries("kept", of: Int64.self, options: custom)
            #expect(try store.timeSeries("kept", of: Int64.self).options == custom)
            // A series opened first without options gets the defaults.
            #expect(try store.timeSeries("fresh", of: Int64.self).options == TimeSeriesOptions())
            try store.close()
        }
        let store = try openStore(dir)
        defer { try? store.close() }
        #expect(try store.timeSeries("kept", of: Int64.self).options == custom)
        // Options given replace the stored ones.
        let other = TimeSeriesOptions(retainedRange: .limit(20))
        #expect(try store.timeSeries("kept", of: Int64.self, options: other).options == other)
    }

    @Test("the async open without options keeps the stored options too")
    func asyncOpeningWithoutOptionsKeepsThem() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let custom = TimeSeriesOptions(retainedRange: .limit(10))
        _ = try await store.timeSeries("kept", of: Int64.self, options: custom)
        #expect(try await store.timeSeries("kept", of: Int64.self).options == custom)
    }

    @Test("the seed example: values, edits(.all), edits(.latest)")
    func seedExample() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let store = try openStore(dir, clock: clock)
        defer { try? store.close() }
        let s = try store.timeSeries("seed", of: String.self)
        let a = try s.append("A")
        clock.advance(1)
        try s.append("B")
        clock.advance(1)
        let x = try s.edit(originalSequence: 0, value: "X")
        clock.advance(1)
        let y = try s.edit(originalSequence: 0, value: "Y")
        #expect(x.sequence == 2 && y.sequence == 3)

        let values = try s.query(.values)
        #expect(values.events.map(\.sequence) == [3, 1])
        #expect(values.events.map(\.value) == ["Y", "B"])
        #expect(values.events[0].originalEvent == a)
        #expect(values.events[0].isEditEvent && !values.events[1].isEditEvent)
        #expect(values.selectedCount == 2 && values.isComplete)

        let all = try s.query(.edits(.all))
        #expect(all.events.map(\.sequence) == [0, 1, 2, 3])
        #expect(all.events.map(\.value) == ["A", "B", "X", "Y"])
        #expect(all.events[2].originalEvent == a)

        let latest = try s.query(.edits(.latest))
        #expect(latest.events.map(\.sequence) == [0, 1, 3])

        let l = try #require(try s.latest())
        #expect(l.sequence == 3 && l.value == "Y" && l.originalEvent == a)
    }

    @Test("append metadata round-trips through queries; authors, timestamps truncated to ms")
    func metadataRoundTrip() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir, principal: "alice")
        defer { try? store.close() }
        let s = try store.timeSeries("m", of: Double.self)
        let t = Date(timeIntervalSince1970: 1_700_000_000.123_456)
        let m0 = try s.append(1.5, timestamp: t)
        #expect(m0.timestamp == SeriesTime.date(1_700_000_000_123))
        #expect(m0.author == "alice" && m0.sequence == 0)
        let m1 = try s.append(2.5, timestamp: t.addingTimeInterval(0.0001), author: "bob")
        let m2 = try s.append(3.5)
        let e = try s.edit(originalSequence: 1, value: -1, author: "carol")
        let r = try s.query(.edits(.all))
        #expect(r.events.map(\.metadata) == [m0, m1, m2, e])
        #expect(r.events[3].originalEvent == m1)
        #expect(r.events.map(\.author) == ["alice", "bob", "alice", "carol"])
        // Appending the returned timestamp again is allowed (equal, not earlier).
        let m3 = try s.append(4.5, timestamp: e.timestamp)
        #expect(m3.timestamp == e.timestamp)
    }

    @Test("native and Codable value types round-trip")
    func valueTypes() throws {
        struct Tick: Codable, Sendable, Equatable {
            var symbol: String
            var price: Double
            var tags: [String]
        }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        func roundTrip<V: Codable & Sendable & Equatable>(_ name: String, _ values: [V]) throws {
            let s = try store.timeSeries(name, of: V.self)
            try s.append(contentsOf: values)
            #expect(try s.query(.values).events.map(\.value) == values, "\(V.self)")
        }
        try roundTrip("i", [Int64.min, -1, 0, Int64.max])
        try roundTrip("d", [0.0, -1.5, .infinity, 1e300])
        try roundTrip("s", ["", "héllo", "a\u{0}b"])
        try roundTrip("b", [true, false])
        try roundTrip("data", [Data(), Data([0, 1, 255])])
        try roundTrip("json", [JSON.null, ["a": 1, "b": [true, "x"]]])
        try roundTrip("tick", [Tick(symbol: "A", price: 1.25, tags: ["x"]), Tick(symbol: "B", price: 2, tags: [])])
    }

    @Test("errors: empty path, type mismatch, timestamp before latest, bad edits, negative counts")
    func errors() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let store = try openStore(dir, clock: clock)
        defer { try? store.close() }
        #expect(throws: StrataError.self) { try store.timeSeries("", of: Double.self) }
        let s = try store.timeSeries("e", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(3)))
        #expect(throws: StrataError.typeMismatch("time series \"e\" holds Double, not Int64")) {
            try store.timeSeries("e", of: Int64.self)
        }
        let t = Date(timeIntervalSince1970: 2_000_000_000)
        try s.append(1, timestamp: t)
        do {
            try s.append(2, timestamp: t.addingTimeInterval(-0.001))
            Issue.record("no error")
        } catch let StrataError.timestampBeforeLatest(latest, given) {
            #expect(latest == t)
            #expect(SeriesTime.milliseconds(given) == SeriesTime.milliseconds(t)! - 1)
        }
        // A batch with a timestamp going back is refused whole.
        #expect(throws: StrataError.self) {
            try s.append(contentsOf: [(value: 3.0, timestamp: t), (value: 4.0, timestamp: t.addingTimeInterval(-1))])
        }
        #expect(try s.bounds().next == 1)
        // The clock is behind the latest timestamp: implicit timestamps are raised to it.
        let m = try s.append(5)
        #expect(m.timestamp == t)
        let edit = try s.edit(originalSequence: 0, value: 9)
        func invalid(_ body: () throws -> Void) {
            do { try body(); Issue.record("no error") } catch let StrataError.invalidArgument(_, what) {
                #expect(!what.isEmpty)
            } catch { Issue.record("unexpected \(error)") }
        }
        invalid { try s.edit(originalSequence: edit.sequence, value: 1) }   // an edit
        invalid { try s.edit(originalSequence: 99, value: 1) }              // the future
        try s.append(contentsOf: [1.0, 2.0, 3.0])                            // 0…3 discarded (limit 3)
        invalid { try s.edit(originalSequence: 0, value: 1) }               // discarded
        invalid { _ = try s.query(RangeQuery.values.fromLast(-1)) }
        invalid { _ = try s.query(RangeQuery.values.next(-2)) }
        invalid { _ = try s.query(RangeQuery.values.limit(-1)) }
        invalid { _ = try s.query(RangeQuery.values.previous(.milliseconds(-5))) }
        invalid { _ = try store.timeSeries("x", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(0))) }
        invalid { _ = try store.timeSeries("x", of: Double.self, options: TimeSeriesOptions(retainedRange: .last(.seconds(-1)))) }
        invalid { _ = try store.timeSeries("x", of: Double.self, options: TimeSeriesOptions(subscriptionRange: .limit(-1))) }
        try store.close()
        #expect(throws: StrataError.closed) { try s.append(1) }
        #expect(throws: StrataError.closed) { _ = try s.latest() }
        #expect(throws: StrataError.closed) { _ = try s.query(.values) }
    }

    @Test("sequences, values and authors persist across close and reopen; type checked on reopen")
    func persistence() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try openStore(dir, principal: "p1", durability: .synchronous)
            let s = try store.timeSeries("p", of: Int64.self)
            try s.append(contentsOf: (0..<100).map { Int64($0) })
            try s.edit(originalSequence: 5, value: -5)
            try store.close()
        }
        do {
            let store = try openStore(dir, principal: "p2", durability: .synchronous)
            #expect(throws: StrataError.self) { try store.timeSeries("p", of: String.self) }
            let s = try store.timeSeries("p", of: Int64.self)
            #expect(try s.latest()?.sequence == 100)
            #expect(try s.latest()?.value == -5)
            let m = try s.append(100)
            #expect(m.sequence == 101 && m.author == "p2")
            let values = try s.query(.values)
            #expect(values.events.count == 101)
            #expect(values.events[5].value == -5 && values.events[5].sequence == 100)
            #expect(values.events[5].originalEvent?.author == "p1")
            try store.close()
        }
        do {
            let store = try openStore(dir)
            let s = try store.timeSeries("p", of: Int64.self)
            #expect(try s.bounds().next == 102)
            #expect(try s.query(.edits(.all)).events.map(\.sequence) == Array(0..<102))
            try store.close()
        }
    }

    @Test("many series: each its own sequences; handles share state")
    func manySeries() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir, small: true)
        defer { try? store.close() }
        var handles: [TimeSeries<Double>] = []
        for i in 0..<20 { handles.append(try store.timeSeries("s/\(i)", of: Double.self)) }
        for round in 0..<50 {
            for (i, h) in handles.enumerated() where round % (i % 3 + 1) == 0 { try h.append(Double(i * 1000 + round)) }
        }
        let again = try store.timeSeries("s/7", of: Double.self)
        #expect(try again.bounds().next == handles[7].bounds().next)
        for (i, h) in handles.enumerated() {
            let events = try h.query(.values).events
            #expect(events.map(\.sequence) == Array(0..<UInt64(events.count)))
            #expect(events.allSatisfy { Int($0.value) / 1000 == i })
        }
    }

    @Test("FORMAT.md §14.2 worked example: key and record bytes")
    func formatExample() throws {
        #expect(EventRecord.key(series: 1, sequence: 3) == [0x11, 0x02, 0x11, 0x01, 0x11, 0x03])
        var record: [UInt8] = []
        EventRecord.appendHeader(timestampDelta: 250, author: 0, original: nil, to: &record)
        try ValueCodec<Double>().encode(101.5, into: &record)
        #expect(record == [0x00, 0xFA, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x60, 0x59, 0x40])
        let h = try #require(record.withUnsafeBytes { EventRecord.decode($0) })
        #expect(h.timestampDelta == 250 && h.author == 0 && !h.isEdit && h.valueOffset == 3)
        var payload = SeriesPayload(typeName: "Double", options: TimeSeriesOptions(retainedRange: .limit(7, last: .seconds(2)),
                                                                                    subscriptionRange: .limit(4)))
        payload.baseTimestamp = -5
        payload.authors = ["a", ""]
        payload.lastEditSequence = 9
        payload.cutoff = 3
        #expect(try SeriesPayload.decode(payload.encode(), name: "p") == payload)
        var bad = payload.encode()
        bad[0] = 3
        #expect(throws: StrataError.unsupportedFormatVersion(file: "catalog entry time series \"p\"", found: 3)) {
            try SeriesPayload.decode(bad, name: "p")
        }
        // Layout 2 (a replicating series, §14.7) needs its role after the authors.
        bad[0] = 2
        #expect(throws: StrataError.self) { try SeriesPayload.decode(bad, name: "p") }
        #expect(throws: StrataError.self) { try SeriesPayload.decode(Array(payload.encode().dropLast()), name: "p") }
    }
}
