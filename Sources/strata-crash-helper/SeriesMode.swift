// Mode `series` of the crash helper (Tests/StrataTests/TimeSeries/SeriesCrashTests.swift):
//
//   strata-crash-helper series <directory> <seed> [buffered]
//
// Opens the store (small memtable, so that flushes and compactions run) and the series
// `crash/all` (retains everything) and `crash/limit` (retains the last 40 events), then writes
// forever: batches of 1…20 originals (`append(contentsOf:)`) or an edit of a retained original.
// An original with sequence s has the value s + 0.25; an edit of original o has −(o + 0.5).
// Before each write it prints `BEGIN <series> <next sequence>`, after it returns
// `ACK <series> <first sequence> <count>` or `ACK <series> <sequence> 1 EDIT <original>`.

import Foundation
import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

func runSeries(directory: URL, arguments: [String]) -> Never {
    let usage = "usage: strata-crash-helper series <directory> <seed> [buffered]"
    guard (1...2).contains(arguments.count), let seed = UInt64(arguments[0]) else { fail(usage) }
    if arguments.count == 2 && arguments[1] != "buffered" { fail(usage) }
    var options = StoreOptions(durability: arguments.count == 2 ? .buffered : .synchronous)
    options.memtableSize = 64 << 10
    options.segmentSize = 256 << 10
    options.blockSize = 4 << 10
    options.principal = "crash"
    let store: Store
    let series: [TimeSeries<Double>]
    do {
        store = try Store.open(at: directory, options: options)
        series = [
            try store.timeSeries("crash/all", of: Double.self),
            try store.timeSeries("crash/limit", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(40))),
        ]
    } catch {
        fail("open failed: \(error)")
    }
    var random = SplitMix64(state: seed ^ 0x5E41E5)
    // Originals acknowledged in this run, per series.
    var originals: [[UInt64]] = [[], []]
    while true {
        exitIfOrphaned()
        let i = random.below(2)
        let s = series[i]
        let next = (try? s.bounds().next) ?? 0
        emit("BEGIN \(i) \(next)")
        do {
            if random.below(6) == 0, let first = try? s.bounds().firstRetained, let o = originals[i].last(where: { $0 >= first }) {
                let m = try s.edit(originalSequence: o, value: -(Double(o) + 0.5))
                guard m.sequence == next else { fail("edit got sequence \(m.sequence), expected \(next)") }
                emit("ACK \(i) \(m.sequence) 1 EDIT \(o)")
            } else {
                let n = 1 + random.below(20)
                let values = (0..<n).map { Double(next + UInt64($0)) + 0.25 }
                let ms = try s.append(contentsOf: values)
                guard ms.first?.sequence == next, ms.count == n else { fail("append got \(ms.map(\.sequence)), expected \(next)…") }
                originals[i] += ms.map(\.sequence)
                if originals[i].count > 1_000 { originals[i].removeFirst(500) }
                emit("ACK \(i) \(next) \(n)")
            }
        } catch {
            fail("write failed: \(error)")
        }
    }
}
