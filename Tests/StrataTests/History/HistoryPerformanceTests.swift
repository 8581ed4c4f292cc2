import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Goal figures of message history (release build, run by hand; prints figures, asserts nothing
// about time):
//   STRATA_PERF=1 swift test -c release -Xswiftc -enable-testing --scratch-path .build-history-release \
//       --filter HistoryPerformanceTests
// STRATA_PERF_CHANNELS and STRATA_PERF_MESSAGES scale the history data set (default 1,000 and
// 1,000,000; the goal is stated for 10,000 and 10,000,000).

private let words = ["hello", "there", "how", "are", "you", "doing", "today", "the", "meeting", "is", "at",
                     "noon", "see", "you", "later", "thanks", "for", "the", "update", "sounds", "good", "to",
                     "me", "let's", "ship", "it", "can", "we", "talk", "about", "release", "plan", "tomorrow",
                     "morning", "coffee", "lunch", "great", "idea", "I", "will", "check", "and", "get", "back"]

/// A chat-like message of about 200 bytes of JSON.
private func chatMessage(_ random: inout SplitMix64, _ i: Int) -> JSON {
    var text = ""
    while text.utf8.count < 120 { text += (text.isEmpty ? "" : " ") + words[random.below(words.count)] }
    return ["type": "message", "user": .string("user\(random.below(500))"), "text": .string(text),
            "seq": .int(Int64(i))]
}

@Suite(.enabled(if: ProcessInfo.processInfo.environment["STRATA_PERF"] != nil))
struct HistoryPerformanceTests {
    private func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    @Test func goalFigures() throws {
        let env = ProcessInfo.processInfo.environment
        let channelCount = Int(env["STRATA_PERF_CHANNELS"] ?? "") ?? 1_000
        let messageCount = Int(env["STRATA_PERF_MESSAGES"] ?? "") ?? 1_000_000
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        var random = SplitMix64(seed: 42)

        // 1. publish(contentsOf:) 1,000 messages a batch.
        let room = try store.channel("bench.publish", of: JSON.self)
        let batches = (0..<20).map { b in (0..<1000).map { chatMessage(&random, b * 1000 + $0) } }
        var rawBytes = 0
        for m in batches[0] { rawBytes += m.jsonData().count }
        var published = 0
        let publishTime = try seconds {
            for round in 0..<10 {
                for batch in batches {
                    try room.publish(contentsOf: batch)
                    published += batch.count
                }
                _ = round
            }
        }
        print("history-publish: \(published) messages of \(rawBytes / 1000) bytes JSON in batches of 1,000: \(Int(Double(published) / publishTime)) messages/s")

        // 2. Compression: bytes on disk per message after compaction, against the raw JSON.
        try store.compact()
        let perMessage = Double(store.statistics.segmentBytes) / Double(published)
        print("history-compression: \(String(format: "%.1f", perMessage)) bytes on disk per message, raw JSON \(rawBytes / 1000) bytes: \(String(format: "%.0f", 100 * perMessage / Double(rawBytes / 1000)))%")

        // 3. messageCount(since:) over the 200,000 messages.
        var counted = 0
        let countTime = try seconds {
            for _ in 0..<10 { counted += try room.messageCount(since: .zero) }
        }
        print("history-count: \(Int(Double(counted) / countTime)) messages counted/s")

        // 4. history(limit: 100) on a random channel of `channelCount` holding `messageCount`.
        let channels = try (0..<channelCount).map { try store.channel("bench.c\($0)", of: JSON.self) }
        let template = (0..<1000).map { chatMessage(&random, $0) }
        let loadTime = try seconds {
            var left = messageCount
            var i = 0
            while left > 0 {
                let n = min(left, 100)
                try channels[i % channelCount].publish(contentsOf: template[(i % 10 * 100)..<(i % 10 * 100 + n)])
                left -= n
                i += 1
            }
        }
        try store.compact()
        print("history-load: \(messageCount) messages into \(channelCount) channels in \(String(format: "%.1f", loadTime)) s; \(store.statistics.segmentBytes >> 20) MiB on disk")
        var latencies: [Double] = []
        let fetches = 50_000
        latencies.reserveCapacity(fetches)
        let fetchTime = try seconds {
            for _ in 0..<fetches {
                let c = channels[random.below(channelCount)]
                let start = DispatchTime.now().uptimeNanoseconds
                let page = try c.history(limit: 100)
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                precondition(page.messages.count == min(100, messageCount / channelCount))
            }
        }
        latencies.sort()
        print("history-fetch: \(Int(Double(fetches) / fetchTime)) fetches/s, p50 \(String(format: "%.1f", latencies[fetches / 2])) µs, p99 \(String(format: "%.1f", latencies[fetches * 99 / 100])) µs")
    }
}
