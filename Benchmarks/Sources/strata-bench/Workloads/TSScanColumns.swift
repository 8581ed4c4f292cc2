import Foundation
import Strata

/// `ts-scan-columns`: `ts-scan` through `TimeSeries.columns(_:)` (API.md "Columnar time-series
/// reads"): every event of one series per operation as arrays of sequences, timestamps, values
/// and authors, no `Event` per event; the operations going round-robin over the series of a
/// settled store of `--count` events loaded as ts-append does. Payload bytes count 16 per event.
/// Every event's sequence and value is checked. Strata only; beside it the same `lz4-decompress`
/// reference row as `ts-scan`, measured in the same run.
struct TSScanColumns: Workload {
    let name = "ts-scan-columns"
    let summary = "read every event of a series as columns (TimeSeries.columns), round-robin (with LZ4 decompression as reference)"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 2_000
    let quickOperations = 500

    func unavailability(on engine: EngineKind) -> String? {
        engine == .strata ? nil : "columnar reads are Strata's API"
    }

    func operationUnit(_ run: RunContext) -> String {
        TSScan().operationUnit(run).replacingOccurrences(of: "one read of", with: "one columnar read of")
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let (ts, lengths, values) = try TimeSeriesEngines.openLoaded(run, recorder: recorder)
        guard let strata = ts as? StrataTimeSeries else { throw BenchError("\(run.engine) has no columnar reads") }
        for op in 0..<run.operations {
            let s = op % run.config.series
            let n = Int(lengths[s])
            guard n > 0 else { continue }
            let columns = try recorder.measure(items: n, bytes: n * 16) { try strata.columns(series: s, from: 0, count: n) }
            guard columns.count == n else {
                throw BenchError("strata returned \(columns.count) events of series \(s), expected \(n)")
            }
            for j in 0..<n where columns.sequences[j] != UInt64(j) || columns.values[j] != values.value(series: s, sequence: UInt64(j)) {
                throw BenchError("strata returned a wrong event \(columns.sequences[j]) of series \(s)")
            }
        }
        let close = try Clock.seconds { try ts.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var referenceName: String? { "lz4-decompress" }

    func reference(config: BenchConfig, count: Int, operations: Int, directory: URL, recorder: Recorder) throws -> (outcome: RunOutcome, bytes: Int) {
        try TSScan().reference(config: config, count: count, operations: operations, directory: directory, recorder: recorder)
    }

    func tableNote(_ config: BenchConfig) -> String? { TSScan().tableNote(config) }
}
