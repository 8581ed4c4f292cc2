import Foundation
import GRDB
import Strata

/// One event as the ts-* workloads read it back.
struct SeriesEvent {
    var sequence: UInt64
    var timestamp: Date
    var value: Double
}

/// The time-series interface the ts-* workloads drive: series 0..<`--series`, each a contiguous
/// sequence of `Double` events from 0, with a millisecond timestamp.
protocol TimeSeriesEngine: AnyObject {
    func session(_ body: () throws -> Void) throws
    /// Appends `values` to `series` as one atomic write (the next sequence numbers, the clock's time).
    func append(series: Int, values: [Double]) throws
    /// The events `from ..< from + count` of `series`, in sequence order.
    func range(series: Int, from: UInt64, count: Int) throws -> [SeriesEvent]
    /// The latest event of `series`.
    func latest(series: Int) throws -> SeriesEvent?
    func settle() throws
    func close() throws
    /// The handle one thread of a `--threads` run reads through (``ParallelReads``): the engine
    /// itself where it is thread-safe (Strata, RocksDB; the default); SQLite's with a
    /// `DatabasePool`, a handle with its own session on one of the pool's reader connections.
    func reader() throws -> any TimeSeriesEngine
}

extension TimeSeriesEngine {
    func reader() throws -> any TimeSeriesEngine { self }
}

enum TimeSeriesEngines {
    /// The read workloads' store: opens the run's engine, loads `run.count` events as ts-append
    /// does (untimed, shown as preparation) and settles it; returns it with each series' length
    /// and the values written (to check reads against).
    static func openLoaded(_ run: RunContext, recorder: Recorder) throws -> (any TimeSeriesEngine, [UInt64], SeriesValues) {
        let ts = try open(run.engine, directory: run.directory, config: run.config, session: run.session)
        let values = SeriesValues(config: run.config, count: run.count)
        var loaded = 0
        let lengths = try appendAll(ts, count: run.count, config: run.config, values: values) { _, values, append in
            try append()
            loaded += values.count
            recorder.preparing(done: loaded, of: run.count)
        }
        try ts.settle()
        return (ts, lengths, values)
    }

    /// Opens `engine`'s time series; with `session` (Strata only), through a `StoreSession`.
    static func open(_ engine: EngineKind, directory: URL, config: BenchConfig, session: Bool = false) throws -> any TimeSeriesEngine {
        if session && engine != .strata { throw BenchError("only Strata has sessions") }
        switch engine {
        case .strata: return try StrataTimeSeries(directory: directory, config: config, session: session)
        case .sqlite: return try SQLiteTimeSeries(directory: directory, config: config)
        case .rocksdb: return try RocksTimeSeries(directory: directory, config: config)
        }
    }

    /// Appends `count` events, `batch` per write, the writes going round-robin over the series;
    /// the values from `source` (made for the same `count` and `config`); calls `write` for each
    /// (the ts-append operation) and returns the events per series.
    static func appendAll(_ ts: any TimeSeriesEngine, count: Int, config: BenchConfig, values source: SeriesValues,
                          write: (_ series: Int, _ values: [Double], _ append: () throws -> Void) throws -> Void) throws -> [UInt64] {
        var next = [UInt64](repeating: 0, count: config.series)
        var values: [Double] = []
        values.reserveCapacity(config.batch)
        try ts.session {
            var written = 0, op = 0
            while written < count {
                let s = op % config.series
                let n = min(config.batch, count - written)
                values.removeAll(keepingCapacity: true)
                for j in 0..<n { values.append(source.value(series: s, sequence: next[s] + UInt64(j))) }
                try write(s, values) { try ts.append(series: s, values: values) }
                next[s] += UInt64(n)
                written += n
                op += 1
            }
        }
        return next
    }
}

/// Strata's time series: `store.timeSeries("bench/series-N", of: Double.self)`, appends with
/// `append(contentsOf:)`, reads with `query(RangeQuery.values.from(sequence:).next(_:))` and `latest`.
/// With `session`, the handles come from `store.session(principal: "bench")` under
/// ``sessionPolicy``, so that every call is checked.
final class StrataTimeSeries: TimeSeriesEngine {
    let store: Store
    private let series: [TimeSeries<Double>]

    init(directory: URL, config: BenchConfig, session: Bool = false) throws {
        let store = try Store.open(at: directory, options: StrataSettings.options(config))
        self.store = store
        if session {
            try store.setSecurityPolicy(Self.sessionPolicy)
            let bench = try store.session(principal: "bench")
            series = try (0..<config.series).map { try bench.timeSeries("bench/series-\($0)", of: Double.self) }
        } else {
            series = try (0..<config.series).map { try store.timeSeries("bench/series-\($0)", of: Double.self) }
        }
    }

