// The engine-core performance program: the same workload as Scripts/perf/rocksdb_baseline.c,
// against Strata, in one release-mode run. See Sources/Strata/Strata.docc/Performance.md.
//
//   swift run -c release strata-perf [records=10000000] [gets=1000000] [directory]
//   STRATA_PERF_ORDER=seq writes the records in key order instead of hashed order.
import CStrataSupport
import Foundation
import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

let args = Array(CommandLine.arguments.dropFirst())
let n = args.count > 0 ? Int(args[0]) ?? 10_000_000 : 10_000_000
let g = args.count > 1 ? Int(args[1]) ?? 1_000_000 : 1_000_000
let dir = args.count > 2 ? URL(fileURLWithPath: args[2])
    : FileManager.default.temporaryDirectory.appendingPathComponent("strata-perf-\(getpid())")

/// STRATA_PERF_ORDER=seq swaps the key halves, so records arrive in key order.
let sequential = ProcessInfo.processInfo.environment["STRATA_PERF_ORDER"] == "seq"

@inline(__always) func key(_ i: UInt64, into k: inout [UInt8]) {
    k.removeAll(keepingCapacity: true)
    let hashed = (i &* 0x9E37_79B9_7F4A_7C15).bigEndian
    withUnsafeBytes(of: sequential ? i.bigEndian : hashed) { k.append(contentsOf: $0) }
    withUnsafeBytes(of: sequential ? hashed : i.bigEndian) { k.append(contentsOf: $0) }
}

/// "value-%018llu" of i, like the C program's snprintf.
func value(_ i: UInt64) -> [UInt8] {
    var v = [UInt8](repeating: UInt8(ascii: "0"), count: 24)
    v[0] = UInt8(ascii: "v"); v[1] = UInt8(ascii: "a"); v[2] = UInt8(ascii: "l")
    v[3] = UInt8(ascii: "u"); v[4] = UInt8(ascii: "e"); v[5] = UInt8(ascii: "-")
    var x = i, p = 23
    while x > 0 && p >= 6 { v[p] = UInt8(ascii: "0") + UInt8(x % 10); x /= 10; p -= 1 }
    return v
}

struct XorShift64Star {
    var x: UInt64
    mutating func next() -> UInt64 {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27
        return x &* 0x2545_F491_4F6C_DD1D
    }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func directorySize(_ url: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
    return names.reduce(0) { sum, name in
        let attrs = try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(name).path)
        return sum + ((attrs?[.size] as? NSNumber)?.intValue ?? 0)
    }
}

// CRC32C over 256 MiB, the checksum of every block and log record.
do {
    let size = 256 << 20
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    defer { buffer.deallocate() }
    for i in 0..<size { buffer[i] = UInt8(truncatingIfNeeded: i &* 31) }
    var crc: UInt32 = 0
    let start = now()
    for _ in 0..<4 { crc = strata_crc32c_extend(crc, buffer.baseAddress, size) }
    let seconds = now() - start
    print(String(format: "strata crc32c_gb_per_s=%.2f hardware=%d checksum=%08x",
                 Double(4 * size) / seconds / 1e9, strata_crc32c_is_hardware(), crc))
}

do {
    try? Store.destroy(at: dir)
    var options = StoreOptions(durability: .buffered)
    options.cacheSize = 1 << 30
    let store = try Store.open(at: dir, options: options)

    var k: [UInt8] = []
    var t0 = now()
    var batch = WriteBatch()
    for i in 0..<UInt64(n) {
        key(i, into: &k)
        batch.put(k, value(i))
        if batch.count == 1000 {
            try store.write(batch)
            batch = WriteBatch()
        }
    }
    if !batch.isEmpty { try store.write(batch) }
    let fill = now() - t0
    print(String(format: "strata fill_records_per_s=%.0f fill_seconds=%.3f", Double(n) / fill, fill))
    let s = store.statistics
    print(String(format: "strata after_fill sorted_runs=%d most_sorted_runs=%d flushes=%d compactions=%d write_amplification=%.2f",
                 s.sortedRuns, s.mostSortedRuns, s.flushes, s.compactions, s.writeAmplification))

    t0 = now()
    try store.compact()
    let compactTime = now() - t0
    let disk = directorySize(dir)
    print(String(format: "strata flush_compact_seconds=%.3f disk_bytes=%d bytes_per_record=%.2f",
                 compactTime, disk, Double(disk) / Double(n)))

    func gets(seed: UInt64) throws -> (Double, Int) {
        var rng = XorShift64Star(x: seed)
        var misses = 0
        let start = now()
        for _ in 0..<g {
            let i = rng.next() % UInt64(n)
            key(i, into: &k)
            guard let v = try store.get(k), v.count == 24, v == value(i) else { misses += 1; continue }
        }
        return (Double(g) / (now() - start), misses)
    }
    let (warm, warmMisses) = try gets(seed: 42)
    let (getRate, misses) = try gets(seed: 4242)
    print(String(format: "strata warmup_gets_per_s=%.0f gets_per_s=%.0f misses=%d", warm, getRate, warmMisses + misses))

    t0 = now()
    let cursor = try store.cursor()
    var count = 0, valueBytes = 0
    while try cursor.nextUnsafe({ _, v in valueBytes += v.count }) != nil {
        count += 1
    }
    let scan = now() - t0
    print(String(format: "strata scan_records_per_s=%.0f scan_count=%d scan_value_bytes=%d",
                 Double(count) / scan, count, valueBytes))

    // Short range scans: 1,000 records from a random existing key, with the cache warm.
    let ranges = Int(ProcessInfo.processInfo.environment["STRATA_PERF_RANGES"] ?? "") ?? 20_000
    var rng = XorShift64Star(x: 7)
    var rangeRecords = 0
    t0 = now()
    for _ in 0..<ranges {
        key(rng.next() % UInt64(n), into: &k)
        let c = try store.cursor(from: k)
        var taken = 0
        while taken < 1_000, try c.nextUnsafe({ _, v in rangeRecords += v.count > 0 ? 1 : 0 }) != nil {
            taken += 1
        }
    }
    let rangeTime = now() - t0
    print(String(format: "strata range1000_per_s=%.0f range_records_per_s=%.0f",
                 Double(ranges) / rangeTime, Double(rangeRecords) / rangeTime))

    // The same, newest first: 1,000 records before a random existing key.
    var reverseRecords = 0
    t0 = now()
    for _ in 0..<ranges {
        key(rng.next() % UInt64(n), into: &k)
        let c = try store.cursor(to: k, reverse: true)
        var taken = 0
        while taken < 1_000, try c.nextUnsafe({ _, v in reverseRecords += v.count > 0 ? 1 : 0 }) != nil {
            taken += 1
        }
    }
    let reverseTime = now() - t0
    print(String(format: "strata reverse_range1000_per_s=%.0f reverse_records_per_s=%.0f",
                 Double(ranges) / reverseTime, Double(reverseRecords) / reverseTime))
    try store.close()
    try Store.destroy(at: dir)
    if misses + warmMisses > 0 || count != n || valueBytes != 24 * n {
        print("strata: WRONG RESULTS")
        exit(1)
    }
} catch {
    print("strata-perf: \(error)")
    exit(1)
}
