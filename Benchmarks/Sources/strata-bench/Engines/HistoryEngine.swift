import Foundation
import GRDB
import Strata

/// One message as the history-* workloads read it back.
struct HistoryItem {
    var timetoken: UInt64
    var publisher: String?
    var message: String
}

/// The message-history interface the history-* workloads drive: channels 0..<`--channels` of
/// `String` messages, each with a publisher and a store-assigned timetoken.
protocol HistoryEngine: AnyObject {
    func session(_ body: () throws -> Void) throws
    /// Publishes `messages` to `channel` atomically; returns their timetokens.
    func publish(channel: Int, messages: [String], publisher: String) throws -> [UInt64]
    /// The newest `limit` messages of `channel`, oldest first.
    func fetch(channel: Int, limit: Int) throws -> [HistoryItem]
    /// The number of messages of `channel` with a timetoken greater than `since`.
    func count(channel: Int, since: UInt64) throws -> Int
    func settle() throws
    func close() throws
    /// The handle one thread of a `--threads` run reads through (``ParallelReads``): the engine
    /// itself where it is thread-safe (Strata, RocksDB; the default); SQLite's with a
    /// `DatabasePool`, a handle with its own session on one of the pool's reader connections.
    func reader() throws -> any HistoryEngine
}

extension HistoryEngine {
    func reader() throws -> any HistoryEngine { self }
}

enum HistoryEngines {
    /// The read workloads' store: opens the run's engine, publishes `run.count` messages as
    /// history-publish does (untimed, shown as preparation) and settles it; returns it with every
    /// channel's timetokens.
    static func openLoaded(_ run: RunContext, recorder: Recorder) throws -> (any HistoryEngine, [[UInt64]]) {
        let h = try open(run.engine, directory: run.directory, config: run.config)
        var loaded = 0
        let tokens = try publishAll(h, count: run.count, config: run.config) { messages, publish in
            loaded += messages.count
            recorder.preparing(done: loaded, of: run.count)
            return try publish()
        }
        try h.settle()
        return (h, tokens)
    }

    static func open(_ engine: EngineKind, directory: URL, config: BenchConfig) throws -> any HistoryEngine {
        switch engine {
        case .strata: return try StrataHistory(directory: directory, config: config)
        case .sqlite: return try SQLiteHistory(directory: directory, config: config)
        case .rocksdb: return try RocksHistory(directory: directory, config: config)
        }
    }

    /// Message `n` of `channel`: about 64 bytes of text with a pseudo-random token in it (so that
    /// it does not compress better than chat text would), deterministic so that reads can be checked.
    static func message(channel: Int, _ n: Int) -> String {
        let token = (UInt64(channel) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(n) &* 0xBF58_476D_1CE4_E5B9) &* 0x94D0_49BB_1331_11EB
        return "msg \(channel)/\(n) \(String(token, radix: 36)): see you at the station at \(n % 24):\(n % 60)"
    }

    /// Publishes `count` messages, `batch` per publish, round-robin over the channels; calls
    /// `write` around each publish and returns every channel's timetokens in order.
    static func publishAll(_ h: any HistoryEngine, count: Int, config: BenchConfig,
                           write: (_ messages: [String], _ publish: () throws -> [UInt64]) throws -> [UInt64]) throws -> [[UInt64]] {
        var tokens = [[UInt64]](repeating: [], count: config.channels)
        var messages: [String] = []
        try h.session {
            var written = 0, op = 0
            while written < count {
                let c = op % config.channels
                let n = min(config.batch, count - written)
                messages.removeAll(keepingCapacity: true)
                for j in 0..<n { messages.append(message(channel: c, tokens[c].count + j)) }
                let publisher = "user-\(op % 50)"
                tokens[c] += try write(messages) { try h.publish(channel: c, messages: messages, publisher: publisher) }
                written += n
                op += 1
            }
        }
        return tokens
    }
}

/// The timetokens the peers assign, as Strata does: 100-ns units since the epoch, strictly increasing.
struct TimetokenSource {
    private var last: UInt64 = 0
    mutating func next() -> UInt64 {
        let now = UInt64(Date().timeIntervalSince1970 * 10_000_000)
        last = max(now, last + 1)
        return last
    }
}

