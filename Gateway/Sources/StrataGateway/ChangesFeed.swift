import Hummingbird
import Logging
import NIOCore
import PostgresNIO

/// `GET`/`POST /{db}/_changes` (PROTOCOL.md "_changes"): the documents changed after `since`,
/// one result per document at its newest change, with the leaves the user may read. Feeds:
/// `normal`; `longpoll`, which waits for a change (any gateway process's write) when there is
/// none; `continuous` (one JSON line per change) and `eventsource` (server-sent events), which
/// stay open; `heartbeat` writes a newline while nothing happens. Options: `since` (a sequence
/// or `now`), `limit`, `style=all_docs`, `include_docs`, `conflicts`, `descending`,
/// `filter=_doc_ids` (`doc_ids`), `filter=_selector` (`selector`, see Selector) and
/// `filter=sync_gateway/bychannel` (`channels`).
enum ChangesFeed {
    static let maximumLimit = 10_000
    static let defaultTimeout = 60_000
    static let maximumTimeout = 300_000
    /// The most ids a `_doc_ids` filter may name.
    static let maximumDocIDs = 10_000

    enum Feed { case normal, longpoll, continuous, eventsource }

    struct Parameters {
        var since: Int64 = 0
        var sinceNow = false
        var limit = maximumLimit
        /// False when the client gave no limit (a continuous feed then never ends on a count).
        var limited = false
        var feed = Feed.normal
        var timeoutMilliseconds = defaultTimeout
        var heartbeatMilliseconds: Int? = nil
        var allDocs = false
        var includeDocs = false
        var conflicts = false
        var descending = false
        var docIDs: [String]? = nil
        var selector: Selector? = nil
        var access: ChannelAccess

        var longpoll: Bool { feed == .longpoll }

        init(query: [String: String], body: JSON?, user: GatewayUser) throws(GatewayError) {
            access = user.read
            func flag(_ name: String) throws(GatewayError) -> Bool {
                switch query[name] {
                case nil, "false": return false
                case "true": return true
                case let other?: throw .badRequest("\(name) must be true or false, not '\(other)'")
                }
            }
            if let text = query["since"], !text.isEmpty {
                if text == "now" {
                    sinceNow = true
                } else {
                    // CouchDB's opaque sequences start with their number ("12-g1AAAA..."): accepted.
                    let number = text.split(separator: "-", maxSplits: 1).first.map(String.init) ?? text
                    guard let value = Int64(number), value >= 0 else { throw .badRequest("since must be a sequence number (a decimal integer ≥ 0) or now, not '\(text)'") }
                    since = value
                }
            }
            if let text = query["limit"] {
                guard let value = Int(text), value >= 0 else { throw .badRequest("limit must be an integer ≥ 0, not '\(text)'") }
                limit = max(1, min(value, maximumLimit))
                limited = true
            }
            switch query["feed"] {
            case nil, "normal": feed = .normal
            case "longpoll": feed = .longpoll
            case "continuous": feed = .continuous
            case "eventsource": feed = .eventsource
            case let other?: throw .badRequest("feed must be normal, longpoll, continuous or eventsource, not '\(other)'")
            }
            if let text = query["timeout"] {
                guard let value = Int(text), value >= 0 else { throw .badRequest("timeout must be milliseconds (an integer ≥ 0), not '\(text)'") }
                timeoutMilliseconds = min(value, maximumTimeout)
            }
            if let text = query["heartbeat"] {
                if text == "true" {
                    heartbeatMilliseconds = defaultTimeout
                } else {
                    guard let value = Int(text), value >= 0 else { throw .badRequest("heartbeat must be milliseconds (an integer ≥ 0) or true, not '\(text)'") }
                    heartbeatMilliseconds = min(max(value, 100), maximumTimeout)
                }
            }
            switch query["style"] {
            case nil, "main_only": allDocs = false
            case "all_docs": allDocs = true
            case let other?: throw .badRequest("style must be all_docs or main_only, not '\(other)'")
            }
            includeDocs = try flag("include_docs")
            conflicts = try flag("conflicts")
            descending = try flag("descending")
            switch query["filter"] {
            case nil: break
            case "sync_gateway/bychannel":
                guard let list = query["channels"] else { throw .badRequest("filter sync_gateway/bychannel needs a channels parameter") }
                access = access.intersected(with: list.split(separator: ",").map(String.init))
            case "_doc_ids":
                var list: JSON? = body?["doc_ids"]
                if list == nil, let text = query["doc_ids"] {
                    list = try? JSONParser.parse(Array(text.utf8))
                }
                guard let array = list?.arrayValue else { throw .badRequest("filter _doc_ids needs doc_ids, a JSON array of ids (in the query or a POST body)") }
                guard array.count <= maximumDocIDs else { throw .tooLarge("doc_ids names more than \(maximumDocIDs) ids") }
                var ids: [String] = []
                for element in array {
                    guard let id = element.stringValue else { throw .badRequest("doc_ids must hold strings") }
                    try DocumentIDs.check(id, what: "an id of doc_ids")
                    ids.append(id)
                }
                docIDs = ids
            case "_selector":
                var value: JSON? = body?["selector"]
                if value == nil, let text = query["selector"] {
                    value = try? JSONParser.parse(Array(text.utf8))
                }
                guard let value else { throw .badRequest("filter _selector needs a selector object (in a POST body)") }
                selector = try Selector(value)
            case "_view", "_design":
                throw .badRequest("filter \(query["filter"] ?? ""): this gateway has no design documents")
            case let other?: throw .badRequest("unknown filter '\(other)' (_doc_ids, _selector or sync_gateway/bychannel)")
            }
            if selector != nil { includeDocs = includeDocs || false }
        }
    }

