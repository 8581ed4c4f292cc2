// The child process of the crash tests (Tests/StrataTests/Engine/CrashTests.swift and
// Tests/StrataTests/Files/BadInputTests.swift). It is killed with SIGKILL by the tests; it never
// exits on its own in `write` mode.
//
// Modes:
//   strata-crash-helper write <directory> <seed> [threads] [buffered|encrypted]
//       Opens the store (synchronous durability unless `buffered`; `encrypted`: sealed with the
//       published test key of FORMAT.md 11.4, the bytes 0…31) with a small memtable so that
//       flushes and compactions happen during the run, then writes batches forever from
//       `threads` threads (default 1). Thread t writes the batch ids i ≡ t (mod threads), in
//       order, continuing after its `last` batch id already in the store. Batch i puts n (1…50)
//       keys `batch/<i:08>/<j:03>` whose values encode i, j and n, plus its thread's last key
//       (`last` with one thread, `last/<t>` with several) = i. Some batches also delete every key
//       of an earlier batch k the same thread acknowledged in this run, or (with one thread only)
//       the range of batch ids [k1, k2) of such batches.
//       Before each write it prints `BEGIN <i> <n>[ DEL <k> | DELRANGE <k1> <k2>]`, after the write
//       returns `ACK <i> <n>[ DEL <k> | DELRANGE <k1> <k2>]`; each line is written with one
//       unbuffered write(2), so lines of different threads never mix.
//   strata-crash-helper hold <directory>
//       Opens the store, prints `OPEN`, sleeps up to 60 s (until killed), then closes it.
//   strata-crash-helper put <directory> <prefix> <count>
//       Opens the store (buffered durability, default options: no flush in a small run), puts
//       `<prefix>/<i>` = `v<i>` for i in 0..<count, one batch each, prints `DONE`, then sleeps
//       like `hold` until killed.
//   strata-crash-helper series|history|documents <directory> …
//       The collections' crash modes (SeriesMode.swift, HistoryMode.swift, DocumentsMode.swift).
//   strata-crash-helper transactions <directory> <seed>
//       Transactions over a series, a channel and a database (TransactionMode.swift).
//   strata-crash-helper rekey <directory>
//       Changes the closed store's encryption key from the test key (FORMAT.md 11.4) to its
//       reverse (the bytes 255…224) and back (starting from whichever opens it), forever,
//       printing `KEY test` or `KEY reverse` after each change.
//   strata-crash-helper push <directory> <seed>
//       Appends to a series a push subscription matches (PushMode.swift).
//   strata-crash-helper replicate <directory> <database-url> <user> <password>
//       Publishes and appends under repeating channel and series replications (ReplicateMode.swift).
//   strata-crash-helper backup <directory> <target-root>
//       Backs the store up, again and again, while a writer appends (BackupMode.swift).
//
// In both modes the helper exits by itself when the process that started it dies.
//
// The key and value encodings are repeated in CrashTests.swift (`CrashEncoding`): keep them equal.

import Foundation
import Strata

@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes `line` plus a newline to standard output with one unbuffered write.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The test process that started the helper. If it dies (the helper is then reparented), the
/// helper exits instead of writing forever.
let parent = getppid()

func exitIfOrphaned() {
    if getppid() != parent { exit(3) }
}

/// Keeps `store` open for up to a minute (the test kills or outlives it), then closes it; leaves
/// at once if the test that started this process is gone.
func holdOpen(_ store: Store) {
    var remaining = 60.0
    while remaining > 0 {
        usleep(100_000)
        remaining -= 0.1
        exitIfOrphaned()
    }
    try? store.close()
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("strata-crash-helper: " + message + "\n").utf8))
    exit(2)
}

/// SplitMix64: small, seeded, deterministic.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

