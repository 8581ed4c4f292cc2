import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("TimeSeries kill -9", .serialized)
struct SeriesCrashTests {
    /// Runs the helper's `series` mode, kills it, and checks every series of the store:
    /// contiguous sequences, values by the helper's rule, acknowledged events present.
    func crashRound(_ dir: TemporaryDirectory, seed: UInt64, buffered: Bool, seconds: Double) throws {
        let child = try CrashHelperProcess(["series", dir.path, String(seed)] + (buffered ? ["buffered"] : []))
        let started = child.waitFor(timeout: 30) { $0.contains { $0.hasPrefix("ACK") } }
        #expect(started, "helper wrote no ACK: \(child.errorText)")
        child.run(for: seconds)
        child.killAndWait()
        #expect(child.errorText.isEmpty, "\(child.errorText)")
        var acked: [Int: Set<UInt64>] = [:]
        for line in child.lines where line.hasPrefix("ACK ") {
            let f = line.split(separator: " ")
            guard let i = Int(f[1]), let first = UInt64(f[2]), let n = UInt64(f[3]) else { continue }
            for s in first..<(first + n) { acked[i, default: []].insert(s) }
        }
        #expect(!acked.isEmpty)
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let paths = ["crash/all", "crash/limit"]
        for (i, path) in paths.enumerated() {
            let s = try store.timeSeries(path, of: Double.self,
                                         options: TimeSeriesOptions(retainedRange: i == 0 ? .all : .limit(40)))
            let bounds = try s.bounds()
            let events = try s.query(.edits(.all)).events
            #expect(events.map(\.sequence) == Array(bounds.firstRetained..<bounds.next), "\(path)")
            if i == 0 { #expect(bounds.firstRetained == 0) } else { #expect(bounds.count == min(40, bounds.next)) }
            for e in events {
                if let o = e.originalEvent {
                    #expect(o.sequence < e.sequence && e.value == -(Double(o.sequence) + 0.5), "\(path) \(e.sequence)")
                } else {
                    #expect(e.value == Double(e.sequence) + 0.25, "\(path) \(e.sequence)")
                }
            }
            let mine = acked[i] ?? []
            if let maxAcked = mine.max() { #expect(bounds.next > maxAcked, "\(path): acknowledged \(maxAcked) lost") }
            for sequence in mine where sequence >= bounds.firstRetained {
                #expect(sequence < bounds.next, "\(path): acknowledged event \(sequence) missing")
            }
        }
        try store.close()
    }

    @Test("kill -9 during appends and edits: sequences contiguous, acknowledged events present")
    func killDuringWrites() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try crashRound(dir, seed: 1, buffered: false, seconds: 1.0)
        try crashRound(dir, seed: 2, buffered: true, seconds: 1.0)
        try crashRound(dir, seed: 3, buffered: false, seconds: 0.5)
        // After the crashes the series continue where they stopped.
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("crash/all", of: Double.self)
        // The helper's small memtable made flushes and compactions run between the kills: the
        // events checked above were read from chunks (FORMAT.md §14.6) as well as from records.
        try store.compact()
        #expect(try s.state.reader().0.storedForm().chunks > 0)
        #expect(try s.query(.edits(.all)).events.count == Int(try s.bounds().count))
        let next = try s.bounds().next
        #expect(try s.append(Double(next) + 0.25).sequence == next)
    }
}
