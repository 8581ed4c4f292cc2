import Logging
import NIOCore
import PostgresNIO

/// A database's time series (PROTOCOL.md "Time series"): `POST .../claim` (one writer per
/// series, permanent until `strata-gateway series release`), `POST .../events` (the writer's
/// own sequences: appended at `next`, identical retries accepted, forks refused) and
/// `GET .../events`, under `/{db}/_strata/series/{path}/`. An event's value is kept as the JSON
/// text that arrived and answered verbatim.
enum SeriesEvents {
    /// The most events one request may carry, and one `GET .../events` answers.
    static let maximumEvents = 10_000
    /// The longest author, in UTF-8 bytes.
    static let maximumAuthorLength = 1024

    /// A checked event of a request.
    struct Event: Sendable, Equatable {
        var sequence: Int64
        var timestamp: Int64
        var author: String
        var value: String
        var original: Int64?
    }

    /// The `writer` of a request body, checked.
    static func writer(of request: JSON) throws(GatewayError) -> String {
        guard let writer = request["writer"]?.stringValue else { throw .badRequest("the body needs a writer (a string)") }
        try StreamNames.checkKey(writer, what: "writer")
        return writer
    }

    /// `POST /{db}/_strata/series/{path}/claim`: body `{"writer": "W"}`.
    static func claim(gateway: Gateway, user: GatewayUser, path: String, body: ByteBuffer) async throws -> [UInt8] {
        try StreamNames.checkAccess(path, .series, user: user, write: true)
        let request: JSON
        do { request = try JSONParser.parse(body.readableBytesView) } catch { throw GatewayError.badRequest("the claim body: \(error)") }
        let writer = try writer(of: request)
        var holder: String? = nil, start: Int64 = 0, next: Int64 = 0
        let rows = try await gateway.client.query(
            """
            INSERT INTO series (db, path, writer) VALUES (\(user.databaseID), \(path), \(writer))
            ON CONFLICT (db, path) DO UPDATE SET writer = COALESCE(series.writer, EXCLUDED.writer)
            RETURNING writer, start, next
            """, logger: gateway.logger)
        for try await (w, s, n) in rows.decode((String?, Int64, Int64).self) {
            (holder, start, next) = (w, s, n)
        }
        guard holder == writer else {
            throw GatewayError.conflict("series '\(path)' is claimed by another writer")
        }
        var out = JSONWriter()
        out.raw("{\"writer\":"); out.string(writer)
        out.raw(",\"next\":"); out.integer(next)
        out.raw(",\"start\":"); out.integer(start); out.raw("}")
        return out.bytes
    }

