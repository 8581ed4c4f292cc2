import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: crafted records in every keyspace of FORMAT.md §3.2 — the catalog, time-series events
// and edit index, history messages and channel heads, documents, index rows, the change feed,
// attachments, conflicting revisions, local documents and the security policy — under the ids of
// collections that exist, with the key's numbers at 0, 1, 2^63 − 1, 2^63 and 2^64 − 1 and values
// that are empty, a chunk marker, all ones, truncated varints and such. (The push keyspace has
// its own generator over its record layouts, RecordGeneratorTests.) Each record is written with
// valid checksums; then the store is opened, every collection read and written, and every
// `strata-dump` verb run: any outcome but a trap or an untyped error is fine, and a refused open
// changes no byte. The full product is 570 records; a deterministic sample of 160 of them runs.

/// The store every case starts from: series `s` (Double, some events chunked), channel `c`,
/// database `db` with index `byN` and a document, a security policy, and their catalog ids.
private struct Base: Sendable {
    let dir: TemporaryDirectory
    let series: UInt64, channel: UInt64, database: UInt64, index: UInt64

    static let index = DocumentIndex(name: "byN", version: "1") { document, emit in emit(document["n"], nil) }

    static func make() throws -> Base {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("s", of: Double.self)
        try s.append(contentsOf: (1...20).map(Double.init))
        let c = try store.channel("c", of: String.self)
        _ = try c.publish("hello")
        let db = try store.documents("db", indexes: [index])
        _ = try db.save(Document(id: "a", fields: ["n": .int(1)]))
        _ = try db.query("byN", IndexQuery(.all))
        _ = try store.setSecurityPolicy(SecurityPolicy())
        try store.compact()
        try s.append(21)
        func id(_ kind: CollectionKind, _ name: String) throws -> UInt64 {
            try #require(try store.catalog.entry(kind: kind, name: name)).id
        }
        return Base(dir: dir, series: try id(.timeSeries, "s"), channel: try id(.channel, "c"),
                    database: try id(.documentDatabase, "db"), index: try id(.documentIndex, "db\0byN"))
    }

    static let shared: Base? = try? make()
}

private func tuple(_ build: (inout TupleKeyEncoder) -> Void) -> [UInt8] {
    var e = TupleKeyEncoder()
    build(&e)
    return e.bytes
}

private let values: [(String, [UInt8])] = [
    ("empty", []), ("0", [0]), ("1", [1]), ("2", [2]), ("chunk marker", [0x80]),
    ("chunk marker and ones", [0x80] + Array(repeating: 0xFF, count: 12)),
    ("ones", Array(repeating: 0xFF, count: 9)), ("varint 2^64-1", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    ("zeros", Array(repeating: 0, count: 24)), ("layout 2 and max", [2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
]

/// Every crafted record of the product, then a deterministic sample of it.
private let records: [CraftedRecord] = {
    guard let base = Base.shared else { return [] }
    var keys: [(String, [UInt8])] = []
    for kind in [CollectionKind.timeSeries, .channel, .documentDatabase, .documentIndex] {
        for name in ["s", "c", "db", "db\0byN"] {
            keys.append(("catalog (\(kind.id), \(name.debugDescription))", tuple { $0.append(UInt64(0)); $0.append(kind.id); $0.append(name) }))
        }
    }
    keys.append(("catalog counter", tuple { $0.append(UInt64(0)); $0.append(UInt64(0)) }))
    let owners: [(UInt64, UInt64, [String])] = [
        (2, base.series, ["n"]), (8, base.series, ["n", "nn"]), (3, base.channel, ["n"]), (10, base.channel, [""]),
        (4, base.database, ["s"]), (6, base.database, ["n"]), (7, base.database, ["ss"]), (12, base.database, ["ss"]),
        (13, base.database, ["s"]), (5, base.index, ["raw"]), (16, 0, [""]),
    ]
    for (keyspace, id, shapes) in owners {
        for shape in shapes {
            switch shape {
            case "": keys.append(("(\(keyspace), \(id))", tuple { $0.append(keyspace); $0.append(id) }))
            case "n":
                for n in Hardening.extremes { keys.append(("(\(keyspace), \(id), \(n))", tuple { $0.append(keyspace); $0.append(id); $0.append(n) })) }
            case "nn":
                for n in Hardening.extremes {
                    keys.append(("(\(keyspace), \(id), \(n), \(n))", tuple { $0.append(keyspace); $0.append(id); $0.append(n); $0.append(n) }))
                }
            case "s": for s in ["a", "z"] { keys.append(("(\(keyspace), \(id), \(s))", tuple { $0.append(keyspace); $0.append(id); $0.append(s) })) }
            case "ss":
                for s in ["1-abc", "x"] {
                    keys.append(("(\(keyspace), \(id), a, \(s))", tuple { $0.append(keyspace); $0.append(id); $0.append("a"); $0.append(s) }))
                }
            default:  // index rows: a null key, document "a", emit index n
                for n in Hardening.extremes {
                    keys.append(("(5, \(id)) null a \(n)", tuple { $0.append(keyspace); $0.append(id) } + [0x10] + tuple { $0.append("a"); $0.append(n) }))
                }
            }
        }
    }
    var all: [CraftedRecord] = []
    for (k, key) in keys { for (v, value) in values { all.append(CraftedRecord(label: "\(k) = \(v)", key: key, value: value)) } }
    var rng = SplitMix64(seed: 23)
    return Array(all.shuffled(using: &rng).prefix(160))
}()

@Suite struct KeyspaceFuzzTests {
    @Test("a crafted record in every keyspace: open, every collection's reads and writes, and every strata-dump verb refuse or work, never trap",
          arguments: records)
    func record(_ c: CraftedRecord) throws {
        let base = try #require(Base.shared)
        let dir = try Hardening.copy(base.dir)
        defer { dir.remove() }
        try Hardening.writeRaw(dir, [(c.key, c.value)])
        try Hardening.exerciseEveryCollection(dir, indexes: [Base.index])
    }
}