    /// The policy of the `--session` runs: principal "bench" gets what appends and reads need
    /// on the prefix "bench" through two roles (one including a third), beside other roles,
    /// principals and paths, so that resolving a path is not trivial (it is cached per path on
    /// a warm session, so the measured cost is the per-call check).
    static let sessionPolicy: SecurityPolicy = {
        var policy = SecurityPolicy()
        policy.roles["bench-writer"] = Role(paths: ["bench": [.updateTopic, .modifyTopic], "bench/archive": []])
        policy.roles["bench-reader"] = Role(paths: ["bench": [.readTopic, .selectTopic], "bench/series-0/x": [.readTopic]],
                                            includedRoles: ["auditor"])
        policy.roles["auditor"] = Role(global: [.viewSecurity], paths: ["": [.readTopic], "bench/series-1": [.readTopic]],
                                       includedRoles: ["bench-reader"])
        policy.roles["trader"] = Role(paths: ["prices": [.readTopic, .selectTopic, .updateTopic, .editOwnTimeSeriesEvents],
                                              "prices/internal": []])
        policy.principals["bench"] = ["bench-writer", "bench-reader"]
        policy.principals["alice"] = ["trader"]
        policy.defaultRoles = ["auditor"]
        return policy
    }()

    func session(_ body: () throws -> Void) throws { try body() }

    func append(series s: Int, values: [Double]) throws {
        try series[s].append(contentsOf: values)
    }

    func range(series s: Int, from: UInt64, count: Int) throws -> [SeriesEvent] {
        let result = try series[s].query(RangeQuery.values.from(sequence: from).next(count - 1))
        return result.events.map { SeriesEvent(sequence: $0.sequence, timestamp: $0.timestamp, value: $0.value) }
    }

    func latest(series s: Int) throws -> SeriesEvent? {
        try series[s].latest().map { SeriesEvent(sequence: $0.sequence, timestamp: $0.timestamp, value: $0.value) }
    }

    /// The events `from ..< from + count` of `series` as columns (`TimeSeries.columns(_:)`, ts-scan-columns).
    func columns(series s: Int, from: UInt64, count: Int) throws -> SeriesColumns<Double> {
        try series[s].columns(RangeQuery.values.from(sequence: from).next(count - 1))
    }

    func settle() throws { try store.compact() }
    func close() throws { try store.close() }
}

/// SQLite's layout: the events of all series in one `WITHOUT ROWID` table keyed by (series, seq),
/// so a series' events are contiguous in the B-tree; series names in a table of their own.
///
///     CREATE TABLE series(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE)
///     CREATE TABLE events(series INTEGER NOT NULL, seq INTEGER NOT NULL, timestamp INTEGER NOT NULL,
///                         value REAL NOT NULL, PRIMARY KEY(series, seq)) WITHOUT ROWID
///
/// The next sequence of each series is kept in memory (read back with `max(seq)` on open).
final class SQLiteTimeSeries: TimeSeriesEngine {
    private let database: any DatabaseWriter
    /// Whether this handle reads on one of the pool's reader connections (``reader()``) rather than
    /// through the writer.
    private let reading: Bool
    private var db: Database?
    private var next: [UInt64]
    private var insert: Prepared?, select: Prepared?, last: Prepared?

