import Foundation
import GRDB
import Strata

/// The document-database interface the doc-* workloads drive: documents with an id and a few
/// fields, and a secondary index on the integer field `total`.
protocol DocumentEngine: AnyObject {
    func session(_ body: () throws -> Void) throws
    /// Saves (inserts or replaces) documents `ids` atomically.
    func save(_ ids: Range<Int>) throws
    /// The `total` of document `id` read back (the document fetched and decoded as the engine returns it), or nil.
    func total(of id: Int) throws -> Int64?
    /// The first `limit` rows (total, document id) of the index with `total >= start`, in order.
    func indexRange(from start: Int64, limit: Int) throws -> [(total: Int64, id: String)]
    func settle() throws
    func close() throws
    /// The handle one thread of a `--threads` run reads through (``ParallelReads``): the engine
    /// itself where it is thread-safe (Strata, RocksDB; the default); SQLite's with a
    /// `DatabasePool`, a handle with its own session on one of the pool's reader connections.
    func reader() throws -> any DocumentEngine
}

extension DocumentEngine {
    func reader() throws -> any DocumentEngine { self }
}

enum DocumentEngines {
    /// The read workloads' store: opens the run's engine, saves `run.count` documents as doc-save
    /// does (untimed, shown as preparation) and settles it.
    static func openLoaded(_ run: RunContext, recorder: Recorder) throws -> any DocumentEngine {
        let d = try open(run.engine, directory: run.directory, config: run.config)
        try saveAll(d, count: run.count, config: run.config) { ids, save in
            try save()
            recorder.preparing(done: ids.upperBound, of: run.count)
        }
        try d.settle()
        return d
    }

    static func open(_ engine: EngineKind, directory: URL, config: BenchConfig) throws -> any DocumentEngine {
        switch engine {
        case .strata: return try StrataDocuments(directory: directory, config: config)
        case .sqlite: return try SQLiteDocuments(directory: directory, config: config)
        case .rocksdb: return try RocksDocuments(directory: directory, config: config)
        }
    }

    static func id(_ i: Int) -> String { "doc-\(i)" }

    /// The indexed field of document `i`: pseudo-random in 0..<1,000,000.
    @inline(__always) static func total(_ i: Int) -> Int64 {
        Int64(((UInt64(i) &* 0x9E37_79B9_7F4A_7C15) >> 20) % 1_000_000)
    }

    /// Document `i`'s fields: {"number", "customer", "total", "items", "paid"}.
    static func fields(_ i: Int) -> [String: JSON] {
        ["number": .string("INV-\(i)"), "customer": .string("customer-\(i % 1000)"),
         "total": .int(total(i)), "items": .int(Int64(i % 20)), "paid": .bool(i % 3 == 0)]
    }

    /// The same document as JSON text (what the peers store).
    static func json(_ i: Int) -> String {
        #"{"number":"INV-\#(i)","customer":"customer-\#(i % 1000)","total":\#(total(i)),"items":\#(i % 20),"paid":\#(i % 3 == 0)}"#
    }

    /// Saves documents 0..<count, `batch` per atomic save; `write` wraps each save.
    static func saveAll(_ d: any DocumentEngine, count: Int, config: BenchConfig,
                        write: (_ ids: Range<Int>, _ save: () throws -> Void) throws -> Void) throws {
        try d.session {
            var i = 0
            while i < count {
                let ids = i ..< min(i + config.batch, count)
                try write(ids) { try d.save(ids) }
                i = ids.upperBound
            }
        }
    }
}

/// Strata's documents: `store.documents("bench", indexes: [DocumentIndex(name: "total", …)])`,
/// `save(contentsOf:)`, `document(id:)`, `query("total", .range(start:))` with `limit`.
final class StrataDocuments: DocumentEngine {
    let store: Store
    private let db: DocumentDatabase

    init(directory: URL, config: BenchConfig) throws {
        store = try Store.open(at: directory, options: StrataSettings.options(config))
        db = try store.documents("bench", indexes: [
            DocumentIndex(name: "total", version: "1", map: { doc, emit in
                if let t = doc["total"] { emit(t, nil) }
            }),
        ])
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func save(_ ids: Range<Int>) throws {
        _ = try db.save(contentsOf: ids.map { Document(id: DocumentEngines.id($0), fields: DocumentEngines.fields($0)) })
    }

    func total(of i: Int) throws -> Int64? {
        guard let doc = try db.document(id: DocumentEngines.id(i)), case .int(let t)? = doc["total"] else { return nil }
        return t
    }

    func indexRange(from start: Int64, limit: Int) throws -> [(total: Int64, id: String)] {
        var q = IndexQuery.range(start: .int(start))
        q.limit = limit
        return try db.query("total", q).rows.map { row in
            guard case .int(let t) = row.key else { return (-1, row.documentID ?? "") }
            return (t, row.documentID ?? "")
        }
    }

    func settle() throws { try store.compact() }
    func close() throws { try store.close() }
}

/// SQLite's document table: the JSON text keyed by id, with an expression index on `$.total`
/// (SQLite's way to index a field of JSON documents).
///
///     CREATE TABLE docs(id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID
///     CREATE INDEX docs_total ON docs(json_extract(body, '$.total'))
///
/// Reads return the JSON text without parsing it (which favours SQLite: Strata's reads decode
/// the document).
final class SQLiteDocuments: DocumentEngine {
    private let database: any DatabaseWriter
    /// Whether this handle reads on one of the pool's reader connections (``reader()``) rather than
    /// through the writer.
    private let reading: Bool
    private var db: Database?
    private var insert: Prepared?, select: Prepared?, range: Prepared?

