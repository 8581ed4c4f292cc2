// The README's main job: creates a store in a temporary directory, writes and reads back a few
// hundred thousand records through the engine, reopens it, and prints what it did.
import Foundation
import Strata

func key(_ i: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(i).bigEndian) { Array("user/".utf8) + Array($0) }
}

func value(_ i: Int) -> [UInt8] { Array("value of record \(i) ...padding".utf8) }

func seconds(_ start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

let arguments = CommandLine.arguments.dropFirst()
let count = arguments.first.flatMap(Int.init) ?? 300_000
let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("strata-quickstart-\(ProcessInfo.processInfo.processIdentifier)")
print("Strata quick start: \(count) records in \(directory.path)")

do {
    var options = StoreOptions(durability: .buffered)
    options.memtableSize = 8 << 20  // small, so that the run shows flushes and a compaction
    var store = try Store.open(at: directory, options: options)

    var start = ContinuousClock.now
    var batch = WriteBatch()
    for i in 0..<count {
        batch.put(key(i), value(i))
        if batch.count == 1_000 {
            try store.write(batch)
            batch = WriteBatch()
        }
    }
    try store.write(batch)
    try store.sync()
    var t = seconds(start)
    print(String(format: "  wrote   %8d records in batches of 1,000 in %.2f s (%.0f records/s)", count, t, Double(count) / t))

    start = ContinuousClock.now
    var found = 0
    for i in stride(from: 0, to: count, by: 7) where try store.get(key(i)) == value(i) { found += 1 }
    t = seconds(start)
    print(String(format: "  read    %8d keys back by point lookup in %.2f s, all correct: %@", found, t,
                 found == (count + 6) / 7 ? "yes" : "NO"))

    var deletes = WriteBatch()
    deletes.deleteRange(from: key(1_000), to: key(2_000))
    try store.write(deletes)
    start = ContinuousClock.now
    let cursor = try store.cursor()
    var scanned = 0
    while try cursor.next() { scanned += 1 }
    t = seconds(start)
    print(String(format: "  scanned %8d records in key order in %.2f s after deleting 1,000 by range", scanned, t))

    try store.close()
    store = try Store.open(at: directory, options: options)
    let after = try store.scan(from: key(999), limit: 2).map { e in e.key.suffix(8).reduce(0) { $0 << 8 | Int($1) } }
    print("  reopened: the two records from 999 on are \(after.map(String.init).joined(separator: " and ")) (1000..<2000 stay deleted)")
    try store.compact()
    try store.close()
    print("  compacted and closed; inspect it with:")
    print("    swift run -c release strata-dump summary \(directory.path)")
    print("STORE=\(directory.path)")
} catch {
    print("error: \(error)")
    exit(1)
}
