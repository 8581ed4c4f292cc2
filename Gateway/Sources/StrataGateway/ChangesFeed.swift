import Logging
import PostgresNIO

/// `GET /{db}/_changes` (PROTOCOL.md "_changes"): the documents changed after `since`, one
/// result per document at its newest change, in sequence order, with the leaves the user may
/// read; `feed=longpoll` waits for a change (any gateway process's) when there is none.
enum ChangesFeed {
    static let maximumLimit = 10_000
    static let defaultTimeout = 60_000
    static let maximumTimeout = 300_000

    struct Parameters {
        var since: Int64 = 0
        var limit = maximumLimit
        var longpoll = false
        var timeoutMilliseconds = defaultTimeout
        var allDocs = false
        var access: ChannelAccess

        init(query: [String: String], user: GatewayUser) throws(GatewayError) {
            access = user.read
            if let text = query["since"], !text.isEmpty {
                guard let value = Int64(text), value >= 0 else { throw .badRequest("since must be a sequence number (a decimal integer ≥ 0), not '\(text)'") }
                since = value
            }
            if let text = query["limit"] {
                guard let value = Int(text), value >= 0 else { throw .badRequest("limit must be an integer ≥ 0, not '\(text)'") }
                limit = max(1, min(value, maximumLimit))
            }
            switch query["feed"] {
            case nil, "normal": longpoll = false
            case "longpoll": longpoll = true
            case let other?: throw .badRequest("feed must be normal or longpoll, not '\(other)'")
            }
            if let text = query["timeout"] {
                guard let value = Int(text), value >= 0 else { throw .badRequest("timeout must be milliseconds (an integer ≥ 0), not '\(text)'") }
                timeoutMilliseconds = min(value, maximumTimeout)
            }
            switch query["style"] {
            case nil, "main_only": allDocs = false
            case "all_docs": allDocs = true
            case let other?: throw .badRequest("style must be all_docs or main_only, not '\(other)'")
            }
            switch query["filter"] {
            case nil: break
            case "sync_gateway/bychannel":
                guard let list = query["channels"] else { throw .badRequest("filter sync_gateway/bychannel needs a channels parameter") }
                access = access.intersected(with: list.split(separator: ",").map(String.init))
            case let other?: throw .badRequest("unknown filter '\(other)' (only sync_gateway/bychannel)")
            }
        }
    }

    struct Change {
        var seq: Int64
        var docID: String
        var deleted: Bool
        var winner: String
        var revs: [String] = []
    }

    static func handle(gateway: Gateway, database: String, user: GatewayUser, query: [String: String]) async throws -> [UInt8] {
        var parameters = try Parameters(query: query, user: user)
        let deadline = ContinuousClock.now + .milliseconds(parameters.timeoutMilliseconds)
        while true {
            // A waiting request woken by the loss of PostgreSQL answers 503 at once (the pool
            // would make it wait for a connection).
            guard gateway.pool.isReachable else {
                throw GatewayError.unavailable("PostgreSQL is unreachable; the gateway reconnects every 250 ms")
            }
            let version = await gateway.notifier.version(of: database)
            let (changes, lastSeq) = try await read(parameters, db: user.databaseID, gateway: gateway)
            if !changes.isEmpty || !parameters.longpoll || ContinuousClock.now >= deadline {
                return encode(changes, lastSeq: lastSeq)
            }
            // Nothing this user may read yet: resume from where the scan ended.
            parameters.since = lastSeq
            guard await gateway.notifier.wait(database, after: version, until: deadline) else {
                return encode([], lastSeq: lastSeq)
            }
        }
    }

    /// One page of changes and the `last_seq` to answer with.
    static func read(_ parameters: Parameters, db: Int64, gateway: Gateway) async throws -> ([Change], Int64) {
        let client = gateway.client
        let logger = gateway.logger
        // Commits land in sequence order (the database row lock), so every change up to the
        // counter read here is visible to the next statement.
        var updateSeq: Int64 = parameters.since
        for try await seq in try await client.query("SELECT seq FROM databases WHERE id = \(db)", logger: logger).decode(Int64.self) {
            updateSeq = seq
        }
        guard updateSeq > parameters.since else { return ([], parameters.since) }
        let (all, channels) = parameters.access.sqlParameters
        var changes: [Change] = []
        let rows = try await client.query(
            """
            SELECT d.seq, d.doc_id, d.deleted, d.winning_rev FROM documents d
            WHERE d.db = \(db) AND d.seq > \(parameters.since) AND d.seq <= \(updateSeq)
              AND (\(all) OR EXISTS (SELECT 1 FROM revisions r WHERE r.db = d.db AND r.doc_id = d.doc_id
                                     AND r.is_leaf AND r.channels && \(channels)::text[]))
            ORDER BY d.seq LIMIT \(parameters.limit)
            """, logger: logger)
        for try await (seq, docID, deleted, winner) in rows.decode((Int64, String, Bool, String).self) {
            changes.append(Change(seq: seq, docID: docID, deleted: deleted, winner: winner))
        }
        let lastSeq = changes.count == parameters.limit ? changes[changes.count - 1].seq : updateSeq
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
        for var change in changes {
            // Winner order: the document's winner first when readable, then the other leaves.
            let sorted = (leaves[change.docID] ?? []).sorted { a, b in a.rev.beats(b.rev, selfDeleted: a.deleted, otherDeleted: b.deleted) }
            guard !sorted.isEmpty else { continue }  // changed between the two statements
            change.revs = (parameters.allDocs ? sorted : [sorted[0]]).map(\.rev.description)
            visible.append(change)
        }
        return (visible, lastSeq)
    }

    static func encode(_ changes: [Change], lastSeq: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: 96 * changes.count + 32)
        writer.raw("{\"results\":[")
        for (i, change) in changes.enumerated() {
            if i > 0 { writer.raw(",") }
            writer.raw("{\"seq\":"); writer.integer(change.seq)
            writer.raw(",\"id\":"); writer.string(change.docID)
            writer.raw(",\"changes\":[")
            for (j, rev) in change.revs.enumerated() {
                if j > 0 { writer.raw(",") }
                writer.raw("{\"rev\":"); writer.string(rev); writer.raw("}")
            }
            writer.raw("]")
            if change.deleted { writer.raw(",\"deleted\":true") }
            writer.raw("}")
        }
        writer.raw("],\"last_seq\":"); writer.integer(lastSeq)
        writer.raw("}")
        return writer.bytes
    }
}
