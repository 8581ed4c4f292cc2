// `strata-crash-helper history <directory> <seed> <run>`: publishes to message-history channels
// forever (until killed), for Tests/StrataTests/History/HistoryCrashTests.swift.
//
// Opens the store (synchronous durability, a small memtable so that flushes and compactions
// happen) and four channels `c0`…`c3` of `String`. Batch i (0, 1, 2, …) goes to a channel the
// seeded generator picks, with n (1…20) messages `"<run>/<i>/<j>"` plus a filler; n = 1 batches
// are single publishes (when i is a multiple of 3 with meta `{"i": i}` and publisher "p"). Before each publish it prints `BEGIN <i> <channel> <n>`, after it
// returns `ACK <i> <channel> <n> <first timetoken>`, each line with one unbuffered write.

import Foundation
import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

func historyMessage(run: Int, batch i: Int, index j: Int) -> String {
    let filler = String("abcdefghij".dropFirst((i + j) % 10))
    let repeats = 1 + (i * 7 + j) % 9
    return "\(run)/\(i)/\(j) " + String(repeating: filler, count: repeats)
}

func runHistory(directory: URL, arguments: [String]) -> Never {
    let usage = "usage: strata-crash-helper history <directory> <seed> <run>"
    guard arguments.count == 2, let seed = UInt64(arguments[0]), let run = Int(arguments[1]) else { fail(usage) }
    var options = StoreOptions(durability: .synchronous)
    options.memtableSize = 64 << 10
    options.segmentSize = 256 << 10
    options.blockSize = 4 << 10
    let store: Store
    let channels: [Channel<String>]
    do {
        store = try Store.open(at: directory, options: options)
        channels = try (0..<4).map { try store.channel("c\($0)", of: String.self) }
    } catch {
        fail("open failed: \(error)")
    }
    var random = SplitMix64(state: seed ^ UInt64(run))
    var i = 0
    while true {
        let c = random.below(channels.count)
        let n = random.below(3) == 0 ? 1 + random.below(20) : 1
        let messages = (0..<n).map { historyMessage(run: run, batch: i, index: $0) }
        exitIfOrphaned()
        emit("BEGIN \(i) c\(c) \(n)")
        let first: Timetoken
        do {
            if n == 1 {
                first = i % 3 == 0
                    ? try channels[c].publish(messages[0], meta: ["i": .int(Int64(i))], publisher: "p")
                    : try channels[c].publish(messages[0])
            } else {
                first = try channels[c].publish(contentsOf: messages)[0]
            }
        } catch {
            fail("publish of batch \(i) failed: \(error)")
        }
        emit("ACK \(i) c\(c) \(n) \(first.rawValue)")
        i += 1
    }
}
