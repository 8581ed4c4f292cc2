/// `doc-index-range`: 1,000 rows of the secondary index on `total` from a random start, in a
/// settled store of `--count` documents (1 M by default) saved as doc-save does (untimed). The
/// rows are checked to be in order and at or above the start.
struct DocIndexRange: Workload {
    let name = "doc-index-range"
    let summary = "read 1,000 rows of a secondary index from a random key"
    let defaultCount = 1_000_000
    let quickCount = 50_000
    let defaultOperations = 5_000
    let quickOperations = 500

    func operationUnit(_ run: RunContext) -> String { "one index range of 1000 rows" }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let d = try DocumentEngines.openLoaded(run, recorder: recorder)
        let totals = (0..<run.count).map(DocumentEngines.total).sorted()
        try ParallelReads.run(run, recorder: recorder) { thread, operations, recorder in
            let d = try d.reader()
            var rng = XorShift64Star(seed: ParallelReads.seed(run.config.seed, thread: thread))
            try d.session {
                for _ in 0..<operations {
                    let start = Int64(rng.below(1_000_000))
                    var rows: [(total: Int64, id: String)] = []
                    _ = try recorder.measureWork {
                        rows = try d.indexRange(from: start, limit: 1000)
                        return (rows.count, 0)
                    }
                    let first = Self.lowerBound(totals, start)
                    let expected = min(1000, totals.count - first)
                    guard rows.count == expected else {
                        throw BenchError("\(run.engine) returned \(rows.count) index rows from \(start), expected \(expected)")
                    }
                    for (j, row) in rows.enumerated() where row.total != totals[first + j] {
                        throw BenchError("\(run.engine) returned a wrong index row \(j) from \(start)")
                    }
                }
            }
        }
        let close = try Clock.seconds { try d.close() }
        return RunOutcome(records: run.count, closeSeconds: close)
    }

    var runsInThreads: Bool { true }

    private static func lowerBound(_ a: [Int64], _ x: Int64) -> Int {
        var lo = 0, hi = a.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if a[mid] < x { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