    init(directory: URL, config: BenchConfig) throws {
        database = try SQLite.open(directory: directory, config: config)
        reading = false
        let seriesCount = config.series
        next = try database.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE)")
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS events(series INTEGER NOT NULL, seq INTEGER NOT NULL,
                    timestamp INTEGER NOT NULL, value REAL NOT NULL, PRIMARY KEY(series, seq)) WITHOUT ROWID
                """)
            var next = [UInt64](repeating: 0, count: seriesCount)
            try db.inTransaction {
                for s in 0..<seriesCount {
                    try db.execute(sql: "INSERT OR IGNORE INTO series(id, path) VALUES (?, ?)", arguments: [s, "bench/series-\(s)"])
                    next[s] = UInt64(try Int64.fetchOne(db, sql: "SELECT max(seq) + 1 FROM events WHERE series = ?", arguments: [s]) ?? 0)
                }
                return .commit
            }
            return next
        }
    }

    private init(reading database: any DatabaseWriter) {
        self.database = database
        reading = true
        next = []
    }

    func reader() throws -> any TimeSeriesEngine {
        database is DatabasePool ? SQLiteTimeSeries(reading: database) : self
    }

    func session(_ body: () throws -> Void) throws {
        try SQLite.access(database, reading: reading) { db in
            self.db = db
            defer {
                self.db = nil
                if reading { select = nil; last = nil }
            }
            if select == nil {
                if !reading { insert = try Prepared(db, "INSERT INTO events(series, seq, timestamp, value) VALUES (?, ?, ?, ?)") }
                select = try Prepared(db, "SELECT seq, timestamp, value FROM events WHERE series = ? AND seq >= ? AND seq < ? ORDER BY seq")
                last = try Prepared(db, "SELECT seq, timestamp, value FROM events WHERE series = ? ORDER BY seq DESC LIMIT 1")
            }
            try body()
        }
    }

    func append(series s: Int, values: [Double]) throws {
        guard let db, let insert else { throw BenchError("sqlite used outside a session") }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try db.inTransaction {
            for (j, v) in values.enumerated() {
                insert.bind(1, Int64(s))
                insert.bind(2, Int64(next[s]) + Int64(j))
                insert.bind(3, now)
                insert.bind(4, v)
                _ = try insert.step()
                insert.reset()
            }
            return .commit
        }
        next[s] += UInt64(values.count)
    }

    private static func event(_ p: Prepared) -> SeriesEvent {
        SeriesEvent(sequence: UInt64(p.int64(0)), timestamp: Date(timeIntervalSince1970: Double(p.int64(1)) / 1000), value: p.double(2))
    }

    func range(series s: Int, from: UInt64, count: Int) throws -> [SeriesEvent] {
        guard let select else { throw BenchError("sqlite used outside a session") }
        defer { select.reset() }
        select.bind(1, Int64(s))
        select.bind(2, Int64(from))
        select.bind(3, Int64(from) + Int64(count))
        var out: [SeriesEvent] = []
        out.reserveCapacity(count)
        while try select.step() { out.append(Self.event(select)) }
        return out
    }

    func latest(series s: Int) throws -> SeriesEvent? {
        guard let last else { throw BenchError("sqlite used outside a session") }
        defer { last.reset() }
        last.bind(1, Int64(s))
        return try last.step() ? Self.event(last) : nil
    }

    func settle() throws { try database.writeWithoutTransaction { try SQLite.checkpoint($0) } }

    func close() throws {
        insert = nil; select = nil; last = nil
        try database.close()
    }
}

/// RocksDB's layout: key `"T" ‖ BE32(series) ‖ BE64(seq)`, value `BE64(timestamp ms) ‖ BE64(value bits)`,
/// so a series' events are contiguous and in sequence order. The next sequence of each series is
/// kept in memory (found with a reverse seek on open).
final class RocksTimeSeries: TimeSeriesEngine {
    let db: RocksDB
    private var next: [UInt64]
    private let batch = RocksDB.Batch()

    init(directory: URL, config: BenchConfig) throws {
        db = try RocksDB(path: directory.path, sync: config.durability == .synchronous, cacheBytes: config.cacheBytes)
        next = [UInt64](repeating: 0, count: config.series)
        for s in 0..<config.series {
            if let e = try latest(series: s) { next[s] = e.sequence + 1 }
        }
    }

    @inline(__always) static func key(_ series: Int, _ seq: UInt64) -> [UInt8] {
        var k = [UInt8](repeating: 0, count: 13)
        k[0] = UInt8(ascii: "T")
        k.withUnsafeMutableBytes { p in
            p.storeBytes(of: UInt32(truncatingIfNeeded: series).bigEndian, toByteOffset: 1, as: UInt32.self)
            p.storeBytes(of: seq.bigEndian, toByteOffset: 5, as: UInt64.self)
        }
        return k
    }

    private static func event(_ it: RocksDB.Iterator) -> SeriesEvent {
        let k = it.key, v = it.value
        let seq = UInt64(bigEndian: k.loadUnaligned(fromByteOffset: 5, as: UInt64.self))
        let ms = Int64(bigEndian: v.loadUnaligned(fromByteOffset: 0, as: Int64.self))
        let bits = UInt64(bigEndian: v.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        return SeriesEvent(sequence: seq, timestamp: Date(timeIntervalSince1970: Double(ms) / 1000), value: Double(bitPattern: bits))
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func append(series s: Int, values: [Double]) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        batch.clear()
        var v = [UInt8](repeating: 0, count: 16)
        for (j, value) in values.enumerated() {
            v.withUnsafeMutableBytes { p in
                p.storeBytes(of: now.bigEndian, toByteOffset: 0, as: Int64.self)
                p.storeBytes(of: value.bitPattern.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            batch.put(Self.key(s, next[s] + UInt64(j)), v)
        }
        try db.write(batch)
        next[s] += UInt64(values.count)
    }

    func range(series s: Int, from: UInt64, count: Int) throws -> [SeriesEvent] {
        let it = db.iterator(upperBound: Self.key(s, from + UInt64(count)))
        it.seek(Self.key(s, from))
        var out: [SeriesEvent] = []
        out.reserveCapacity(count)
        while it.isValid {
            out.append(Self.event(it))
            it.next()
        }
        try it.check()
        return out
    }

    func latest(series s: Int) throws -> SeriesEvent? {
        let it = db.iterator(upperBound: Self.key(s + 1, 0))
        it.seekForPrevious(Self.key(s, .max))
        try it.check()
        guard it.isValid, it.key.count == 13, it.key[0] == UInt8(ascii: "T"),
              UInt32(bigEndian: it.key.loadUnaligned(fromByteOffset: 1, as: UInt32.self)) == UInt32(s) else { return nil }
        return Self.event(it)
    }

    func settle() throws { try db.compactAll() }
    func close() throws { db.close() }
}
