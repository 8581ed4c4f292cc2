import Foundation
import Testing
@testable import Strata
@testable import StrataInspection

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
}