func padded(_ v: Int, _ width: Int) -> String {
    let s = String(v)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

/// The first key of batch `i`'s keys (also the bound of range deletions).
func batchPrefix(_ i: Int) -> [UInt8] { Array("batch/\(padded(i, 8))/".utf8) }

func batchKey(_ i: Int, _ j: Int) -> [UInt8] { batchPrefix(i) + Array(padded(j, 3).utf8) }

/// `"<i>:<j>:<n>:"` followed by a filler whose length and content follow from i and j.
func batchValue(_ i: Int, _ j: Int, _ n: Int) -> [UInt8] {
    var v = Array("\(i):\(j):\(n):".utf8)
    let fillerLength = 16 + (i &* 7 &+ j &* 13) % 113
    for k in 0..<fillerLength { v.append(UInt8(97 + (i &+ j &+ k) % 26)) }
    return v
}

/// The key holding the id of thread `t`'s last committed batch.
func lastKey(thread t: Int, of threads: Int) -> [UInt8] { Array((threads == 1 ? "last" : "last/\(t)").utf8) }

enum Deletion {
    case none
    case batch(Int)
    case range(Int, Int)

    var suffix: String {
        switch self {
        case .none: return ""
        case .batch(let k): return " DEL \(k)"
        case .range(let a, let b): return " DELRANGE \(a) \(b)"
        }
    }
}

/// A small memtable, segments and blocks, so that flushes and compactions happen during a short run.
func smallStoreOptions(durability: Durability) -> StoreOptions {
    var options = StoreOptions(durability: durability)
    options.memtableSize = 64 << 10
    options.segmentSize = 256 << 10
    options.blockSize = 4 << 10
    return options
}

func runWrite(directory: URL, seed: UInt64, threads: Int, buffered: Bool, encrypted: Bool) {
    var options = smallStoreOptions(durability: buffered ? .buffered : .synchronous)
    if encrypted { options.encryptionKey = try? EncryptionKey(bytes: (0..<32).map { UInt8($0) }) }
    let store: Store
    do {
        store = try Store.open(at: directory, options: options)
    } catch {
        fail("open failed: \(error)")
    }
    for t in 1..<threads {
        let thread = Thread { writeLoop(store: store, thread: t, of: threads, seed: seed) }
        thread.start()
    }
    writeLoop(store: store, thread: 0, of: threads, seed: seed)
}

func writeLoop(store: Store, thread t: Int, of threads: Int, seed: UInt64) {
    let last = lastKey(thread: t, of: threads)
    var first = t
    do {
        if let v = try store.get(last) {
            guard let id = Int(String(decoding: v, as: UTF8.self)), id % threads == t else { fail("malformed last value \(v)") }
            first = id + threads
        }
    } catch {
        fail("reading last failed: \(error)")
    }
    var random = SplitMix64(state: seed ^ (UInt64(first) &* 0x2545_F491_4F6C_DD1D))
    // Batches this thread acknowledged in this run and did not delete since, with their sizes.
    var live: [(id: Int, n: Int)] = []
    var i = first
    while true {
        let n = 1 + random.below(50)
        var deletion = Deletion.none
        let roll = random.below(100)
        if roll < 12, live.count >= 4 {
            let at = random.below(live.count - 1)
            deletion = .batch(live[at].id)
        } else if roll < 18, threads == 1, live.count >= 6 {
            let at = random.below(live.count - 4)
            let width = 1 + random.below(3)
            deletion = .range(live[at].id, live[at + width].id)
        }
        var batch = WriteBatch()
        switch deletion {
        case .none: break
        case .batch(let k):
            let size = live.first { $0.id == k }!.n
            for j in 0..<size { batch.delete(batchKey(k, j)) }
        case .range(let a, let b):
            batch.deleteRange(from: batchPrefix(a), to: batchPrefix(b))
        }
        for j in 0..<n { batch.put(batchKey(i, j), batchValue(i, j, n)) }
        batch.put(last, Array(String(i).utf8))
        exitIfOrphaned()
        emit("BEGIN \(i) \(n)\(deletion.suffix)")
        do {
            try store.write(batch)
        } catch {
            fail("write of batch \(i) failed: \(error)")
        }
        emit("ACK \(i) \(n)\(deletion.suffix)")
        switch deletion {
        case .none: break
        case .batch(let k): live.removeAll { $0.id == k }
        case .range(let a, let b): live.removeAll { $0.id >= a && $0.id < b }
        }
        live.append((i, n))
        i += threads
    }
}

func runHold(directory: URL) {
    let store: Store
    do {
        store = try Store.open(at: directory)
    } catch {
        fail("open failed: \(error)")
    }
    emit("OPEN")
    holdOpen(store)
}

func runPut(directory: URL, prefix: String, count: Int) {
    let store: Store
    do {
        store = try Store.open(at: directory, options: StoreOptions(durability: .buffered))
        for i in 0..<count { try store.put(Array("\(prefix)/\(i)".utf8), Array("v\(i)".utf8)) }
    } catch {
        fail("put failed: \(error)")
    }
    emit("DONE")
    holdOpen(store)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: strata-crash-helper write <directory> <seed> [threads] [buffered] | hold <directory>") }
let directory = URL(fileURLWithPath: arguments[2], isDirectory: true)
switch arguments[1] {
case "write":
    let usage = "usage: strata-crash-helper write <directory> <seed> [threads] [buffered|encrypted]"
    guard (4...6).contains(arguments.count), let seed = UInt64(arguments[3]) else { fail(usage) }
    var threads = 1
    if arguments.count >= 5 {
        guard let t = Int(arguments[4]), (1...16).contains(t) else { fail(usage) }
        threads = t
    }
    if arguments.count == 6 && !["buffered", "encrypted"].contains(arguments[5]) { fail(usage) }
    runWrite(directory: directory, seed: seed, threads: threads, buffered: arguments.count == 6 && arguments[5] == "buffered",
             encrypted: arguments.count == 6 && arguments[5] == "encrypted")
case "hold":
    runHold(directory: directory)
case "rekey":
    let keys = [("test", try! EncryptionKey(bytes: (0..<32).map { UInt8($0) })),
                ("reverse", try! EncryptionKey(bytes: (0..<32).map { UInt8(255 - $0) }))]
    var current = 0
    while true {
        exitIfOrphaned()
        do {
            try Store.changeEncryptionKey(at: directory, from: keys[current].1, to: keys[1 - current].1)
        } catch StrataError.encryptionKey(_, .wrongKey) {
            // A kill left it under the other key: start from that one.
            current = 1 - current
            continue
        } catch {
            fail("key change failed: \(error)")
        }
        current = 1 - current
        emit("KEY \(keys[current].0)")
    }
case "put":
    guard arguments.count == 5, let count = Int(arguments[4]), count >= 0 else {
        fail("usage: strata-crash-helper put <directory> <prefix> <count>")
    }
    runPut(directory: directory, prefix: arguments[3], count: count)
case "series":
    runSeries(directory: directory, arguments: Array(arguments.dropFirst(3)))
case "history":
    runHistory(directory: directory, arguments: Array(arguments.dropFirst(3)))
case "replicate":
    runReplicate(directory: directory, arguments: Array(arguments.dropFirst(3)))
case "documents":
    runDocuments(directory: directory, arguments: Array(arguments.dropFirst(3)))
case "transactions":
    runTransactions(directory: directory, arguments: Array(arguments.dropFirst(3)))
case "push":
    runPush(directory: directory, arguments: Array(arguments.dropFirst(3)))
case "backup":
    runBackup(directory: directory, arguments: Array(arguments.dropFirst(3)))
default:
    fail("unknown mode \(arguments[1])")
}
