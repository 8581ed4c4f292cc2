import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataEngine

// Issue 23, found by LayoutGeneratorTests: a time series' catalog payload (FORMAT.md §14.1) whose
// base timestamp is after the latest event's trapped the next append or edit (`t − base` negative,
// or overflowing), and one whose cutoff is above 2⁶³ − 1 made the series' next sequence overflow
// at the next append. The first is now a corruption naming the catalog entry when a write needs
// the difference; the second is refused by the payload's decoder. And a latest timestamp near
// Int64.min (the base plus the delta wraps, as §14.2 allows) trapped the open of a series with a
// retained duration (`latest − duration`) and queries with a duration before a time anchor: the
// difference now clamps.

@Suite struct SeriesCatalogDamageTests {
    /// A closed store with series `s` of `Double` (three events a second apart, so the latest is
    /// stored as the base + 2,000 ms), its catalog payload rewritten by
    /// `damage` through the commit path.
    private func damagedStore(options: TimeSeriesOptions? = nil, _ damage: (inout SeriesPayload) -> Void) throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        do {
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            let s = try store.timeSeries("s", of: Double.self, options: options)
            for i in 0..<3 { _ = try s.append(Double(i), timestamp: Date(timeIntervalSince1970: 1_700_000_000 + Double(i))) }
        }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let entry = try #require(try store.catalog.entry(kind: .timeSeries, name: "s"))
        var payload = try SeriesPayload.decode(entry.payload, name: "s")
        damage(&payload)
        var batch = WriteBatch()
        Catalog.put(CatalogEntry(id: entry.id, payload: payload.encode()), kind: .timeSeries, name: "s", into: &batch)
        _ = try store.engine.commit(CommitBatch(records: batch))
        return dir
    }

    private func isCatalogCorruption(_ error: any Error) -> Bool {
        guard case StrataError.corrupted(let file, _, _) = error else { return false }
        return file == "catalog entry time series \"s\""
    }

    @Test("a base timestamp whose latest event wraps past 2^63 - 1 (so it is after the next event's): the next append and edit are a corruption naming the catalog entry, not a trap",
          arguments: [Int64.max, Int64.max - 1_000, Int64.max - 1_999])
    func baseAfterTheLatestEvent(_ base: Int64) throws {
        let dir = try damagedStore { $0.baseTimestamp = base }
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("s", of: Double.self)
        #expect(performing: { _ = try s.append(4) }, throws: isCatalogCorruption)
        #expect(performing: { _ = try s.edit(originalSequence: 0, value: 5) }, throws: isCatalogCorruption)
        #expect(try s.query(.values).events.count == 3, "nothing was written")
    }

    @Test("a base timestamp far below every event's (the difference past 2^63): appends wrap modulo 2^64 as section 14.6 allows, never trap")
    func baseFarBelowTheLatestEvent() throws {
        let dir = try damagedStore { $0.baseTimestamp = Int64.min }
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("s", of: Double.self)
        do { _ = try s.append(4) } catch is StrataError {}
        do { _ = try s.edit(originalSequence: 0, value: 5) } catch is StrataError {}
    }

    @Test("a series with a retained duration whose latest timestamp is near Int64.min opens, reads (time anchors and spans too) and appends without a trap")
    func retainedDurationBelowTheSmallestTimestamp() throws {
        let dir = try damagedStore(options: TimeSeriesOptions(retainedRange: .last(.seconds(60)))) { $0.baseTimestamp = Int64.min }
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("s", of: Double.self)
        #expect(try s.query(.values).events.count == 3, "all three are within the duration of the latest")
        #expect(try s.query(.values.fromLast(.seconds(60))).events.count == 3)
        #expect(try s.query(.values.from(sequence: 2).previous(.seconds(10))).events.count == 3)
        #expect(try s.query(.values.fromLast(3).untilLast(.seconds(1))).events.count == 2)
        do { _ = try s.append(4) } catch is StrataError {}
    }

    @Test("a cutoff above 2^63 - 1 is refused by the payload decoder as a corruption naming the catalog entry",
          arguments: [UInt64(1) << 63, .max])
    func cutoffPastTheSequenceLimit(_ cutoff: UInt64) throws {
        let dir = try damagedStore { $0.cutoff = cutoff }
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(performing: { _ = try store.timeSeries("s", of: Double.self) }, throws: isCatalogCorruption)
    }

    @Test("a cutoff of 2^63 - 1 decodes (the largest sequence)")
    func cutoffAtTheSequenceLimit() throws {
        var payload = SeriesPayload(typeName: "Double", options: TimeSeriesOptions())
        payload.cutoff = UInt64(Int64.max)
        #expect(try SeriesPayload.decode(payload.encode(), name: "s").cutoff == UInt64(Int64.max))
    }
}
