import Hummingbird
import Logging
import NIOCore
import PostgresNIO

/// `GET /{db}/_strata/changes` (PROTOCOL.md "The change feed of a database"): the changes of
/// every kind — messages, deletions, series events and documents — in the database's one
/// sequence, with what the user may read (channels and series by its read paths, documents by
/// its read channels). `channels`/`series` (JSON arrays) keep only those streams (403 when one
/// is not readable); `limit`; `feed=longpoll` waits, woken by any gateway process's write
/// (ChangeNotifier). One query per page (a `UNION ALL` of range scans of the `(db, seq)`
/// indexes, or of the `(db, name, seq)` ones of the streams a filter names); the stored JSON
/// texts are copied into the answer as they are.
enum StreamChanges {
    static let maximumLimit = 10_000
    /// A response stops adding results once it holds this much JSON.
    static let maximumResponseBytes = 8 * 1024 * 1024
    /// The most names `channels` and `series` may list together.
    static let maximumNames = 1_000

    struct Parameters: Sendable {
        var since: Int64 = 0
        var limit = maximumLimit
        var longpoll = false
        var timeoutMilliseconds = ChangesFeed.defaultTimeout
        /// With `channels` or `series`: only those (and no documents).
        var filtered = false
        var channels: [String] = []
        var series: [String] = []

        init(query: [String: String], user: GatewayUser) throws(GatewayError) {
            if let text = query["since"], !text.isEmpty {
                guard let value = StreamNames.unsigned(text) else {
                    throw .badRequest("since must be a sequence number (a decimal integer from 0 to 2^63 - 1), not '\(text)'")
                }
                since = value
            }
            limit = try StreamNames.limit(query["limit"], maximum: maximumLimit)
            switch query["feed"] {
            case nil, "normal": longpoll = false
            case "longpoll": longpoll = true
            case let other?: throw .badRequest("feed must be normal or longpoll, not '\(other)'")
            }
            if let text = query["timeout"] {
                guard let value = StreamNames.unsigned(text) else { throw .badRequest("timeout must be milliseconds (an integer ≥ 0), not '\(text)'") }
                timeoutMilliseconds = Int(min(value, Int64(ChangesFeed.maximumTimeout)))
            }
            for (key, what) in [("channels", "channel"), ("series", "series")] {
                guard let text = query[key] else { continue }
                filtered = true
                guard case let .array(list)? = try? JSONParser.parse(Array(text.utf8)) else {
                    throw .badRequest("\(key) must be a JSON array of names")
                }
                guard channels.count + series.count + list.count <= maximumNames else {
                    throw .tooLarge("channels and series name more than \(maximumNames) streams")
                }
                for element in list {
                    guard let name = element.stringValue else { throw .badRequest("\(key) must be a JSON array of strings") }
                    try StreamNames.check(name, what: key == "channels" ? "a channel name" : "a series path")
                    guard user.readPaths.covers(name) else {
                        throw .forbidden("user '\(user.name)' may not read \(what) '\(name)'")
                    }
                    // Each stream once (a name listed twice would list its changes twice).
                    if key == "channels" {
                        if !channels.contains(name) { channels.append(name) }
                    } else if !series.contains(name) {
                        series.append(name)
                    }
                }
            }
        }
    }

    static func handle(gateway: Gateway, database: String, user: GatewayUser, query: [String: String]) async throws -> Response {
        var parameters = try Parameters(query: query, user: user)
        guard parameters.longpoll else {
            return Routes.json(200, try await read(parameters, gateway: gateway, user: user).answer)
        }
        let open = gateway.metrics.feeds("longpoll")
        open.increment()
        defer { open.decrement() }
        let deadline = ContinuousClock.now + .milliseconds(parameters.timeoutMilliseconds)
        while true {
            guard gateway.pool.isReachable else {
                throw GatewayError.unavailable("PostgreSQL is unreachable; the gateway reconnects every 250 ms")
            }
            let version = await gateway.notifier.version(of: database)
            let page = try await read(parameters, gateway: gateway, user: user)
            if page.count > 0 || ContinuousClock.now >= deadline {
                return Routes.json(200, page.answer)
            }
            // Nothing this user may read yet: wait from where the scan ended.
            parameters.since = page.lastSeq
            guard await gateway.notifier.waitForVersion(database, after: version, until: deadline) != nil,
                  ContinuousClock.now < deadline
            else {
                return Routes.json(200, encodeEmpty(lastSeq: parameters.since))
            }
        }
    }

