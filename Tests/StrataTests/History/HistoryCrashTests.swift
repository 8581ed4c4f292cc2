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

// kill -9 while publishing: `strata-crash-helper history` publishes single messages and batches
// with synchronous durability and is killed at a random moment, twice on the same store. After
// each kill every acknowledged message is there under its timetoken, whole, the batch in flight is
// all or nothing, nothing else is there, and new timetokens are above every old one.

/// The message text the helper publishes (the same function as in
/// Sources/strata-crash-helper/HistoryMode.swift; keep them equal).
private func historyMessage(run: Int, batch i: Int, index j: Int) -> String {
    let filler = String("abcdefghij".dropFirst((i + j) % 10))
    let repeats = 1 + (i * 7 + j) % 9
    return "\(run)/\(i)/\(j) " + String(repeating: filler, count: repeats)
}

@Suite struct HistoryCrashTests {
    private struct Line {
        var acknowledged: Bool
        var batch: Int
        var channel: String
        var count: Int
        var first: UInt64?

        static func parse(_ text: String) -> Line? {
            let f = text.split(separator: " ").map(String.init)
            guard f.count >= 4, let i = Int(f[1]), let n = Int(f[3]) else { return nil }
            if f[0] == "BEGIN", f.count == 4 { return Line(acknowledged: false, batch: i, channel: f[2], count: n) }
            if f[0] == "ACK", f.count == 5, let tt = UInt64(f[4]) {
                return Line(acknowledged: true, batch: i, channel: f[2], count: n, first: tt)
            }
            return nil
        }
    }

    @Test func killDuringPublishingLosesNoAcknowledgedMessage() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var random = SplitMix64(seed: 0x4B11_4B11)
        // Every message the store must hold: channel → timetoken → text.
        var expected: [String: [UInt64: String]] = [:]
        var newest: UInt64 = 0
        for run in 0..<2 {
            let child = try CrashHelperProcess(["history", dir.path, "\(random.next() % 1000)", "\(run)"])
            let acks = 30 + random.below(150)
            let started = child.waitFor(timeout: 30) { lines in lines.filter { $0.hasPrefix("ACK") }.count >= acks }
            child.killAndWait()
            #expect(started, "the helper acknowledged \(acks) publishes: \(child.errorText)")
            let lines = child.lines.compactMap(Line.parse)
            #expect(!lines.isEmpty)
            var inFlight: Line?
            for line in lines {
                if line.acknowledged, let first = line.first {
                    for j in 0..<line.count {
                        expected[line.channel, default: [:]][first + UInt64(j)] = historyMessage(run: run, batch: line.batch, index: j)
                    }
                    #expect(first > newest, "timetokens increase across batches and runs")
                    newest = first + UInt64(line.count - 1)
                    inFlight = nil
                } else {
                    inFlight = line
                }
            }

            let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
            for c in 0..<4 {
                let name = "c\(c)"
                let channel = try store.channel(name, of: String.self)
                var stored: [UInt64: String] = [:]
                var page = try channel.history(limit: 100)
                while true {
                    for m in page.messages { stored[m.timetoken.rawValue] = m.message }
                    guard page.hasMore, let s = page.start else { break }
                    page = try channel.history(start: s, limit: 100)
                }
                var want = expected[name] ?? [:]
                // The batch in flight may be there, whole, or not at all.
                if let f = inFlight, f.channel == name {
                    let extra = stored.filter { want[$0.key] == nil }
                    if !extra.isEmpty {
                        #expect(extra.count == f.count, "the batch in flight is all or nothing")
                        let texts = Set(extra.values)
                        #expect(texts == Set((0..<f.count).map { historyMessage(run: run, batch: f.batch, index: $0) }))
                        for (tt, text) in extra { want[tt] = text }
                        newest = max(newest, extra.keys.max() ?? 0)
                    }
                }
                #expect(stored == want, "channel \(name) after run \(run): \(stored.count) stored, \(want.count) expected")
                expected[name] = want
            }
            // A new timetoken is above every one handed out before the kill.
            let probe = try store.channel("probe", of: String.self)
            let tt = try probe.publish("after run \(run)")
            #expect(tt.rawValue > newest)
            newest = tt.rawValue
            try probe.deleteMessages()
            try store.close()
        }
    }
}
