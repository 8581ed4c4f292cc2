import Foundation
import Strata
import Synchronization

/// `backup`: a store filled with `--count` records of 100 bytes (a 16-byte key, an 84-byte random
/// value; sequential keys in batches of `--batch`, then compacted) is backed up (`Store.backup(to:)`) into
/// a sibling directory while a writer thread puts one record at a time. The timed operation is the
/// backup. The notes give the writer's longest single put during the backup against its longest
/// in the same time before it (the stall a backup causes: its only lock-held step notes the
/// files to copy), and what the backup linked and copied. Strata only.
struct Backup: Workload {
    let name = "backup"
    let summary = "back up a store of --count 100-byte records while a writer puts; the writer's longest put during it"
    let defaultCount = 10_000_000
    let quickCount = 20_000
    static let valueSize = 84

    func operationUnit(_ run: RunContext) -> String { "backup of the whole store" }

    func unavailability(on engine: EngineKind) -> String? {
        engine == .strata ? nil : "online backup is Strata's only here"
    }

    /// Puts one record at a time from a thread of its own until stopped; keeps the longest put.
    final class Writer: @unchecked Sendable {
        let store: Store
        let stop = Atomic<Bool>(false)
        let longest = Atomic<UInt64>(0)
        let puts = Atomic<Int>(0)
        let failure = Mutex<String?>(nil)
        private let finished = DispatchSemaphore(value: 0)
        private let first: Int

        init(store: Store, first: Int) {
            self.store = store
            self.first = first
        }

        func start() {
            let thread = Thread { [self] in
                defer { finished.signal() }
                var i = first
                var value = [UInt8](repeating: UInt8(ascii: "w"), count: Backup.valueSize)
                while !stop.load(ordering: .relaxed) {
                    let key = Records.key(i, sequential: true)
                    value[0] = UInt8(truncatingIfNeeded: i)
                    let start = Clock.nanoseconds()
                    do { try store.put(key, value) } catch {
                        failure.withLock { $0 = "\(error)" }
                        return
                    }
                    let elapsed = Clock.nanoseconds() - start
                    if elapsed > longest.load(ordering: .relaxed) { longest.store(elapsed, ordering: .relaxed) }
                    puts.add(1, ordering: .relaxed)
                    i += 1
                }
            }
            thread.start()
        }

        /// Stops the thread and waits for it; throws its failure.
        func finish() throws {
            stop.store(true, ordering: .relaxed)
            finished.wait()
            if let f = failure.withLock({ $0 }) { throw BenchError("the writer failed: \(f)") }
        }
    }

    /// Random bytes, which LZ4 does not shrink: the store's files are then about `--count` × 100
    /// bytes, as the records are.
    static func fillRandom(_ value: inout [UInt8], _ rng: inout XorShift64Star) {
        value.withUnsafeMutableBytes { b in
            var offset = 0
            while offset < b.count {
                withUnsafeBytes(of: rng.next()) { r in
                    for k in 0..<min(8, b.count - offset) { b[offset + k] = r[k] }
                }
                offset += 8
            }
        }
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let options = StrataSettings.options(run.config)
        let store = try Store.open(at: run.directory, options: options)
        var batch = WriteBatch()
        var value = [UInt8](repeating: 0, count: Self.valueSize)
        var rng = XorShift64Star(seed: run.config.seed)
        let size = max(run.config.batch, 1)
        var i = 0
        while i < run.count {
            batch = WriteBatch()
            for j in i..<min(i + size, run.count) {
                Self.fillRandom(&value, &rng)
                batch.put(Records.key(j, sequential: true), value)
            }
            try store.write(batch)
            i = min(i + size, run.count)
            if (i / size) % 64 == 0 { recorder.preparing(done: i, of: run.count) }
        }
        // The memtable and logs hold what a flush would not have reached: a compaction puts
        // everything in segments, as in a store that has run a while.
        try store.compact()
        let target = run.directory.deletingLastPathComponent()
            .appendingPathComponent(run.directory.lastPathComponent + "-backup", isDirectory: true)
        try? FileManager.default.removeItem(at: target)
        defer { try? FileManager.default.removeItem(at: target) }

        // The writer alone first, then with the backup for about as long.
        recorder.expect(1)
        var writer = Writer(store: store, first: run.count)
        writer.start()
        Thread.sleep(forTimeInterval: run.config.quick ? 0.1 : 1)
        try writer.finish()
        let before = (longest: writer.longest.load(ordering: .relaxed), puts: writer.puts.load(ordering: .relaxed))

        writer = Writer(store: store, first: run.count + before.puts)
        writer.start()
        let started = Clock.nanoseconds()
        try recorder.measure(items: run.count, bytes: run.count * (Records.keySize + Self.valueSize)) {
            try store.backup(to: target)
        }
        let seconds = Double(Clock.nanoseconds() - started) / 1e9
        try writer.finish()
        let during = (longest: writer.longest.load(ordering: .relaxed), puts: writer.puts.load(ordering: .relaxed))

        // The copy opens and holds the first and last filled records.
        let copy = try Store.open(at: target, options: options)
        for k in [0, run.count - 1] where run.count > 0 {
            guard try copy.get(Records.key(k, sequential: true)) != nil else { throw BenchError("the backup lacks record \(k)") }
        }
        try copy.close()
        var linked = 0, copied = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: target.path) {
            var st = stat()
            guard stat(target.path + "/" + name, &st) == 0 else { continue }
            if name.hasSuffix(".seg") && st.st_nlink > 1 { linked += Int(st.st_size) } else { copied += Int(st.st_size) }
        }
        try? FileManager.default.removeItem(at: target)

        let closeSeconds = try Clock.seconds { try store.close() }
        var outcome = RunOutcome(records: run.count + before.puts + during.puts, closeSeconds: closeSeconds)
        func ms(_ ns: UInt64) -> String { String(format: "%.2f ms", Double(ns) / 1e6) }
        outcome.notes = [
            String(format: "backup %.3f s: %@ bytes hard-linked, %@ bytes copied", seconds,
                   TableReport.grouped(linked), TableReport.grouped(copied)),
            "writer's longest put during the backup: \(ms(during.longest)) (\(during.puts) puts); "
                + "before it: \(ms(before.longest)) (\(before.puts) puts)",
        ]
        return outcome
    }
}