    static func encodeEmpty(lastSeq: Int64) -> [UInt8] {
        Array("{\"results\":[],\"last_seq\":\(lastSeq)}".utf8)
    }

    /// A row of the feed's query: the columns each kind fills.
    private struct Row {
        var seq: Int64
        /// 1 message, 2 deletion, 3 event, 4 document.
        var kind: Int32
        /// The channel, series path or document id.
        var name: String
        /// timetoken | from | sequence.
        var a: Int64
        /// until | timestamp.
        var b: Int64
        /// an event's original.
        var c: Int64?
        /// id | author | winning rev.
        var t1: String?
        /// message | value.
        var t2: String?
        /// meta.
        var t3: String?
        /// publisher.
        var t4: String?
        /// a document's deletion.
        var flag: Bool
    }

    /// One page: the answer, its number of results and its `last_seq`.
    static func read(_ parameters: Parameters, gateway: Gateway, user: GatewayUser) async throws -> (answer: [UInt8], count: Int, lastSeq: Int64) {
        gateway.metrics.changesQuery("strata")
        let db = user.databaseID
        let logger = gateway.logger
        // Commits land in sequence order (the database row lock): every change up to the
        // counter read here is visible to the next statement.
        let top = try await ChangesFeed.currentSeq(db: db, gateway: gateway)
        guard top > parameters.since else { return (encodeEmpty(lastSeq: parameters.since), 0, parameters.since) }
        if parameters.filtered {
            return try await readStreams(parameters, gateway: gateway, db: db, top: top)
        }
        let since = parameters.since, limit = parameters.limit
        let (allPaths, paths) = user.readPaths.sqlParameters
        let (allChannels, docChannels) = user.read.sqlParameters
        var rows: [Row] = []
        rows.reserveCapacity(min(limit, 1024))
        let result = try await gateway.client.query(
            """
            SELECT seq, kind, name, a, b, c, t1, t2, t3, t4, flag FROM (
              (SELECT m.seq, 1::int4 AS kind, m.channel AS name, m.timetoken AS a, 0::int8 AS b, NULL::int8 AS c,
                      m.id AS t1, m.message AS t2, m.meta AS t3, m.publisher AS t4, false AS flag
               FROM channel_messages m
               WHERE m.db = \(db) AND m.seq > \(since) AND m.seq <= \(top) AND NOT m.deleted
                 AND (\(allPaths) OR m.channel = ANY(\(paths)::text[]) OR EXISTS (SELECT 1 FROM unnest(\(paths)::text[]) AS p(path)
                      WHERE left(m.channel, length(p.path) + 1) = p.path || '/'))
               ORDER BY m.seq LIMIT \(limit))
              UNION ALL
              (SELECT x.seq, 2::int4, x.channel, x.from_timetoken, x.until_timetoken, NULL::int8, NULL::text, NULL::text, NULL::text, NULL::text, false
               FROM channel_deletions x
               WHERE x.db = \(db) AND x.seq > \(since) AND x.seq <= \(top)
                 AND (\(allPaths) OR x.channel = ANY(\(paths)::text[]) OR EXISTS (SELECT 1 FROM unnest(\(paths)::text[]) AS p(path)
                      WHERE left(x.channel, length(p.path) + 1) = p.path || '/'))
               ORDER BY x.seq LIMIT \(limit))
              UNION ALL
              (SELECT e.seq, 3::int4, e.path, e.sequence, e.timestamp, e.original, e.author, e.value, NULL::text, NULL::text, false
               FROM series_events e
               WHERE e.db = \(db) AND e.seq > \(since) AND e.seq <= \(top)
                 AND (\(allPaths) OR e.path = ANY(\(paths)::text[]) OR EXISTS (SELECT 1 FROM unnest(\(paths)::text[]) AS p(path)
                      WHERE left(e.path, length(p.path) + 1) = p.path || '/'))
               ORDER BY e.seq LIMIT \(limit))
              UNION ALL
              (SELECT d.seq, 4::int4, d.doc_id, 0::int8, 0::int8, NULL::int8, d.winning_rev, NULL::text, NULL::text, NULL::text, d.deleted
               FROM documents d
               WHERE d.db = \(db) AND d.seq > \(since) AND d.seq <= \(top)
                 AND (\(allChannels) OR EXISTS (SELECT 1 FROM revisions r WHERE r.db = d.db AND r.doc_id = d.doc_id
                                                AND r.is_leaf AND r.channels && \(docChannels)::text[]))
               ORDER BY d.seq LIMIT \(limit))
            ) AS changes ORDER BY seq LIMIT \(limit)
            """, logger: logger)
        // Cell by cell: decoding an 11-tuple looks up its generic metadata on every row.
        for try await row in result {
            guard row.count == 11 else { continue }
            var cells = row.makeIterator()
            rows.append(Row(
                seq: try cells.next()!.decode(Int64.self), kind: try cells.next()!.decode(Int32.self),
                name: try cells.next()!.decode(String.self), a: try cells.next()!.decode(Int64.self),
                b: try cells.next()!.decode(Int64.self), c: try cells.next()!.decode(Int64?.self),
                t1: try cells.next()!.decode(String?.self), t2: try cells.next()!.decode(String?.self),
                t3: try cells.next()!.decode(String?.self), t4: try cells.next()!.decode(String?.self),
                flag: try cells.next()!.decode(Bool.self)))
        }
        let full = rows.count == limit
        // Documents: the first leaf the user may read, in winner order (as `_changes` lists it).
        var revOf: [String: String] = [:]
        let docIDs = rows.filter { $0.kind == 4 }.map(\.name)
        if !docIDs.isEmpty, user.read != .all {
            var leaves: [String: [(rev: RevisionID, deleted: Bool)]] = [:]
            let leafRows = try await gateway.client.query(
                """
                SELECT doc_id, rev_id, deleted, channels FROM revisions
                WHERE db = \(db) AND doc_id = ANY(\(docIDs)::text[]) AND is_leaf
                """, logger: logger)
            for try await (docID, revText, deleted, channels) in leafRows.decode((String, String, Bool, [String]).self) {
                guard user.read.canRead(channels), let rev = RevisionID(revText) else { continue }
                leaves[docID, default: []].append((rev, deleted))
            }
            for (docID, list) in leaves {
                let sorted = list.sorted { a, b in a.rev.beats(b.rev, selfDeleted: a.deleted, otherDeleted: b.deleted) }
                revOf[docID] = sorted[0].rev.description
            }
        }
        var out = JSONWriter(capacity: 64 * 1024)
        out.raw("{\"results\":[")
        var count = 0
        var lastSeq = full ? (rows.last?.seq ?? top) : top
        for (i, row) in rows.enumerated() {
            if out.bytes.count >= maximumResponseBytes, i > 0 {
                // The next page starts after the last row considered.
                lastSeq = rows[i - 1].seq
                break
            }
            let mark = out.bytes.count
            if count > 0 { out.raw(",") }
            out.raw("{\"seq\":"); out.integer(row.seq)
            switch row.kind {
            case 1:
                out.raw(",\"kind\":\"message\",\"channel\":"); out.string(row.name)
                out.raw(",\"timetoken\":\""); out.integer(row.a)
                out.raw("\",\"id\":"); out.string(row.t1 ?? "")
                out.raw(",\"message\":"); out.raw((row.t2 ?? "null").utf8)
                if let meta = row.t3 { out.raw(",\"meta\":"); out.raw(meta.utf8) }
                if let publisher = row.t4 { out.raw(",\"publisher\":"); out.raw(publisher.utf8) }
            case 2:
                out.raw(",\"kind\":\"delete\",\"channel\":"); out.string(row.name)
                out.raw(",\"from\":\""); out.integer(row.a)
                out.raw("\",\"until\":\""); out.integer(row.b); out.raw("\"")
            case 3:
                out.raw(",\"kind\":\"event\",\"series\":"); out.string(row.name)
                out.raw(",\"sequence\":"); out.integer(row.a)
                out.raw(",\"timestamp\":"); out.integer(row.b)
                out.raw(",\"author\":"); out.string(row.t1 ?? "")
                out.raw(",\"value\":"); out.raw((row.t2 ?? "null").utf8)
                if let original = row.c { out.raw(",\"original\":"); out.integer(original) }
            default:
                let rev = user.read == .all ? row.t1 : revOf[row.name]
                guard let rev else {
                    // Changed between the two statements: no leaf readable any more.
                    out.bytes.removeSubrange(mark...)
                    continue
                }
                out.raw(",\"kind\":\"document\",\"id\":"); out.string(row.name)
                out.raw(",\"rev\":"); out.string(rev)
                if row.flag { out.raw(",\"deleted\":true") }
            }
            out.raw("}")
            count += 1
        }
        out.raw("],\"last_seq\":"); out.integer(lastSeq); out.raw("}")
        return (out.bytes, count, lastSeq)
    }

