import Foundation

/// Prints a workload's results as a text table.
enum TableReport {
    static func print(_ w: WorkloadResult) {
        let title = w.variant.isEmpty ? w.workload : "\(w.workload) (\(w.variant))"
        Swift.print("\n\(title) — \(grouped(w.count)) records, durability \(w.durability)"
                    + (w.batch > 0 ? ", batch \(grouped(w.batch))" : "")
                    + "; one operation = \(w.operationUnit)"
                    + (w.threads.map { "; \($0) thread\($0 == 1 ? "" : "s")" } ?? ""))
        if let threads = w.threads, threads > 1 {
            Swift.print("\(threads) threads reading one store at once, the operations split between them; "
                        + "items/s over the wall time of the parallel phase, latencies of every thread")
        }
        if let note = w.note { Swift.print(note) }
        let header = ["engine", "items/s", "MB/s", "p50", "p99", "p999", "B/record", "strata ×", "disk vs strata"]
        var rows: [[String]] = []
        for r in w.results {
            if let why = r.unavailable {
                rows.append([r.engine, "—", "", "", "", "", "", "", why])
                continue
            }
            rows.append([
                r.engine,
                grouped(Int(r.itemsPerSecond.rounded())),
                r.megabytesPerSecond > 0 ? String(format: "%.1f", r.megabytesPerSecond) : "—",
                duration(r.latencyNanoseconds.p50),
                duration(r.latencyNanoseconds.p99),
                duration(r.latencyNanoseconds.p999),
                String(format: "%.1f", r.bytesPerRecord),
                r.strataSpeedup.map { String(format: $0 < 0.1 ? "%.3f" : "%.2f", $0) } ?? "—",
                r.diskRatioToStrata.map { String(format: "%.2f", $0) } ?? "—",
            ])
        }
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count - 1 || row.count == header.count {
                widths[i] = max(widths[i], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == 0 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: max(widths[i] - c.count, 0)) + c
            }.joined(separator: "  ")
        }
        Swift.print(line(header))
        for row in rows {
            if row[1] == "—" && row[2].isEmpty {
                Swift.print(row[0].padding(toLength: widths[0], withPad: " ", startingAt: 0) + "  " + row[8])
            } else {
                Swift.print(line(row))
            }
        }
        if let unchecked = w.results.first(where: { $0.engine == EngineKind.strata.rawValue && $0.unavailable == nil }),
           let checked = w.results.first(where: { $0.engine == Runner.sessionRow && $0.unavailable == nil }),
           checked.itemsPerSecond > 0, unchecked.latencyNanoseconds.p50 > 0 {
            Swift.print(String(format: "checked/unchecked (strata through a session over strata): %.3f× the time per item, %.3f× the p50",
                               unchecked.itemsPerSecond / checked.itemsPerSecond,
                               Double(checked.latencyNanoseconds.p50) / Double(unchecked.latencyNanoseconds.p50)))
        }
        if let clear = w.results.first(where: { $0.engine == EngineKind.strata.rawValue && $0.unavailable == nil }),
           let sealed = w.results.first(where: { $0.engine == Runner.encryptedRow && $0.unavailable == nil }),
           sealed.itemsPerSecond > 0, clear.itemsPerSecond > 0 {
            Swift.print(String(format: "encrypted/clear (strata with a key over strata): %.3f× the items/s, %.3f× the p50",
                               sealed.itemsPerSecond / clear.itemsPerSecond,
                               Double(sealed.latencyNanoseconds.p50) / Double(max(clear.latencyNanoseconds.p50, 1))))
        }
        for r in w.results { for note in r.notes ?? [] { Swift.print("\(r.engine): \(note)") } }
        if let with = w.results.first(where: { $0.engine == EngineKind.strata.rawValue && $0.unavailable == nil }),
           let without = w.results.first(where: { $0.engine == PushFanout.referenceRow && $0.unavailable == nil }),
           without.itemsPerSecond > 0 {
            Swift.print("with/without subscriptions: \(grouped(Int(with.itemsPerSecond.rounded()))) / "
                        + "\(grouped(Int(without.itemsPerSecond.rounded()))) events/s = "
                        + String(format: "%.3f", with.itemsPerSecond / without.itemsPerSecond))
        }
    }

    /// 1234567 → "1,234,567".
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, ch) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return n < 0 ? "-" + out : out
    }

    /// Nanoseconds in a readable unit.
    static func duration(_ ns: UInt64) -> String {
        let d = Double(ns)
        switch d {
        case ..<1_000: return "\(ns) ns"
        case ..<1_000_000: return String(format: "%.1f µs", d / 1e3)
        case ..<1_000_000_000: return String(format: "%.2f ms", d / 1e6)
        default: return String(format: "%.2f s", d / 1e9)
        }
    }
}