    struct Change {
        var seq: Int64
        var docID: String
        var deleted: Bool
        var winner: String
        var revs: [String] = []
        /// The document (the first listed revision) for `include_docs`, as JSON text.
        var doc: [UInt8]? = nil
    }

    /// A normal or long-poll feed without heartbeat answers one JSON object; the others stream.
    static func handle(gateway: Gateway, database: String, user: GatewayUser, query: [String: String], body: JSON?) async throws -> Response {
        var parameters = try Parameters(query: query, body: body, user: user)
        if parameters.sinceNow {
            parameters.since = try await currentSeq(db: user.databaseID, gateway: gateway)
        }
        if parameters.feed == .normal {
            return Routes.json(200, try await collect(parameters, gateway: gateway, database: database, user: user))
        }
        let open = gateway.metrics.feeds(parameters.feed == .longpoll ? "longpoll" : parameters.feed == .continuous ? "continuous" : "eventsource")
        if parameters.feed == .longpoll && parameters.heartbeatMilliseconds == nil {
            open.increment()
            defer { open.decrement() }
            return Routes.json(200, try await collect(parameters, gateway: gateway, database: database, user: user))
        }
        let start = parameters
        var headers = HTTPFields()
        headers[.contentType] = start.feed == .eventsource ? "text/event-stream" : "application/json"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            open.increment()
            defer { open.decrement() }
            try await stream(start, gateway: gateway, database: database, user: user, writer: &writer)
            try await writer.finish(nil)
        })
    }

    static func currentSeq(db: Int64, gateway: Gateway) async throws -> Int64 {
        var seq: Int64 = 0
        for try await value in try await gateway.client.query("SELECT seq FROM databases WHERE id = \(db)", logger: gateway.logger).decode(Int64.self) {
            seq = value
        }
        return seq
    }

    /// A normal or long-poll answer as one object.
    static func collect(_ start: Parameters, gateway: Gateway, database: String, user: GatewayUser) async throws -> [UInt8] {
        var parameters = start
        let deadline = ContinuousClock.now + .milliseconds(parameters.timeoutMilliseconds)
        while true {
            // A waiting request woken by the loss of PostgreSQL answers 503 at once (the pool
            // would make it wait for a connection).
            guard gateway.pool.isReachable else {
                throw GatewayError.unavailable("PostgreSQL is unreachable; the gateway reconnects every 250 ms")
            }
            var version = await gateway.notifier.version(of: database)
            let (changes, lastSeq) = try await read(parameters, db: user.databaseID, gateway: gateway)
            if !changes.isEmpty || !parameters.longpoll || ContinuousClock.now >= deadline {
                return encode(changes, lastSeq: lastSeq)
            }
            // Nothing this user may read yet: resume from where the scan ended.
            parameters.since = lastSeq
            waiting: while true {
                guard let next = await gateway.notifier.waitForVersion(database, after: version, until: deadline) else {
                    return encode([], lastSeq: parameters.since)
                }
                if ContinuousClock.now >= deadline { break waiting }
                version = next
                // Woken: the shared probe gives the answer, or tells that nothing concerns
                // this request (it waits again), without a query of its own.
                switch await afterWake(parameters, version: version, database: database, user: user, gateway: gateway) {
                case let .nothing(seen)?: parameters.since = seen
                case let .answer(changes, lastSeq)?: return encode(changes, lastSeq: lastSeq)
                case nil: break waiting
                }
            }
        }
    }

    /// A streamed feed: continuous, eventsource, or long poll with heartbeat.
    static func stream(_ start: Parameters, gateway: Gateway, database: String, user: GatewayUser, writer: inout any ResponseBodyWriter) async throws {
        var parameters = start
        // A continuous feed with a heartbeat stays open until the client leaves (CouchDB);
        // otherwise it ends after `timeout` without a change.
        let endless = parameters.feed != .longpoll && parameters.heartbeatMilliseconds != nil && start.timeoutMilliseconds == defaultTimeout
        var deadline = ContinuousClock.now + .milliseconds(parameters.timeoutMilliseconds)
        var sent = 0
        var lastSeq = parameters.since
        // What the shared probe of a wake-up answered, instead of a read of this request's own.
        var pending: ([Change], Int64)? = nil
        while true {
            guard gateway.pool.isReachable else { break }
            let version = await gateway.notifier.version(of: database)
            let changes: [Change], seq: Int64
            if let pending {
                (changes, seq) = pending
            } else {
                (changes, seq) = try await read(parameters, db: user.databaseID, gateway: gateway)
            }
            pending = nil
            lastSeq = seq
            parameters.since = seq
            if parameters.feed == .longpoll {
                if !changes.isEmpty || ContinuousClock.now >= deadline {
                    try await writer.write(ByteBuffer(bytes: encode(changes, lastSeq: seq)))
                    return
                }
            } else if !changes.isEmpty {
                var out = JSONWriter(capacity: 128 * changes.count)
                for change in changes {
                    if parameters.feed == .eventsource { out.raw("data: ") }
                    writeChange(change, into: &out)
                    if parameters.feed == .eventsource {
                        out.raw("\nid: "); out.integer(change.seq); out.raw("\n\n")
                    } else {
                        out.raw("\n")
                    }
                }
                try await writer.write(ByteBuffer(bytes: out.bytes))
                sent += changes.count
                if parameters.limited && sent >= start.limit { break }
                parameters.limit = start.limited ? start.limit - sent : maximumLimit
                if !endless { deadline = ContinuousClock.now + .milliseconds(parameters.timeoutMilliseconds) }
                continue
            }
            if !endless && ContinuousClock.now >= deadline { break }
            let beat = parameters.heartbeatMilliseconds.map { ContinuousClock.now + .milliseconds($0) }
            let until = endless ? (beat ?? deadline) : min(deadline, beat ?? deadline)
            guard let now = await gateway.notifier.waitForVersion(database, after: version, until: until) else { break }  // shutting down
            if now == version {
                // No change (a heartbeat or the deadline): nothing to read.
                pending = ([], parameters.since)
            }
            if now == version, let beat, ContinuousClock.now >= beat {
                try await writer.write(ByteBuffer(bytes: Array((parameters.feed == .eventsource ? "event: heartbeat\ndata: \n\n" : "\n").utf8)))
            }
            if now != version {
                switch await afterWake(parameters, version: now, database: database, user: user, gateway: gateway) {
                case let .nothing(seen)?:
                    parameters.since = seen
                    lastSeq = seen
                    pending = ([], seen)
                case let .answer(changes, seen)?: pending = (changes, seen)
                case nil: break
                }
            }
        }
        switch parameters.feed {
        case .longpoll: try await writer.write(ByteBuffer(bytes: encode([], lastSeq: lastSeq)))
        case .continuous: try await writer.write(ByteBuffer(bytes: Array("{\"last_seq\":\(lastSeq)}\n".utf8)))
        default: break
        }
    }

    /// What a woken request does after the database's shared probe.
    enum WakeOutcome {
        /// Nothing it may read up to this sequence: it waits again.
        case nothing(Int64)
        /// Its answer, made from the probe without a query of its own.
        case answer([Change], Int64)
    }

    /// After a wake-up: the request's answer or the sequence up to which nothing concerns it,
    /// both from the database's shared probe (one query per wake-up for all its waiters); nil
    /// when the request must read on its own (the probe does not cover its `since`, or its
    /// answer needs the documents' bodies: include_docs, a selector).
    static func afterWake(_ parameters: Parameters, version: UInt64, database: String, user: GatewayUser, gateway: Gateway) async -> WakeOutcome? {
        guard !parameters.descending else { return nil }
        let db = user.databaseID
        let probe = await gateway.notifier.probe(database, version: version, since: parameters.since) { since in
            gateway.metrics.changesQuery("probe")
            return try? await fetchProbe(db: db, since: since, gateway: gateway)
        }
        guard let probe else { return nil }
        let ids = parameters.docIDs.map(Set.init)
        var changes: [Change] = []
        for seen in probe.changes.sorted(by: { $0.seq < $1.seq }) where seen.seq > parameters.since && (ids?.contains(seen.docID) ?? true) {
            let readable = seen.leaves.filter { parameters.access.canRead($0.channels) }
            guard !readable.isEmpty else { continue }
            let sorted = readable.sorted { a, b in a.rev.beats(b.rev, selfDeleted: a.deleted, otherDeleted: b.deleted) }
            var change = Change(seq: seen.seq, docID: seen.docID, deleted: seen.deleted, winner: seen.winner)
            change.revs = (parameters.allDocs ? sorted : [sorted[0]]).map(\.rev.description)
            changes.append(change)
        }
        if changes.isEmpty { return .nothing(probe.to) }
        if parameters.includeDocs || parameters.selector != nil { return nil }
        if changes.count >= parameters.limit {
            changes.removeLast(changes.count - parameters.limit)
            return .answer(changes, changes[changes.count - 1].seq)
        }
        return .answer(changes, probe.to)
    }

    /// The most leaf rows one probe fetches (past it, the waiters read on their own).
    static let maximumProbeRows = 10_000

    /// The changed documents of a database after `since`, with their winners and leaves.
    static func fetchProbe(db: Int64, since: Int64, gateway: Gateway) async throws -> ChangeNotifier.Probe? {
        var to = since
        var byDoc: [String: ChangeNotifier.ProbeChange] = [:]
        var rows = 0
        let result = try await gateway.client.query(
            """
            WITH s AS (SELECT seq FROM databases WHERE id = \(db))
            SELECT s.seq, d.seq, d.doc_id, d.deleted, d.winning_rev, r.rev_id, r.deleted, r.channels FROM s
            LEFT JOIN documents d ON d.db = \(db) AND d.seq > \(since) AND d.seq <= s.seq
            LEFT JOIN revisions r ON r.db = d.db AND r.doc_id = d.doc_id AND r.is_leaf
            LIMIT \(maximumProbeRows + 1)
            """, logger: gateway.logger)
        for try await (current, seq, docID, deleted, winner, revText, leafDeleted, channels) in result.decode(
            (Int64, Int64?, String?, Bool?, String?, String?, Bool?, [String]?).self) {
            to = current
            rows += 1
            guard let seq, let docID, let deleted, let winner else { continue }
            var change = byDoc[docID] ?? ChangeNotifier.ProbeChange(seq: seq, docID: docID, deleted: deleted, winner: winner, leaves: [])
            if let revText, let rev = RevisionID(revText) {
                change.leaves.append((rev, leafDeleted ?? false, channels ?? []))
            }
            byDoc[docID] = change
        }
        guard rows <= maximumProbeRows else { return nil }
        return ChangeNotifier.Probe(from: since, to: to, changes: Array(byDoc.values))
    }

    /// One page of changes and the `last_seq` to answer with.
    static func read(_ parameters: Parameters, db: Int64, gateway: Gateway) async throws -> ([Change], Int64) {
        gateway.metrics.changesQuery("read")
        let client = gateway.client
        let logger = gateway.logger
        // Commits land in sequence order (the database row lock), so every change up to the
        // counter read here is visible to the next statement.
        let updateSeq = try await currentSeq(db: db, gateway: gateway)
        guard updateSeq > parameters.since else { return ([], parameters.since) }
        let (all, channels) = parameters.access.sqlParameters
        let filterIDs = parameters.docIDs != nil
        let ids = parameters.docIDs ?? []
        var changes: [Change] = []
        let rows = try await client.query(
            """
            SELECT d.seq, d.doc_id, d.deleted, d.winning_rev FROM documents d
            WHERE d.db = \(db) AND d.seq > \(parameters.since) AND d.seq <= \(updateSeq)
              AND (NOT \(filterIDs) OR d.doc_id = ANY(\(ids)::text[]))
              AND (\(all) OR EXISTS (SELECT 1 FROM revisions r WHERE r.db = d.db AND r.doc_id = d.doc_id
                                     AND r.is_leaf AND r.channels && \(channels)::text[]))
            ORDER BY CASE WHEN \(parameters.descending) THEN -d.seq ELSE d.seq END LIMIT \(parameters.limit)
            """, logger: logger)
        for try await (seq, docID, deleted, winner) in rows.decode((Int64, String, Bool, String).self) {
            changes.append(Change(seq: seq, docID: docID, deleted: deleted, winner: winner))
        }
        var lastSeq = changes.count == parameters.limit ? changes[changes.count - 1].seq : updateSeq
        if parameters.descending { lastSeq = changes.last?.seq ?? parameters.since }
        guard !changes.isEmpty else { return ([], lastSeq) }

        var leaves: [String: [(rev: RevisionID, deleted: Bool)]] = [:]
        let leafRows = try await client.query(
            """
            SELECT doc_id, rev_id, deleted, channels FROM revisions
            WHERE db = \(db) AND doc_id = ANY(\(changes.map(\.docID))::text[]) AND is_leaf
            """, logger: logger)
        for try await (docID, revText, deleted, channels) in leafRows.decode((String, String, Bool, [String]).self) {
            guard parameters.access.canRead(channels), let rev = RevisionID(revText) else { continue }
            leaves[docID, default: []].append((rev, deleted))
        }
        var visible: [Change] = []
        var conflictsOf: [String: [String]] = [:]
        for var change in changes {
            // Winner order: the document's winner first when readable, then the other leaves.
            let sorted = (leaves[change.docID] ?? []).sorted { a, b in a.rev.beats(b.rev, selfDeleted: a.deleted, otherDeleted: b.deleted) }
            guard !sorted.isEmpty else { continue }  // changed between the two statements
            change.revs = (parameters.allDocs ? sorted : [sorted[0]]).map(\.rev.description)
            conflictsOf[change.docID] = sorted.dropFirst().filter { !$0.deleted }.map(\.rev.description)
            visible.append(change)
        }
        if parameters.includeDocs || parameters.selector != nil {
            let found = try await RevisionReader.read(visible.map { ($0.docID, $0.revs[0]) }, withHistory: false, db: db, client: client, logger: logger)
            var kept: [Change] = []
            for (i, var change) in visible.enumerated() {
                guard let body = found[i]?.body else { continue }
                if let selector = parameters.selector {
                    guard let parsed = try? JSONParser.parse(Array(body.utf8)),
                          selector.matches(parsed, id: change.docID, rev: change.revs[0]) else { continue }
                }
                if parameters.includeDocs {
                    var writer = JSONWriter(capacity: body.utf8.count + 128)
                    writeRevision(into: &writer, docID: change.docID, rev: change.revs[0], history: nil, body: body)
                    if parameters.conflicts, let list = conflictsOf[change.docID], !list.isEmpty {
                        writer.bytes.removeLast()
                        writer.raw(",\"_conflicts\":[")
                        for (j, rev) in list.enumerated() {
                            if j > 0 { writer.raw(",") }
                            writer.string(rev)
                        }
                        writer.raw("]}")
                    }
                    change.doc = writer.bytes
                }
                kept.append(change)
            }
            visible = kept
        }
        return (visible, lastSeq)
    }

    static func writeChange(_ change: Change, into writer: inout JSONWriter) {
        writer.raw("{\"seq\":"); writer.integer(change.seq)
        writer.raw(",\"id\":"); writer.string(change.docID)
        writer.raw(",\"changes\":[")
        for (j, rev) in change.revs.enumerated() {
            if j > 0 { writer.raw(",") }
            writer.raw("{\"rev\":"); writer.string(rev); writer.raw("}")
        }
        writer.raw("]")
        if change.deleted { writer.raw(",\"deleted\":true") }
        if let doc = change.doc { writer.raw(",\"doc\":"); writer.raw(doc) }
        writer.raw("}")
    }

    static func encode(_ changes: [Change], lastSeq: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: 96 * changes.count + 32)
        writer.raw("{\"results\":[")
        for (i, change) in changes.enumerated() {
            if i > 0 { writer.raw(",") }
            writeChange(change, into: &writer)
        }
        writer.raw("],\"last_seq\":"); writer.integer(lastSeq)
        writer.raw("}")
        return writer.bytes
    }
}
