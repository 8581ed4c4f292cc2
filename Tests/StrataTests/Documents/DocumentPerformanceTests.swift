import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Goal figures of the document database, measured only when STRATA_PERF is set, in a release
// build: `STRATA_PERF=1 swift test -c release -Xswiftc -enable-testing --filter DocumentPerformanceTests`.
// Prints figures; asserts nothing about time.

@Suite(.enabled(if: ProcessInfo.processInfo.environment["STRATA_PERF"] != nil))
struct DocumentPerformanceTests {
    static func invoice(_ i: Int) -> Document {
        Document(id: String(format: "inv-%08d", i), fields: [
            "InvoiceNumber": .string("A-\(i)"), "Customer": .string("customer-\(i % 1000)"),
            "TotalCost": .int(Int64(i % 10_000)), "Currency": "EUR", "Paid": .bool(i % 3 == 0),
            "Date": .string("2026-11-\(10 + i % 18)T08:30:00Z"),
            "Lines": [["sku": .string("SKU-\(i % 97)"), "qty": .int(Int64(1 + i % 5)), "price": .double(Double(i % 400) / 4)],
                      ["sku": .string("SKU-\(i % 89)"), "qty": 1, "price": 12.5]],
            "Notes": "Payment due within 30 days of the invoice date.",
        ])
    }

    @Test func goalFigures() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var options = StoreOptions(durability: .buffered)
        options.memtableSize = 64 << 20
        let store = try Store.open(at: tmp.url, options: options)
        defer { try? store.close() }
        let db = try store.documents("bench", indexes: [
            DocumentIndex(name: "cost", version: "1", map: { doc, emit in
                if let c = doc["TotalCost"] { emit(c, doc["TotalCost"]) }
            }, reduce: .sum)
        ])
        let textBytes = Self.invoice(12345).jsonData().count
        let total = 1_000_000
        let clock = ContinuousClock()
        var saveTime = Duration.zero
        for start in stride(from: 0, to: total, by: 1000) {
            let batch = (start..<start + 1000).map(Self.invoice)
            saveTime += clock.measure { _ = try? db.save(contentsOf: batch) }
        }
        let saveRate = Double(total) / saveTime.seconds
        var getTime = Duration.zero
        var r = SplitMix64(seed: 1)
        let gets = 200_000
        getTime = try clock.measure {
            for _ in 0..<gets { _ = try db.document(id: String(format: "inv-%08d", r.below(total))) }
        }
        var latencies: [Double] = []
        for _ in 0..<1000 {
            let start = Int64(r.below(9000))
            var q = IndexQuery.range(start: .int(start), end: nil)
            q.limit = 1000
            q.reduce = false
            let t = try clock.measure { _ = try db.query("cost", q) }
            latencies.append(t.seconds * 1000)
        }
        latencies.sort()
        let sumTime = try clock.measure { _ = try db.query("cost", .all) }
        try store.compact()
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
        var bytes = 0
        for f in files {
            let attributes = try? FileManager.default.attributesOfItem(atPath: tmp.file(f))
            bytes += (attributes?[.size] as? Int) ?? 0
        }
        print("""
            DOCUMENTS PERF (uptime: \((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"))
              save(contentsOf:) 1000/batch, 1 index, buffered: \(Int(saveRate)) documents/s (JSON text \(textBytes) B/doc)
              document(id:) warm: \(Int(Double(gets) / getTime.seconds)) /s
              1000-row range query over 1M: p50 \(latencies[500]) ms, p99 \(latencies[990]) ms
              .sum over 1M rows: \(sumTime.seconds * 1000) ms
              bytes on disk per document after compaction: \(bytes / total) (\(100 * bytes / total / textBytes)% of JSON text)
            """)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
