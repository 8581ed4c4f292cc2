import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("TimeSeries inspector")
struct SeriesInspectorTests {
    @Test("lists series and dumps events from the files, store closed or open")
    func listAndDump() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let store = try openStore(dir, clock: clock, principal: "ann", durability: .synchronous)
        let a = try store.timeSeries("a", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(3)))
        try a.append(contentsOf: [1, 2, 3, 4])
        try a.edit(originalSequence: 3, value: 9)
        let b = try store.timeSeries("b/c", of: String.self)
        try b.append("x", timestamp: clock.now, author: "bob")
        // While open (the log holds the writes), then after close (flushed).
        for round in 0..<2 {
            let all = try SeriesInspector.series(ofStoreAt: dir.path)
            #expect(all.map(\.path) == ["a", "b/c"])
            #expect(all[0].valueType == "Double" && all[0].count == 3 && all[0].firstSequence == 2 && all[0].nextSequence == 5)
            #expect(all[0].edits == 1 && all[0].retainedRange == "limit 3" && all[0].bytes > 0)
            #expect(all[1].authors == ["bob"] && all[1].count == 1)
            let dump = try SeriesInspector.dump(series: "a", ofStoreAt: dir.path)
            #expect(dump.events.map(\.sequence) == [2, 3, 4])
            #expect(dump.events.map(\.value) == [.double(3), .double(4), .double(9)])
            #expect(dump.events[2].originalSequence == 3 && dump.events[2].author == "ann")
            #expect(dump.events[2].timestamp == clock.milliseconds)
            #expect(try SeriesInspector.dump(series: "a", ofStoreAt: dir.path, limit: 1).events.map(\.sequence) == [4])
            #expect(throws: StrataError.self) { try SeriesInspector.dump(series: "nope", ofStoreAt: dir.path) }
            if round == 0 { try store.close() }
        }
    }

    @Test("reports how events are stored: chunks, events per chunk, bits per timestamp and value, records left")
    func storage() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let s = try store.timeSeries("prices", of: Double.self)
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        try s.append(contentsOf: (0..<2_000).map { (100 + Double($0 % 50) / 100, base.addingTimeInterval(Double($0))) })
        var summary = try #require(try SeriesInspector.series(ofStoreAt: dir.path).first)
        #expect(summary.storage.chunks == 0 && summary.storage.eventRecords == 2_000)
        try store.compact()
        try s.append(100)
        try store.close()
        summary = try #require(try SeriesInspector.series(ofStoreAt: dir.path).first)
        let t = summary.storage
        #expect(t.chunks == 4 && t.chunkedEvents == 2_000 && t.eventRecords == 1, "\(t)")
        #expect(t.eventsPerChunk == 500)
        // One-second steps cost a bit or two; two-decimal prices a few bits (ALP).
        #expect(t.bitsPerTimestamp > 0 && t.bitsPerTimestamp < 4, "\(t)")
        #expect(t.bitsPerValue > 0 && t.bitsPerValue < 10, "\(t)")
        #expect(t.bytesPerChunkedEvent < 2, "\(t)")
        let dump = try SeriesInspector.dump(series: "prices", ofStoreAt: dir.path, limit: 3)
        #expect(dump.summary.storage == t && dump.events.map(\.sequence) == [1_998, 1_999, 2_000])
    }
}