    init(directory: URL, config: BenchConfig) throws {
        database = try SQLite.open(directory: directory, config: config)
        reading = false
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS docs(id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID")
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS docs_total ON docs(json_extract(body, '$.total'))")
        }
    }

    private init(reading database: any DatabaseWriter) {
        self.database = database
        reading = true
    }

    func reader() throws -> any DocumentEngine {
        database is DatabasePool ? SQLiteDocuments(reading: database) : self
    }

    func session(_ body: () throws -> Void) throws {
        try SQLite.access(database, reading: reading) { db in
            self.db = db
            defer {
                self.db = nil
                if reading { select = nil; range = nil }
            }
            if select == nil {
                if !reading { insert = try Prepared(db, "INSERT OR REPLACE INTO docs(id, body) VALUES (?, ?)") }
                select = try Prepared(db, "SELECT body FROM docs WHERE id = ?")
                range = try Prepared(db, """
                    SELECT json_extract(body, '$.total'), id FROM docs WHERE json_extract(body, '$.total') >= ?
                    ORDER BY json_extract(body, '$.total') LIMIT ?
                    """)
            }
            try body()
        }
    }

    func save(_ ids: Range<Int>) throws {
        guard let db, let insert else { throw BenchError("sqlite used outside a session") }
        try db.inTransaction {
            for i in ids {
                insert.bind(1, text: DocumentEngines.id(i))
                insert.bind(2, text: DocumentEngines.json(i))
                _ = try insert.step()
                insert.reset()
            }
            return .commit
        }
    }

    func total(of i: Int) throws -> Int64? {
        guard let select else { throw BenchError("sqlite used outside a session") }
        defer { select.reset() }
        select.bind(1, text: DocumentEngines.id(i))
        guard try select.step(), let body = select.text(0) else { return nil }
        return DocumentEngines.totalField(in: body)
    }

    func indexRange(from start: Int64, limit: Int) throws -> [(total: Int64, id: String)] {
        guard let range else { throw BenchError("sqlite used outside a session") }
        defer { range.reset() }
        range.bind(1, start)
        range.bind(2, Int64(limit))
        var out: [(total: Int64, id: String)] = []
        out.reserveCapacity(limit)
        while try range.step() { out.append((range.int64(0), range.text(1) ?? "")) }
        return out
    }

    func settle() throws { try database.writeWithoutTransaction { try SQLite.checkpoint($0) } }

    func close() throws {
        insert = nil; select = nil; range = nil
        try database.close()
    }
}

/// RocksDB's layout: `"D" ‖ id` → `BE64(total) ‖ JSON text`, and an index entry
/// `"I" ‖ BE64(total ^ signbit) ‖ id` → empty, written in the same batch. A save reads the old
/// version first to delete its index entry (what keeping an index right takes on a key-value store).
final class RocksDocuments: DocumentEngine {
    let db: RocksDB
    private let batch = RocksDB.Batch()

    init(directory: URL, config: BenchConfig) throws {
        db = try RocksDB(path: directory.path, sync: config.durability == .synchronous, cacheBytes: config.cacheBytes)
    }

    static func docKey(_ id: String) -> [UInt8] { [UInt8(ascii: "D")] + Array(id.utf8) }

    static func indexKey(_ total: Int64, _ id: String) -> [UInt8] {
        var k = [UInt8(ascii: "I")]
        withUnsafeBytes(of: (UInt64(bitPattern: total) ^ (1 << 63)).bigEndian) { k += $0 }
        return k + Array(id.utf8)
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func save(_ ids: Range<Int>) throws {
        batch.clear()
        var value: [UInt8] = []
        for i in ids {
            let id = DocumentEngines.id(i)
            let key = Self.docKey(id)
            if let old = try db.get(key), old.count >= 8 {
                let oldTotal = old.withUnsafeBytes { Int64(bigEndian: $0.loadUnaligned(as: Int64.self)) }
                batch.delete(Self.indexKey(oldTotal, id))
            }
            let total = DocumentEngines.total(i)
            value.removeAll(keepingCapacity: true)
            withUnsafeBytes(of: total.bigEndian) { value += $0 }
            value += DocumentEngines.json(i).utf8
            batch.put(key, value)
            batch.put(Self.indexKey(total, id), [])
        }
        try db.write(batch)
    }

    func total(of i: Int) throws -> Int64? {
        try Self.docKey(DocumentEngines.id(i)).withUnsafeBytes { k in
            try db.withValue(k) { v -> Int64? in
                guard let v, v.count > 8 else { return nil }
                return DocumentEngines.totalField(in: String(decoding: v[8...], as: UTF8.self))
            }
        }
    }

    func indexRange(from start: Int64, limit: Int) throws -> [(total: Int64, id: String)] {
        let it = db.iterator(upperBound: [UInt8(ascii: "J")])
        it.seek(Self.indexKey(start, ""))
        var out: [(total: Int64, id: String)] = []
        out.reserveCapacity(limit)
        while it.isValid && out.count < limit {
            let k = it.key
            let t = Int64(bitPattern: UInt64(bigEndian: k.loadUnaligned(fromByteOffset: 1, as: UInt64.self)) ^ (1 << 63))
            out.append((t, String(decoding: k[9...], as: UTF8.self)))
            it.next()
        }
        try it.check()
        return out
    }

    func settle() throws { try db.compactAll() }
    func close() throws { db.close() }
}

extension DocumentEngines {
    /// The integer after `"total":` in JSON text (the peers' reads return text; this finds the
    /// field the workload checks, in lieu of a full parse).
    static func totalField(in json: String) -> Int64? {
        guard let r = json.range(of: "\"total\":") else { return nil }
        return Int64(json[r.upperBound...].prefix(while: { $0.isNumber || $0 == "-" }))
    }
}