    /// A page of the streams `channels` and `series` name (read rights checked by `Parameters`):
    /// per stream, an ordered scan of its `(db, name, seq)` index up to `limit` rows, so that a
    /// page costs the same whatever the stream's size. PostgreSQL writes each result's JSON text
    /// (the members and their order as `read` writes them), which the gateway copies as bytes:
    /// decoding eleven cells a row was most of a page's cost.
    static func readStreams(_ parameters: Parameters, gateway: Gateway, db: Int64, top: Int64) async throws -> (answer: [UInt8], count: Int, lastSeq: Int64) {
        let since = parameters.since, limit = parameters.limit
        let channels = parameters.channels, series = parameters.series
        let result = try await gateway.client.query(
            """
            SELECT seq, body FROM (
              (SELECT m.seq, '{"seq":' || m.seq || ',"kind":"message","channel":' || to_json(m.channel)::text
                      || ',"timetoken":"' || m.timetoken || '","id":' || to_json(m.id)::text || ',"message":' || m.message
                      || coalesce(',"meta":' || m.meta, '') || coalesce(',"publisher":' || m.publisher, '') || '}' AS body
               FROM unnest(\(channels)::text[]) AS f(name) CROSS JOIN LATERAL (
                 SELECT * FROM channel_messages m WHERE m.db = \(db) AND m.channel = f.name
                   AND m.seq > \(since) AND m.seq <= \(top) AND NOT m.deleted ORDER BY m.seq LIMIT \(limit)) m)
              UNION ALL
              (SELECT x.seq, '{"seq":' || x.seq || ',"kind":"delete","channel":' || to_json(x.channel)::text
                      || ',"from":"' || x.from_timetoken || '","until":"' || x.until_timetoken || '"}'
               FROM channel_deletions x
               WHERE x.db = \(db) AND x.seq > \(since) AND x.seq <= \(top) AND x.channel = ANY(\(channels)::text[])
               ORDER BY x.seq LIMIT \(limit))
              UNION ALL
              (SELECT e.seq, '{"seq":' || e.seq || ',"kind":"event","series":' || to_json(e.path)::text
                      || ',"sequence":' || e.sequence || ',"timestamp":' || e.timestamp || ',"author":' || to_json(e.author)::text
                      || ',"value":' || e.value || coalesce(',"original":' || e.original, '') || '}'
               FROM unnest(\(series)::text[]) AS f(name) CROSS JOIN LATERAL (
                 SELECT * FROM series_events e WHERE e.db = \(db) AND e.path = f.name
                   AND e.seq > \(since) AND e.seq <= \(top) ORDER BY e.seq LIMIT \(limit)) e)
            ) AS changes ORDER BY seq LIMIT \(limit)
            """, logger: gateway.logger)
        var out = JSONWriter(capacity: 64 * 1024)
        out.raw("{\"results\":[")
        var count = 0
        var lastSeq: Int64?
        var full = false
        for try await row in result {
            var cells = row.makeIterator()
            guard row.count == 2, let seqCell = cells.next(), let jsonCell = cells.next() else { continue }
            let seq = try seqCell.decode(Int64.self)
            if out.bytes.count >= maximumResponseBytes, count > 0 {
                // The next page starts after the last row written; the rest of the rows are read
                // to the end (a query is not left half-read on its connection).
                full = true
                continue
            }
            if count > 0 { out.raw(",") }
            if let bytes = jsonCell.bytes {
                bytes.withUnsafeReadableBytes { out.bytes.append(contentsOf: $0) }
            } else {
                out.raw(try jsonCell.decode(String.self).utf8)
            }
            count += 1
            lastSeq = seq
        }
        // A page of `limit` rows, or one cut at the size limit, ends at its last row; a shorter
        // one covers everything up to `top`.
        let end = (full || count == limit) ? (lastSeq ?? top) : top
        out.raw("],\"last_seq\":"); out.integer(end); out.raw("}")
        return (out.bytes, count, end)
    }
}
