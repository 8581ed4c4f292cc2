import Logging
import PostgresNIO

/// Reads revisions with their bodies and histories for `_bulk_get` and `GET /{db}/{docid}`:
/// two set queries per request whatever the number of revisions asked for (the bodies, and the
/// histories by a recursive walk up `parent_rev`).
enum RevisionReader {
    /// The longest history returned (CouchDB's default revs_limit is 1000).
    static let maximumHistory = 1000

    struct Found {
        var deleted: Bool
        var channels: [String]
        var body: String?
        var history: [String] = []  // digests, newest first
    }

    /// The revisions `(docID, rev)` asked for, by request index; a missing one has no entry.
    static func read(
        _ requests: [(docID: String, rev: String)], withHistory: Bool, db: Int64,
        client: PostgresClient, logger: Logger
    ) async throws -> [Int: Found] {
        let docIDs = requests.map(\.docID)
        let revs = requests.map(\.rev)
        var found: [Int: Found] = [:]
        let rows = try await client.query(
            """
            SELECT q.idx, r.deleted, r.channels, r.body
            FROM unnest(\(docIDs)::text[], \(revs)::text[]) WITH ORDINALITY AS q(doc_id, rev_id, idx)
            JOIN revisions r ON r.db = \(db) AND r.doc_id = q.doc_id AND r.rev_id = q.rev_id
            """, logger: logger)
        for try await (index, deleted, channels, body) in rows.decode((Int64, Bool, [String], String?).self) {
            found[Int(index) - 1] = Found(deleted: deleted, channels: channels, body: body)
        }
        guard withHistory, !found.isEmpty else { return found }
        let wanted = found.keys.sorted()
        let historyRows = try await client.query(
            """
            WITH RECURSIVE q AS (
                SELECT * FROM unnest(\(wanted.map { docIDs[$0] })::text[], \(wanted.map { revs[$0] })::text[], \(wanted.map { Int64($0) })::int8[])
                    AS q(doc_id, rev_id, idx)
            ), h AS (
                SELECT q.idx, r.doc_id, r.parent_rev, r.digest, 0 AS depth
                FROM q JOIN revisions r ON r.db = \(db) AND r.doc_id = q.doc_id AND r.rev_id = q.rev_id
                UNION ALL
                SELECT h.idx, r.doc_id, r.parent_rev, r.digest, h.depth + 1
                FROM h JOIN revisions r ON r.db = \(db) AND r.doc_id = h.doc_id AND r.rev_id = h.parent_rev
                WHERE h.depth < \(maximumHistory - 1)
            )
            SELECT idx, digest FROM h ORDER BY idx, depth
            """, logger: logger)
        for try await (index, digest) in historyRows.decode((Int64, String).self) {
            found[Int(index)]?.history.append(digest)
        }
        return found
    }

    /// The winning revision ids of documents, by document id.
    static func winners(_ docIDs: [String], db: Int64, client: PostgresClient, logger: Logger) async throws -> [String: (rev: String, deleted: Bool)] {
        var winners: [String: (rev: String, deleted: Bool)] = [:]
        guard !docIDs.isEmpty else { return winners }
        let rows = try await client.query(
            "SELECT doc_id, winning_rev, deleted FROM documents WHERE db = \(db) AND doc_id = ANY(\(docIDs)::text[])", logger: logger)
        for try await (docID, rev, deleted) in rows.decode((String, String, Bool).self) {
            winners[docID] = (rev, deleted)
        }
        return winners
    }

