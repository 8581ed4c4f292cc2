import CBenchLZ4
import Foundation

/// `ts-scan`: every event of one series per operation, the operations going round-robin over the
/// series, in a settled store of `--count` events loaded as ts-append does (untimed). Payload
/// bytes count 16 per event (an 8-byte timestamp and an 8-byte value, decoded). Every event's
/// sequence and value is checked.
///
/// Beside the engines, a reference row measured in the same run: the same events laid out as
/// 16-byte records (BE64 millisecond timestamp ‖ BE64 value bits, RocksDB's value layout), one
/// LZ4 block per series, each operation one `LZ4_decompress_safe` of a series' block — the
/// bandwidth of the cheapest general decompression of this data, the physical reference.
struct TSScan: Workload {
    let name = "ts-scan"
    let summary = "read every event of a series, round-robin over the series (with LZ4 decompression as reference)"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 2_000
    let quickOperations = 500

    func operationUnit(_ run: RunContext) -> String {
        let lengths = SeriesValues.lengths(count: run.count, series: run.config.series, batch: run.config.batch)
        let filled = lengths.filter { $0 > 0 }
        let mean = filled.isEmpty ? 0 : filled.reduce(0, +) / filled.count
        return "one read of every event of a series (\(TableReport.grouped(mean)) events on average, 16 B each)"
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (ts, lengths, values) = try TimeSeriesEngines.openLoaded(run, recorder: recorder)
        try ts.session {
            for op in 0..<run.operations {
                let s = op % run.config.series
                let n = Int(lengths[s])
                guard n > 0 else { continue }
                let events = try recorder.measure(items: n, bytes: n * 16) { try ts.range(series: s, from: 0, count: n) }
                guard events.count == n else {
                    throw BenchError("\(run.engine) returned \(events.count) events of series \(s), expected \(n)")
                }
                for (j, e) in events.enumerated()
                where e.sequence != UInt64(j) || e.value != values.value(series: s, sequence: e.sequence) {
                    throw BenchError("\(run.engine) returned a wrong event \(e.sequence) of series \(s)")
                }
            }
        }
        let close = try Clock.seconds { try ts.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var referenceName: String? { "lz4-decompress" }

    func reference(config: BenchConfig, count: Int, operations: Int, directory: URL, recorder: Recorder) throws -> (outcome: RunOutcome, bytes: Int) {
        let lengths = SeriesValues.lengths(count: count, series: config.series, batch: config.batch)
        let values = SeriesValues(config: config, count: count)
        let base = Int64(Date().timeIntervalSince1970 * 1000)
        var blocks: [[UInt8]] = []
        var compressedBytes = 0
        for (s, n) in lengths.enumerated() {
            var raw = [UInt8](repeating: 0, count: n * 16)
            raw.withUnsafeMutableBytes { p in
                for i in 0..<n {
                    p.storeBytes(of: (base + Int64(i)).bigEndian, toByteOffset: i * 16, as: Int64.self)
                    p.storeBytes(of: values.value(series: s, sequence: UInt64(i)).bitPattern.bigEndian,
                                 toByteOffset: i * 16 + 8, as: UInt64.self)
                }
            }
            var block = [UInt8](repeating: 0, count: Int(LZ4_compressBound(Int32(raw.count))))
            let size = raw.withUnsafeBytes { r in
                block.withUnsafeMutableBytes { b in
                    LZ4_compress_default(r.baseAddress?.assumingMemoryBound(to: CChar.self),
                                         b.baseAddress?.assumingMemoryBound(to: CChar.self),
                                         Int32(r.count), Int32(b.count))
                }
            }
            guard size > 0 || raw.isEmpty else { throw BenchError("LZ4_compress_default failed on series \(s)") }
            block.removeSubrange(Int(size)...)
            blocks.append(block)
            compressedBytes += Int(size)
        }
        var output = [UInt8](repeating: 0, count: (lengths.max() ?? 0) * 16)
        for op in 0..<operations {
            let s = op % config.series
            let n = lengths[s]
            guard n > 0 else { continue }
            let decoded = recorder.measure(items: n, bytes: n * 16) {
                blocks[s].withUnsafeBytes { b in
                    output.withUnsafeMutableBytes { o in
                        LZ4_decompress_safe(b.baseAddress?.assumingMemoryBound(to: CChar.self),
                                            o.baseAddress?.assumingMemoryBound(to: CChar.self),
                                            Int32(b.count), Int32(o.count))
                    }
                }
            }
            guard decoded == n * 16 else {
                throw BenchError("LZ4_decompress_safe returned \(decoded) bytes of series \(s), expected \(n * 16)")
            }
        }
        return (RunOutcome(records: count), compressedBytes)
    }

    func tableNote(_ config: BenchConfig) -> String? {
        "values \(config.values.rawValue), B/record settled (B/event); lz4-decompress: the same events as 16-byte records, "
            + "one LZ4 block per series, B/record = LZ4 bytes per event"
    }
}