/// Strata's message history: `store.channel("bench/channel-N", of: String.self)`, `publish(contentsOf:publisher:)`,
/// `history(limit:)`, `messageCount(since:)`.
final class StrataHistory: HistoryEngine {
    let store: Store
    let channels: [Channel<String>]

    init(directory: URL, config: BenchConfig) throws {
        let store = try Store.open(at: directory, options: StrataSettings.options(config))
        self.store = store
        channels = try (0..<config.channels).map { try store.channel("bench/channel-\($0)", of: String.self) }
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func publish(channel c: Int, messages: [String], publisher: String) throws -> [UInt64] {
        try channels[c].publish(contentsOf: messages, publisher: publisher).map(\.rawValue)
    }

    func fetch(channel c: Int, limit: Int) throws -> [HistoryItem] {
        try channels[c].history(limit: limit).messages.map {
            HistoryItem(timetoken: $0.timetoken.rawValue, publisher: $0.publisher, message: $0.message)
        }
    }

    func count(channel c: Int, since: UInt64) throws -> Int {
        try channels[c].messageCount(since: Timetoken(since))
    }

    func settle() throws { try store.compact() }
    func close() throws { try store.close() }
}

/// SQLite's layout: all messages in one `WITHOUT ROWID` table keyed by (channel, timetoken), so a
/// channel's messages are contiguous and in time order; channel names in a table of their own.
///
///     CREATE TABLE channels(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)
///     CREATE TABLE messages(channel INTEGER NOT NULL, timetoken INTEGER NOT NULL, publisher TEXT,
///                           message TEXT NOT NULL, PRIMARY KEY(channel, timetoken)) WITHOUT ROWID
final class SQLiteHistory: HistoryEngine {
    private let database: any DatabaseWriter
    /// Whether this handle reads on one of the pool's reader connections (``reader()``) rather than
    /// through the writer.
    private let reading: Bool
    private var db: Database?
    private var clock = TimetokenSource()
    private var insert: Prepared?, newest: Prepared?, counting: Prepared?