    /// An integer member of an event within `range`, or 400.
    private static func integer(_ value: JSON?, _ what: String, _ range: ClosedRange<Int64>) throws(GatewayError) -> Int64 {
        guard case let .number(text)? = value, let number = Int64(text), range.contains(number) else {
            throw .badRequest("\(what) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// `POST /{db}/_strata/series/{path}/events`: body `{"writer", "events": [...]}`.
    static func append(gateway: Gateway, database: String, user: GatewayUser, path: String, body: ByteBuffer) async throws -> [UInt8] {
        try StreamNames.checkAccess(path, .series, user: user, write: true)
        let spans = try JSONSpans(Array(body.readableBytesView), what: "the events body")
        let writer = try writer(of: spans.tree)
        let items = try spans.list("events", limit: maximumEvents, what: "the events body")
        let list = items.map(\.value)
        let elementSpans = items.map(\.span)
        var events: [Event] = []
        events.reserveCapacity(list.count)
        for (index, element) in list.enumerated() {
            guard case let .object(fields) = element else { throw GatewayError.badRequest("event \(index) is not a JSON object") }
            // The last sequence has no next one: the largest sequence is 2^63 - 2.
            let sequence = try integer(element["sequence"], "the sequence of event \(index)", 0...(Int64.max - 1))
            let timestamp = try integer(element["timestamp"], "the timestamp of event \(index)", Int64.min...Int64.max)
            guard let author = element["author"]?.stringValue else { throw GatewayError.badRequest("event \(sequence) needs an author (a string)") }
            guard author.utf8.count <= maximumAuthorLength, !author.utf8.contains(0) else {
                throw GatewayError.badRequest("the author of event \(sequence) is over \(maximumAuthorLength) bytes or contains U+0000")
            }
            var original: Int64? = nil
            if let value = element["original"], value != .null {
                original = try integer(value, "the original of event \(sequence)", 0...(Int64.max - 1))
            }
            guard let j = fields.firstIndex(where: { $0.0 == "value" }) else { throw GatewayError.badRequest("event \(sequence) has no value") }
            let fieldSpans = spans.memberValues(elementSpans[index])
            guard fieldSpans.count == fields.count else { throw GatewayError.badRequest("event \(sequence) could not be read") }
            let span = fieldSpans[j]
            guard span.count <= gateway.maxDocumentSize else {
                throw GatewayError.tooLarge("the value of event \(sequence) is \(span.count) bytes, over the limit of \(gateway.maxDocumentSize)")
            }
            if let previous = events.last {
                guard sequence == previous.sequence + 1 else {
                    throw GatewayError.badRequest("the events of a request must have consecutive ascending sequences (event \(sequence) follows \(previous.sequence))")
                }
                guard timestamp >= previous.timestamp else {
                    throw GatewayError.badRequest("the timestamp of event \(sequence) is below its predecessor's (timestamps never decrease)")
                }
            }
            if let original, original >= sequence {
                throw GatewayError.badRequest("the original of event \(sequence) must name an earlier sequence")
            }
            events.append(Event(sequence: sequence, timestamp: timestamp, author: author, value: spans.text(span), original: original))
        }
        let next = try await write(events, writer: writer, gateway: gateway, database: database, user: user, path: path)
        var out = JSONWriter()
        out.raw("{\"ok\":true,\"next\":"); out.integer(next); out.raw("}")
        return out.bytes
    }

    /// Appends `events` in one transaction after checking them against the series; returns
    /// its `next`.
    static func write(_ events: [Event], writer: String, gateway: Gateway, database: String, user: GatewayUser, path: String) async throws -> Int64 {
        let db = user.databaseID
        let logger = gateway.logger
        return try await gateway.client.withTransaction(logger: logger) { connection in
            // The database row lock first (as every writer of the database), then the series'.
            var baseSeq: Int64 = 0
            for try await seq in try await connection.query(
                "SELECT seq FROM databases WHERE id = \(db) FOR UPDATE", logger: logger).decode(Int64.self) {
                baseSeq = seq
            }
            var holder: String? = nil, start: Int64 = 0, next: Int64 = 0, lastTimestamp: Int64? = nil
            for try await row in try await connection.query(
                "SELECT writer, start, next, last_timestamp FROM series WHERE db = \(db) AND path = \(path) FOR UPDATE",
                logger: logger).decode((String?, Int64, Int64, Int64?).self) {
                (holder, start, next, lastTimestamp) = row
            }
            guard let holder, holder == writer else {
                throw GatewayError.conflict("this writer does not hold the claim of series '\(path)' (claim it first)")
            }
            let empty = lastTimestamp == nil
            let first = events[0].sequence
            if empty {
                start = first
                next = first
            }
            guard first <= next else {
                throw GatewayError.badRequest("event \(first) of series '\(path)' leaves a gap: the next sequence is \(next)")
            }
            // The events below `next` must be the stored ones (a retried upload).
            let retried = events.prefix { $0.sequence < next }
            if let low = retried.first {
                guard low.sequence >= start else {
                    throw GatewayError.conflict("event \(low.sequence) of series '\(path)' is not the stored one (a fork)")
                }
                var stored: [Int64: Event] = [:]
                let rows = try await connection.query(
                    """
                    SELECT sequence, timestamp, author, value, original FROM series_events
                    WHERE db = \(db) AND path = \(path) AND sequence >= \(low.sequence) AND sequence <= \(retried.last!.sequence)
                    """, logger: logger)
                for try await (sequence, timestamp, author, value, original) in rows.decode((Int64, Int64, String, String, Int64?).self) {
                    stored[sequence] = Event(sequence: sequence, timestamp: timestamp, author: author, value: value, original: original)
                }
                for event in retried where stored[event.sequence] != event {
                    throw GatewayError.conflict("event \(event.sequence) of series '\(path)' is not the stored one (a fork)")
                }
            }
            let appended = Array(events.dropFirst(retried.count))
            guard let firstNew = appended.first else { return next }
            if let lastTimestamp, firstNew.timestamp < lastTimestamp {
                throw GatewayError.badRequest("the timestamp of event \(firstNew.sequence) is below the series' last one (timestamps never decrease)")
            }
            // An edit names an earlier event of the series that is not itself an edit.
            let inRequest = Dictionary(events.map { ($0.sequence, $0) }, uniquingKeysWith: { a, _ in a })
            var fromStore: [Int64] = []
            for event in appended {
                guard let original = event.original else { continue }
                guard original >= start else {
                    throw GatewayError.badRequest("the original of event \(event.sequence) names no event of series '\(path)'")
                }
                if let named = inRequest[original] {
                    guard named.original == nil else {
                        throw GatewayError.badRequest("the original of event \(event.sequence) names an edit (\(original))")
                    }
                } else {
                    fromStore.append(original)
                }
            }
            if !fromStore.isEmpty {
                var found: [Int64: Int64?] = [:]
                let rows = try await connection.query(
                    """
                    SELECT sequence, original FROM series_events
                    WHERE db = \(db) AND path = \(path) AND sequence = ANY(\(fromStore)::int8[])
                    """, logger: logger)
                for try await (sequence, original) in rows.decode((Int64, Int64?).self) { found[sequence] = original }
                for original in fromStore {
                    guard let named = found[original] else {
                        throw GatewayError.badRequest("an original (\(original)) names no event of series '\(path)'")
                    }
                    guard named == nil else {
                        throw GatewayError.badRequest("an original (\(original)) names an edit")
                    }
                }
            }
            var sequences: [Int64] = [], seqs: [Int64] = [], timestamps: [Int64] = [], originals: [Int64] = []
            var authors: [String] = [], values: [String] = []
            for (i, event) in appended.enumerated() {
                sequences.append(event.sequence)
                seqs.append(baseSeq + Int64(i) + 1)
                timestamps.append(event.timestamp)
                authors.append(event.author)
                values.append(event.value)
                originals.append(event.original ?? -1)  // -1 stands for none
            }
            let last = appended[appended.count - 1]
            try await connection.query(
                """
                INSERT INTO series_events (db, path, sequence, seq, timestamp, author, value, original)
                SELECT \(db), \(path), t.sequence, t.seq, t.timestamp, t.author, t.value, NULLIF(t.original, -1)
                FROM unnest(\(sequences)::int8[], \(seqs)::int8[], \(timestamps)::int8[], \(authors)::text[],
                            \(values)::text[], \(originals)::int8[]) AS t(sequence, seq, timestamp, author, value, original)
                """, logger: logger)
            try await connection.query(
                """
                UPDATE series SET start = \(start), next = \(last.sequence + 1), last_timestamp = \(last.timestamp)
                WHERE db = \(db) AND path = \(path)
                """, logger: logger)
            try await connection.query("UPDATE databases SET seq = \(baseSeq + Int64(appended.count)) WHERE id = \(db)", logger: logger)
            try await connection.query("SELECT pg_notify(\(ChangeNotifier.channel), \(database))", logger: logger)
            return last.sequence + 1
        }
    }

    /// `GET /{db}/_strata/series/{path}/events?from=N&limit=L`.
    static func list(gateway: Gateway, user: GatewayUser, path: String, query: [String: String]) async throws -> [UInt8] {
        try StreamNames.checkAccess(path, .series, user: user, write: false)
        var from: Int64 = 0
        if let text = query["from"] {
            guard let value = StreamNames.unsigned(text) else { throw GatewayError.badRequest("from must be a sequence (an integer from 0 to 2^63 - 1)") }
            from = value
        }
        let limit = try StreamNames.limit(query["limit"], maximum: maximumEvents)
        let db = user.databaseID
        var out = JSONWriter(capacity: 4096)
        out.raw("{\"events\":[")
        var first = true
        let rows = try await gateway.client.query(
            """
            SELECT sequence, timestamp, author, value, original, seq FROM series_events
            WHERE db = \(db) AND path = \(path) AND sequence >= \(from) ORDER BY sequence LIMIT \(limit)
            """, logger: gateway.logger)
        for try await (sequence, timestamp, author, value, original, seq) in rows.decode((Int64, Int64, String, String, Int64?, Int64).self) {
            if !first { out.raw(",") }
            first = false
            writeEvent(into: &out, sequence: sequence, timestamp: timestamp, author: author, value: value, original: original)
            out.raw(",\"seq\":"); out.integer(seq); out.raw("}")
        }
        var writer: String? = nil, start: Int64 = 0, next: Int64 = 0
        for try await row in try await gateway.client.query(
            "SELECT writer, start, next FROM series WHERE db = \(db) AND path = \(path)", logger: gateway.logger).decode((String?, Int64, Int64).self) {
            (writer, start, next) = row
        }
        out.raw("],\"start\":"); out.integer(start)
        out.raw(",\"next\":"); out.integer(next)
        out.raw(",\"writer\":")
        if let writer { out.string(writer) } else { out.raw("null") }
        out.raw("}")
        return out.bytes
    }

    /// An event's members up to `original` (without the closing brace): `{"sequence", ...`.
    static func writeEvent(into out: inout JSONWriter, sequence: Int64, timestamp: Int64, author: String, value: String, original: Int64?) {
        out.raw("{\"sequence\":"); out.integer(sequence)
        out.raw(",\"timestamp\":"); out.integer(timestamp)
        out.raw(",\"author\":"); out.string(author)
        out.raw(",\"value\":"); out.raw(value.utf8)
        if let original { out.raw(",\"original\":"); out.integer(original) }
    }

    /// `strata-gateway series release`: frees the claim of the series `path`; returns the writer
    /// that held it, nil when none did.
    static func release(_ path: String, databaseID: Int64, client: PostgresClient, logger: Logger) async throws -> String? {
        let rows = try await client.query(
            """
            UPDATE series s SET writer = NULL FROM series old
            WHERE s.db = \(databaseID) AND s.path = \(path) AND old.db = s.db AND old.path = s.path AND s.writer IS NOT NULL
            RETURNING old.writer
            """, logger: logger)
        for try await writer in rows.decode(String?.self) { return writer }
        return nil
    }
}
