import Foundation
import GRDB
import GRDBSQLite

/// Opening SQLite through GRDB, configured as in Strata.docc/Performance.md ("Benchmarks"): WAL journal,
/// `synchronous = FULL` for `--durability synchronous` and `NORMAL` for `buffered` (SQLite's
/// recommended pairing with WAL), a page cache of the same byte budget the other engines get
/// (per connection), default 4 KiB pages and default WAL auto-checkpoint (1,000 pages).
///
/// One connection (a `DatabaseQueue`), or with `--threads` above 1 a `DatabasePool` (a writer and
/// up to that many reader connections, which read at once in WAL mode): loads go through the
/// writer, each reading thread through a reader of its own.
enum SQLite {
    static func open(directory: URL, config: BenchConfig) throws -> any DatabaseWriter {
        var configuration = Configuration()
        let synchronous = config.durability == .synchronous ? "FULL" : "NORMAL"
        let cacheBytes = config.cacheBytes
        configuration.prepareDatabase { db in
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA journal_mode = WAL") }
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            try db.execute(sql: "PRAGMA cache_size = -\(max(cacheBytes / 1024, 1))")
        }
        let path = directory.appendingPathComponent("bench.sqlite").path
        guard config.threads > 1 else { return try DatabaseQueue(path: path, configuration: configuration) }
        configuration.maximumReaderCount = config.threads
        return try DatabasePool(path: path, configuration: configuration)
    }

    /// Runs `body` on a connection of `database`: with `reading`, one of a pool's readers, else the
    /// writer (a queue's only connection). Neither opens a transaction around `body`, so that each
    /// read statement is its own implicit transaction on either (as on one thread).
    static func access(_ database: any DatabaseWriter, reading: Bool, _ body: (Database) throws -> Void) throws {
        if reading {
            try database.unsafeRead(body)
        } else {
            try database.writeWithoutTransaction(body)
        }
    }

    /// Checkpoints the WAL into the database file and truncates it (the settled state read
    /// workloads start from).
    static func checkpoint(_ db: Database) throws {
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

/// A prepared GRDB statement driven through the SQLite C API on the hot path: bind, step, read
/// columns in place, reset. This is the fastest way to run a prepared statement; GRDB provides
/// the connection, configuration and transactions.
struct Prepared {
    let statement: Statement
    var handle: OpaquePointer { statement.sqliteStatement }

    init(_ db: Database, _ sql: String) throws {
        statement = try db.makeStatement(sql: sql)
    }

    /// Binds `blob` to parameter `index` (1-based) without copying: the bytes must stay valid
    /// until the statement is stepped and reset.
    @inline(__always) func bind(_ index: Int32, blob: UnsafeRawBufferPointer) {
        sqlite3_bind_blob(handle, index, blob.baseAddress, Int32(blob.count), nil)
    }

    @inline(__always) func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(handle, index, value)
    }

    @inline(__always) func bind(_ index: Int32, _ value: Double) {
        sqlite3_bind_double(handle, index, value)
    }

    /// Binds text, copied by SQLite.
    @inline(__always) func bind(_ index: Int32, text: String) {
        var text = text
        _ = text.withUTF8 { p in
            sqlite3_bind_text(handle, index, UnsafeRawPointer(p.baseAddress)?.assumingMemoryBound(to: CChar.self),
                              Int32(p.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }
    }

    /// Steps once: true when a row is available, false when done.
    @inline(__always) func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw BenchError("sqlite step: \(String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))))")
    }

    @inline(__always) func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    @inline(__always) func blob(_ column: Int32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: sqlite3_column_blob(handle, column), count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// The text of `column`, or nil for NULL.
    @inline(__always) func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, column) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self)
    }

    @inline(__always) func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    @inline(__always) func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
}