    init(directory: URL, config: BenchConfig) throws {
        database = try SQLite.open(directory: directory, config: config)
        reading = false
        let channelCount = config.channels
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS channels(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS messages(channel INTEGER NOT NULL, timetoken INTEGER NOT NULL,
                    publisher TEXT, message TEXT NOT NULL, PRIMARY KEY(channel, timetoken)) WITHOUT ROWID
                """)
            try db.inTransaction {
                for c in 0..<channelCount {
                    try db.execute(sql: "INSERT OR IGNORE INTO channels(id, name) VALUES (?, ?)", arguments: [c, "bench/channel-\(c)"])
                }
                return .commit
            }
        }
    }

    private init(reading database: any DatabaseWriter) {
        self.database = database
        reading = true
    }

    func reader() throws -> any HistoryEngine {
        database is DatabasePool ? SQLiteHistory(reading: database) : self
    }

    func session(_ body: () throws -> Void) throws {
        try SQLite.access(database, reading: reading) { db in
            self.db = db
            defer {
                self.db = nil
                if reading { newest = nil; counting = nil }
            }
            if newest == nil {
                if !reading {
                    insert = try Prepared(db, "INSERT INTO messages(channel, timetoken, publisher, message) VALUES (?, ?, ?, ?)")
                }
                newest = try Prepared(db, "SELECT timetoken, publisher, message FROM messages WHERE channel = ? ORDER BY timetoken DESC LIMIT ?")
                counting = try Prepared(db, "SELECT count(*) FROM messages WHERE channel = ? AND timetoken > ?")
            }
            try body()
        }
    }

    func publish(channel c: Int, messages: [String], publisher: String) throws -> [UInt64] {
        guard let db, let insert else { throw BenchError("sqlite used outside a session") }
        var tokens: [UInt64] = []
        tokens.reserveCapacity(messages.count)
        try db.inTransaction {
            for m in messages {
                let tt = clock.next()
                insert.bind(1, Int64(c))
                insert.bind(2, Int64(tt))
                insert.bind(3, text: publisher)
                insert.bind(4, text: m)
                _ = try insert.step()
                insert.reset()
                tokens.append(tt)
            }
            return .commit
        }
        return tokens
    }

    func fetch(channel c: Int, limit: Int) throws -> [HistoryItem] {
        guard let newest else { throw BenchError("sqlite used outside a session") }
        defer { newest.reset() }
        newest.bind(1, Int64(c))
        newest.bind(2, Int64(limit))
        var out: [HistoryItem] = []
        out.reserveCapacity(limit)
        while try newest.step() {
            out.append(HistoryItem(timetoken: UInt64(newest.int64(0)), publisher: newest.text(1), message: newest.text(2) ?? ""))
        }
        out.reverse()
        return out
    }

    func count(channel c: Int, since: UInt64) throws -> Int {
        guard let counting else { throw BenchError("sqlite used outside a session") }
        defer { counting.reset() }
        counting.bind(1, Int64(c))
        counting.bind(2, Int64(bitPattern: since))
        guard try counting.step() else { return 0 }
        return Int(counting.int64(0))
    }

    func settle() throws { try database.writeWithoutTransaction { try SQLite.checkpoint($0) } }

    func close() throws {
        insert = nil; newest = nil; counting = nil
        try database.close()
    }
}

/// RocksDB's layout: key `"H" ‖ BE32(channel) ‖ BE64(timetoken)`, value
/// `u8 publisher length ‖ publisher ‖ message` (UTF-8).
final class RocksHistory: HistoryEngine {
    let db: RocksDB
    private var clock = TimetokenSource()
    private let batch = RocksDB.Batch()

    init(directory: URL, config: BenchConfig) throws {
        db = try RocksDB(path: directory.path, sync: config.durability == .synchronous, cacheBytes: config.cacheBytes)
    }

    static func key(_ channel: Int, _ tt: UInt64) -> [UInt8] {
        var k = [UInt8](repeating: 0, count: 13)
        k[0] = UInt8(ascii: "H")
        k.withUnsafeMutableBytes { p in
            p.storeBytes(of: UInt32(truncatingIfNeeded: channel).bigEndian, toByteOffset: 1, as: UInt32.self)
            p.storeBytes(of: tt.bigEndian, toByteOffset: 5, as: UInt64.self)
        }
        return k
    }

    func session(_ body: () throws -> Void) throws { try body() }

    func publish(channel c: Int, messages: [String], publisher: String) throws -> [UInt64] {
        batch.clear()
        var tokens: [UInt64] = []
        tokens.reserveCapacity(messages.count)
        let who = Array(publisher.utf8.prefix(255))
        var value: [UInt8] = []
        for m in messages {
            let tt = clock.next()
            value.removeAll(keepingCapacity: true)
            value.append(UInt8(who.count))
            value += who
            value += m.utf8
            batch.put(Self.key(c, tt), value)
            tokens.append(tt)
        }
        try db.write(batch)
        return tokens
    }

    func fetch(channel c: Int, limit: Int) throws -> [HistoryItem] {
        let it = db.iterator(upperBound: Self.key(c + 1, 0))
        it.seekForPrevious(Self.key(c, .max))
        var out: [HistoryItem] = []
        out.reserveCapacity(limit)
        let prefix = Self.key(c, 0).prefix(5)
        while it.isValid && out.count < limit {
            let k = it.key
            guard k.count == 13, k.prefix(5).elementsEqual(prefix) else { break }
            let v = it.value
            let n = Int(v[0])
            out.append(HistoryItem(timetoken: UInt64(bigEndian: k.loadUnaligned(fromByteOffset: 5, as: UInt64.self)),
                                   publisher: String(decoding: v[1 ..< 1 + n], as: UTF8.self),
                                   message: String(decoding: v[(1 + n)...], as: UTF8.self)))
            it.previous()
        }
        try it.check()
        out.reverse()
        return out
    }

    func count(channel c: Int, since: UInt64) throws -> Int {
        guard since < .max else { return 0 }
        let it = db.iterator(upperBound: Self.key(c + 1, 0))
        it.seek(Self.key(c, since + 1))
        var n = 0
        while it.isValid {
            n += 1
            it.next()
        }
        try it.check()
        return n
    }

    func settle() throws { try db.compactAll() }
    func close() throws { db.close() }
}
