import Foundation
import Logging
import NIOCore
import PostgresNIO

/// A database's channels (PROTOCOL.md "Channels"): `POST .../publish` (idempotent by message
/// id, consecutive timetokens assigned under the database's sequence lock), `POST .../delete`,
/// `GET .../messages` and `GET .../count`, under `/{db}/_strata/channels/{name}/`. Message,
/// meta and publisher are kept as the JSON texts that arrived and answered verbatim.
enum ChannelMessages {
    /// The most messages one publish may carry.
    static let maximumMessages = 10_000
    /// The most messages one `GET .../messages` answers.
    static let maximumLimit = 10_000

    /// A checked message of a publish request: its id and JSON texts.
    struct Entry: Sendable {
        var index: Int
        var id: String
        var message: String
        var meta: String?
        var publisher: String?
    }

    /// A message's result, in request order.
    enum Outcome: Sendable {
        case published(id: String, timetoken: Int64, seq: Int64)
        case failed(id: String?, GatewayError)
    }

    /// Takes the database row lock (timetokens and sequences are assigned in commit order) and
    /// reads the database's sequence and the channel's last timetoken (0 for a new channel).
    static func lockChannel(_ connection: PostgresConnection, db: Int64, name: String,
                            logger: Logger) async throws -> (seq: Int64, last: Int64) {
        var baseSeq: Int64 = 0, last: Int64 = 0
        for try await (seq, lastTimetoken) in try await connection.query(
            """
            SELECT d.seq, c.last_timetoken FROM databases d
            LEFT JOIN channels c ON c.db = d.id AND c.name = \(name)
            WHERE d.id = \(db) FOR UPDATE OF d
            """, logger: logger).decode((Int64, Int64?).self) {
            baseSeq = seq
            last = lastTimetoken ?? 0
        }
        return (baseSeq, last)
    }

