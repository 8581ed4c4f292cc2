import Foundation
import GRDB

/// SQLite's best layout for the raw key-value data: the key is the primary key of a
/// `WITHOUT ROWID` table, so the records live in one B-tree in key order.
///
///     CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID
final class SQLiteKeyValue: KeyValueEngine {
    private let database: any DatabaseWriter
    /// Whether this handle reads on one of the pool's reader connections (``reader()``) rather than
    /// through the writer.
    private let reading: Bool
    private var db: Database?
    private var insert: Prepared?
    private var select: Prepared?

    init(directory: URL, config: BenchConfig) throws {
        database = try SQLite.open(directory: directory, config: config)
        reading = false
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
        }
    }

    private init(reading database: any DatabaseWriter) {
        self.database = database
        reading = true
    }

    func reader() throws -> any KeyValueEngine {
        database is DatabasePool ? SQLiteKeyValue(reading: database) : self
    }

    func session(_ body: () throws -> Void) throws {
        try SQLite.access(database, reading: reading) { db in
            self.db = db
            defer {
                self.db = nil
                if reading { select = nil }
            }
            if select == nil {
                if !reading { insert = try Prepared(db, "INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)") }
                select = try Prepared(db, "SELECT v FROM kv WHERE k = ?")
            }
            try body()
        }
    }

    private func connection() throws -> Database {
        guard let db else { throw BenchError("sqlite used outside a session") }
        return db
    }

    func write(_ batch: RecordBatch) throws {
        let db = try connection()
        guard let insert else { throw BenchError("sqlite used outside a session") }
        try db.inTransaction {
            try batch.forEach { k, v in
                insert.bind(1, blob: k)
                insert.bind(2, blob: v)
                _ = try insert.step()
                insert.reset()
            }
            return .commit
        }
    }

    func get(_ key: [UInt8]) throws -> [UInt8]? {
        guard let select else { throw BenchError("sqlite used outside a session") }
        defer { select.reset() }
        return try key.withUnsafeBytes { k in
            select.bind(1, blob: k)
            return try select.step() ? Array(select.blob(0)) : nil
        }
    }

    func scanner() throws -> any KeyValueScanner {
        Scanner(try Prepared(try connection(), "SELECT k, v FROM kv ORDER BY k"))
    }

    func settle() throws {
        try database.writeWithoutTransaction { db in try SQLite.checkpoint(db) }
    }

    func close() throws {
        insert = nil
        select = nil
        try database.close()
    }

    private final class Scanner: KeyValueScanner {
        let statement: Prepared
        var done = false
        init(_ statement: Prepared) { self.statement = statement }
        func next(_ limit: Int) throws -> (items: Int, bytes: Int) {
            var n = 0, bytes = 0
            while n < limit, !done {
                guard try statement.step() else { done = true; statement.reset(); break }
                bytes += statement.blob(0).count + statement.blob(1).count
                n += 1
            }
            return (n, bytes)
        }
    }
}