    /// `POST /{db}/_bulk_get?revs=true`.
    static func bulkGet(gateway: Gateway, user: GatewayUser, body: ByteBuffer, revs: Bool) async throws -> [UInt8] {
        let request: JSON
        do {
            request = try JSONParser.parse(body.readableBytesView)
        } catch {
            throw GatewayError.badRequest("_bulk_get body: \(error)")
        }
        guard let docs = request["docs"]?.arrayValue else {
            throw GatewayError.badRequest("_bulk_get body must be an object with a docs array")
        }
        guard docs.count <= BulkDocs.maximumDocuments else {
            throw GatewayError.tooLarge("_bulk_get asks for \(docs.count) revisions, over the limit of \(BulkDocs.maximumDocuments) per request")
        }
        var asked: [(docID: String, rev: String?)] = []
        for (i, element) in docs.enumerated() {
            guard let id = element["id"]?.stringValue else {
                throw GatewayError.badRequest("_bulk_get docs[\(i)] has no id string")
            }
            try DocumentIDs.check(id, what: "_bulk_get docs[\(i)].id")
            var rev: String? = nil
            if let value = element["rev"] {
                guard let text = value.stringValue, RevisionID(text) != nil else {
                    throw GatewayError.badRequest("_bulk_get docs[\(i)] (\(id)): bad revision id")
                }
                rev = text
            }
            asked.append((id, rev))
        }
        let needWinner = asked.filter { $0.rev == nil }.map(\.docID)
        let winners = try await self.winners(needWinner, db: user.databaseID, client: gateway.client, logger: gateway.logger)
        let resolved = asked.map { (docID: $0.docID, rev: $0.rev ?? winners[$0.docID]?.rev ?? "") }
        let found = try await read(resolved, withHistory: revs, db: user.databaseID, client: gateway.client, logger: gateway.logger)

        var writer = JSONWriter(capacity: 512 * max(1, resolved.count))
        writer.raw("{\"results\":[")
        for (i, entry) in resolved.enumerated() {
            if i > 0 { writer.raw(",") }
            writer.raw("{\"id\":"); writer.string(entry.docID)
            writer.raw(",\"docs\":[")
            var error: GatewayError? = nil
            // A revision the user may not read answers exactly as a missing one: neither its
            // existence nor its channels are told.
            if let revision = found[i], let body = revision.body, user.read.canRead(revision.channels) {
                writer.raw("{\"ok\":")
                let history = revs ? (start: RevisionID(entry.rev)?.generation ?? 1, ids: revision.history) : nil
                writeRevision(into: &writer, docID: entry.docID, rev: entry.rev, history: history, body: body)
                writer.raw("}")
            } else {
                error = .notFound("missing")
            }
            if let error {
                writer.raw("{\"error\":{\"id\":"); writer.string(entry.docID)
                // The revision as asked (none for the winner): the winner of a document the
                // user may not read is not told.
                writer.raw(",\"rev\":"); writer.string(asked[i].rev ?? "")
                writer.raw(",\"error\":"); writer.string(error.kind)
                writer.raw(",\"reason\":"); writer.string(error.reason)
                writer.raw(",\"status\":"); writer.integer(error.status)
                writer.raw("}}")
            }
            writer.raw("]}")
        }
        writer.raw("]}")
        return writer.bytes
    }

    /// `GET /{db}/{docid}?rev=R&revs=true`. A document or revision the user may not read
    /// answers 404 `missing`, exactly as one that does not exist.
    static func getDocument(gateway: Gateway, user: GatewayUser, docID: String, rev: String?, revs: Bool) async throws -> [UInt8] {
        var revText: String
        var winnerDeleted = false
        if let rev {
            guard RevisionID(rev) != nil else { throw GatewayError.badRequest("bad revision id '\(rev)'") }
            revText = rev
        } else {
            guard let winner = try await winners([docID], db: user.databaseID, client: gateway.client, logger: gateway.logger)[docID] else {
                throw GatewayError.notFound("missing")
            }
            revText = winner.rev
            winnerDeleted = winner.deleted
        }
        let found = try await read([(docID, revText)], withHistory: revs, db: user.databaseID, client: gateway.client, logger: gateway.logger)
        guard let revision = found[0], let body = revision.body, user.read.canRead(revision.channels) else {
            throw GatewayError.notFound("missing")
        }
        if winnerDeleted { throw GatewayError.notFound("deleted") }
        var writer = JSONWriter(capacity: body.utf8.count + 256)
        let history = revs ? (start: RevisionID(revText)?.generation ?? 1, ids: revision.history) : nil
        writeRevision(into: &writer, docID: docID, rev: revText, history: history, body: body)
        return writer.bytes
    }
}