    /// The gateway's clock in 100-ns units since 1970 (PubNub's timetokens).
    static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 10_000_000)
    }

    /// `POST /{db}/_strata/channels/{name}/publish`.
    static func publish(gateway: Gateway, database: String, user: GatewayUser, name: String, body: ByteBuffer) async throws -> [UInt8] {
        try StreamNames.checkAccess(name, .channel, user: user, write: true)
        let spans = try JSONSpans(Array(body.readableBytesView), what: "the publish body")
        let items = try spans.list("messages", limit: maximumMessages, what: "the publish body")
        let list = items.map(\.value)
        var ids = Set<String>()
        for element in list {
            if let id = element["id"]?.stringValue, !ids.insert(id).inserted {
                throw GatewayError.badRequest("the message id '\(id)' appears twice in the request (ids must be distinct)")
            }
        }
        let elementSpans = items.map(\.span)
        var outcomes: [Outcome] = []
        var entries: [Entry] = []
        for (index, element) in list.enumerated() {
            let id = element["id"]?.stringValue
            do throws(GatewayError) {
                guard case let .object(fields) = element else { throw .badRequest("a message must be a JSON object") }
                guard let id else { throw .badRequest("a message needs an id (a string)") }
                try StreamNames.checkKey(id, what: "a message id")
                let span = elementSpans[index]
                guard span.count <= gateway.maxDocumentSize else {
                    throw .tooLarge("message '\(id)' is \(span.count) bytes, over the limit of \(gateway.maxDocumentSize)")
                }
                let fieldSpans = spans.memberValues(span)
                guard fieldSpans.count == fields.count else { throw .badRequest("message '\(id)' could not be read") }
                var entry = Entry(index: index, id: id, message: "", meta: nil, publisher: nil)
                var hasMessage = false
                for (j, field) in fields.enumerated() {
                    switch field.0 {
                    case "message" where !hasMessage:
                        entry.message = spans.text(fieldSpans[j])
                        hasMessage = true
                    case "meta" where entry.meta == nil: entry.meta = spans.text(fieldSpans[j])
                    case "publisher" where entry.publisher == nil: entry.publisher = spans.text(fieldSpans[j])
                    default: break
                    }
                }
                guard hasMessage else { throw .badRequest("message '\(id)' has no message member") }
                entries.append(entry)
                outcomes.append(.failed(id: id, .serverError("not written")))
            } catch {
                outcomes.append(.failed(id: id, error))
            }
        }
        if !entries.isEmpty {
            let written = try await write(entries, gateway: gateway, database: database, user: user, name: name)
            for (entry, outcome) in zip(entries, written) { outcomes[entry.index] = outcome }
        }
        var writer = JSONWriter(capacity: 80 * outcomes.count + 16)
        writer.raw("{\"results\":[")
        for (i, outcome) in outcomes.enumerated() {
            if i > 0 { writer.raw(",") }
            switch outcome {
            case let .published(id, timetoken, seq):
                writer.raw("{\"id\":"); writer.string(id)
                writer.raw(",\"timetoken\":\""); writer.integer(timetoken)
                writer.raw("\",\"seq\":"); writer.integer(seq); writer.raw("}")
            case let .failed(id, error):
                writer.raw("{")
                if let id { writer.raw("\"id\":"); writer.string(id); writer.raw(",") }
                writer.raw("\"error\":"); writer.string(error.kind)
                writer.raw(",\"reason\":"); writer.string(error.reason)
                writer.raw(",\"status\":"); writer.integer(error.status); writer.raw("}")
            }
        }
        writer.raw("]}")
        return writer.bytes
    }

    /// Writes the new messages of `entries` in one transaction (those whose id the channel
    /// already has answer what they got then); returns every entry's outcome, in order. A constant
    /// number of statements whatever the number of messages (arrays bound through `unnest`).
    static func write(_ entries: [Entry], gateway: Gateway, database: String, user: GatewayUser, name: String) async throws -> [Outcome] {
        let db = user.databaseID
        let logger = gateway.logger
        return try await gateway.client.withTransaction(logger: logger) { connection in
            let (baseSeq, last) = try await lockChannel(connection, db: db, name: name, logger: logger)
            var known: [String: (timetoken: Int64, seq: Int64)] = [:]
            let rows = try await connection.query(
                """
                SELECT id, timetoken, seq FROM channel_messages
                WHERE db = \(db) AND channel = \(name) AND id = ANY(\(entries.map(\.id))::text[])
                """, logger: logger)
            for try await (id, timetoken, seq) in rows.decode((String, Int64, Int64).self) {
                known[id] = (timetoken, seq)
            }
            var outcomes: [Outcome] = []
            var ids: [String] = [], timetokens: [Int64] = [], seqs: [Int64] = []
            var messages: [String] = [], metas: [String] = [], publishers: [String] = []
            var timetoken = max(last + 1, now())
            var seq = baseSeq
            for entry in entries {
                if let old = known[entry.id] {
                    outcomes.append(.published(id: entry.id, timetoken: old.timetoken, seq: old.seq))
                    continue
                }
                seq += 1
                ids.append(entry.id)
                timetokens.append(timetoken)
                seqs.append(seq)
                messages.append(entry.message)
                // JSON texts are never empty: '' stands for an absent member.
                metas.append(entry.meta ?? "")
                publishers.append(entry.publisher ?? "")
                outcomes.append(.published(id: entry.id, timetoken: timetoken, seq: seq))
                timetoken += 1
            }
            guard !ids.isEmpty else { return outcomes }
            try await connection.query(
                """
                INSERT INTO channel_messages (db, channel, timetoken, id, seq, message, meta, publisher)
                SELECT \(db), \(name), t.timetoken, t.id, t.seq, t.message, NULLIF(t.meta, ''), NULLIF(t.publisher, '')
                FROM unnest(\(timetokens)::int8[], \(ids)::text[], \(seqs)::int8[], \(messages)::text[],
                            \(metas)::text[], \(publishers)::text[]) AS t(timetoken, id, seq, message, meta, publisher)
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO channels (db, name, last_timetoken) VALUES (\(db), \(name), \(timetoken - 1))
                ON CONFLICT (db, name) DO UPDATE SET last_timetoken = EXCLUDED.last_timetoken
                """, logger: logger)
            try await connection.query("UPDATE databases SET seq = \(seq) WHERE id = \(db)", logger: logger)
            // Delivered to every listening gateway process when this transaction commits.
            try await connection.query("SELECT pg_notify(\(ChangeNotifier.channel), \(database))", logger: logger)
            return outcomes
        }
    }

    /// `POST /{db}/_strata/channels/{name}/delete`: body `{"from"?, "until"?}`.
    static func delete(gateway: Gateway, database: String, user: GatewayUser, name: String, body: ByteBuffer) async throws -> [UInt8] {
        try StreamNames.checkAccess(name, .channel, user: user, write: true)
        var from: Int64 = 0, until: Int64? = nil
        if body.readableBytes > 0 {
            let request: JSON
            do { request = try JSONParser.parse(body.readableBytesView) } catch { throw GatewayError.badRequest("the delete body: \(error)") }
            guard case .object = request else { throw GatewayError.badRequest("the delete body must be a JSON object") }
            for key in ["from", "until"] {
                guard let value = request[key], value != .null else { continue }
                guard let text = value.stringValue else { throw GatewayError.badRequest("\(key) must be a timetoken (a decimal string)") }
                let timetoken = try StreamNames.timetoken(text, what: key)
                if key == "from" { from = timetoken } else { until = timetoken }
            }
        }
        let db = user.databaseID
        let logger = gateway.logger
        let given = until
        let (seq, applied) = try await gateway.client.withTransaction(logger: logger) { connection -> (Int64, Int64) in
            let (baseSeq, last) = try await lockChannel(connection, db: db, name: name, logger: logger)
            let until = given ?? last + 1
            let seq = baseSeq + 1
            try await connection.query(
                """
                UPDATE channel_messages SET deleted = true, message = '', meta = NULL, publisher = NULL
                WHERE db = \(db) AND channel = \(name) AND timetoken >= \(from) AND timetoken < \(until) AND NOT deleted
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO channel_deletions (db, seq, channel, from_timetoken, until_timetoken)
                VALUES (\(db), \(seq), \(name), \(from), \(until))
                """, logger: logger)
            try await connection.query(
                "INSERT INTO channels (db, name, last_timetoken) VALUES (\(db), \(name), \(last)) ON CONFLICT (db, name) DO NOTHING",
                logger: logger)
            try await connection.query("UPDATE databases SET seq = \(seq) WHERE id = \(db)", logger: logger)
            try await connection.query("SELECT pg_notify(\(ChangeNotifier.channel), \(database))", logger: logger)
            return (seq, until)
        }
        var writer = JSONWriter()
        writer.raw("{\"ok\":true,\"seq\":"); writer.integer(seq)
        writer.raw(",\"from\":\""); writer.integer(from)
        writer.raw("\",\"until\":\""); writer.integer(applied); writer.raw("\"}")
        return writer.bytes
    }

    /// `GET /{db}/_strata/channels/{name}/messages?after=T&limit=N`.
    static func messages(gateway: Gateway, user: GatewayUser, name: String, query: [String: String]) async throws -> [UInt8] {
        try StreamNames.checkAccess(name, .channel, user: user, write: false)
        let after = try query["after"].map { text throws(GatewayError) in try StreamNames.timetoken(text, what: "after") } ?? 0
        let limit = try StreamNames.limit(query["limit"], maximum: maximumLimit)
        let db = user.databaseID
        var writer = JSONWriter(capacity: 4096)
        writer.raw("{\"messages\":[")
        var first = true
        let rows = try await gateway.client.query(
            """
            SELECT timetoken, id, message, meta, publisher, seq FROM channel_messages
            WHERE db = \(db) AND channel = \(name) AND timetoken > \(after) AND NOT deleted
            ORDER BY timetoken LIMIT \(limit)
            """, logger: gateway.logger)
        for try await (timetoken, id, message, meta, publisher, seq) in rows.decode((Int64, String, String, String?, String?, Int64).self) {
            if !first { writer.raw(",") }
            first = false
            writer.raw("{\"timetoken\":\""); writer.integer(timetoken)
            writer.raw("\",\"id\":"); writer.string(id)
            writer.raw(",\"message\":"); writer.raw(message.utf8)
            if let meta { writer.raw(",\"meta\":"); writer.raw(meta.utf8) }
            if let publisher { writer.raw(",\"publisher\":"); writer.raw(publisher.utf8) }
            writer.raw(",\"seq\":"); writer.integer(seq); writer.raw("}")
        }
        // Read after the messages: `last` is at least every timetoken listed.
        var last: Int64 = 0
        for try await value in try await gateway.client.query(
            "SELECT last_timetoken FROM channels WHERE db = \(db) AND name = \(name)", logger: gateway.logger).decode(Int64.self) {
            last = value
        }
        writer.raw("],\"last\":\""); writer.integer(last); writer.raw("\"}")
        return writer.bytes
    }

    /// `GET /{db}/_strata/channels/{name}/count?since=T`: the messages above `since`.
    static func count(gateway: Gateway, user: GatewayUser, name: String, query: [String: String]) async throws -> [UInt8] {
        try StreamNames.checkAccess(name, .channel, user: user, write: false)
        let since = try query["since"].map { text throws(GatewayError) in try StreamNames.timetoken(text, what: "since") } ?? 0
        var count: Int64 = 0
        for try await value in try await gateway.client.query(
            """
            SELECT count(*)::int8 FROM channel_messages
            WHERE db = \(user.databaseID) AND channel = \(name) AND timetoken > \(since) AND NOT deleted
            """, logger: gateway.logger).decode(Int64.self) {
            count = value
        }
        var writer = JSONWriter()
        writer.raw("{\"count\":"); writer.integer(count); writer.raw("}")
        return writer.bytes
    }
}
