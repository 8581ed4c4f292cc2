import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The goal figures, measured (no assertions on time). Run in release:
/// `STRATA_PERF=1 swift test -c release -Xswiftc -enable-testing --filter SeriesPerformanceTests`.
@Suite("TimeSeries performance", .enabled(if: ProcessInfo.processInfo.environment["STRATA_PERF"] != nil))
struct SeriesPerformanceTests {
    func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    @Test("goal figures")
    func figures() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let seriesCount = 1_000
        let rounds = Int(ProcessInfo.processInfo.environment["STRATA_PERF_ROUNDS"] ?? "") ?? 10
        let all = try (0..<seriesCount).map { try store.timeSeries("perf/\($0)", of: Double.self) }
        var r = SplitMix64(seed: 7)
        let batch = (0..<1_000).map { _ in Double(r.below(1_000_000)) / 100 }
        let appendTime = try seconds {
            for _ in 0..<rounds { for s in all { try s.append(contentsOf: batch) } }
        }
        let events = Double(rounds * seriesCount * 1_000)
        print("series perf: append(contentsOf:) 1,000 Doubles × \(seriesCount) series × \(rounds): \(Int(events / appendTime)) events/s")

        let one = all[0]
        var latencies: [UInt64] = []
        latencies.reserveCapacity(100_000)
        for i in 0..<100_000 {
            let t0 = DispatchTime.now().uptimeNanoseconds
            try one.append(Double(i))
            latencies.append(DispatchTime.now().uptimeNanoseconds - t0)
        }
        latencies.sort()
        print("series perf: single append p50 \(latencies[50_000] / 1000) µs, p99 \(latencies[99_000] / 1000) µs, p99.9 \(latencies[99_900] / 1000) µs")

        let queries = 20_000
        var returned = 0
        let queryTime = try seconds {
            for i in 0..<queries {
                let s = all[(i &* 7919) % seriesCount]
                returned += try s.query(RangeQuery.values.fromLast(1_000)).events.count
            }
        }
        print("series perf: 1,000-event range query among \(seriesCount) series, \(Int(events)) events: \(Int(Double(queries) / queryTime)) queries/s (\(returned / queries) events each)")

        var sink = 0.0
        let latestTime = try seconds {
            for i in 0..<1_000_000 { sink += try all[i % seriesCount].latest()?.value ?? 0 }
        }
        print("series perf: latest \(Int(1_000_000 / latestTime)) /s (\(sink > 0))")

        try store.compact()
        let bytes = dir.list().filter { $0.hasSuffix(".seg") }.reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: dir.file(name))[.size] as? Int) ?? 0)
        }
        returned = 0
        let compactedQueryTime = try seconds {
            for i in 0..<queries {
                let s = all[(i &* 7919) % seriesCount]
                returned += try s.query(RangeQuery.values.fromLast(1_000)).events.count
            }
        }
        print("series perf: the same queries after compaction (one run): \(Int(Double(queries) / compactedQueryTime)) queries/s")
        print("series perf: after compaction \(bytes) bytes of segments for \(Int(events) + 100_000) events: \(Double(bytes) / (events + 100_000)) bytes/event")
    }
}
