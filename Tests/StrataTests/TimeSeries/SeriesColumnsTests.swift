import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat

// TimeSeries.columns(_:) on every value kind (the native Double and Int64 columns copied whole,
// String and Codable values decoded one by one), over chunks and unsettled records, with edits.
// RangeQueryModelTests compares it with query(_:) on every random query of its model.

@Suite struct SeriesColumnsTests {
    struct Reading: Codable, Sendable, Equatable { var celsius: Double; var sensor: String }

    func check<V: Codable & Sendable & Equatable>(_ series: TimeSeries<V>, _ store: Store, values: (Int) -> V) throws {
        for i in 0..<300 { _ = try series.append(values(i)) }
        _ = try series.edit(originalSequence: 10, value: values(1_000))
        try store.compact()          // settled: chunks
        for i in 300..<340 { _ = try series.append(values(i)) }   // unsettled records
        _ = try series.edit(originalSequence: 320, value: values(2_000))
        for q in [RangeQuery.values, .edits(.all), .values.fromLast(50), .values.from(sequence: 5).next(20), .values.limit(7),
                  .edits(.latest).fromLast(100)] {
            let events = try series.query(q).events
            let columns = try series.columns(q)
            #expect((0..<columns.count).map { columns.event(at: $0) } == events, "\(q)")
            #expect(columns.sequences == events.map(\.sequence) && columns.values == events.map(\.value), "\(q)")
            #expect(columns.authors == events.map(\.author), "\(q)")
        }
        let all = try series.columns(.edits(.all))
        #expect(all.count == 342 && all.edits.count == 2 && all.original(at: 300)?.sequence == 10)
    }

    @Test("columns equal query's events for Double, Int64, String and Codable series, chunks and records, with edits")
    func everyKind() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        try check(try store.timeSeries("d", of: Double.self), store) { Double($0) / 4 }
        try check(try store.timeSeries("i", of: Int64.self), store) { Int64($0) * 3 }
        try check(try store.timeSeries("s", of: String.self), store) { "v\($0)" }
        try check(try store.timeSeries("c", of: Reading.self), store) { Reading(celsius: Double($0), sensor: "s\($0 % 3)") }
    }

    @Test("the async twin of columns(_:)")
    func asyncTwin() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        let series = try await store.timeSeries("d", of: Double.self)
        for i in 0..<5 { _ = try await series.append(Double(i)) }
        let columns = try await series.columns(.values.fromLast(3))
        #expect(columns.values == [2, 3, 4] && columns.sequences == [2, 3, 4])
        try await store.close()
    }
}
