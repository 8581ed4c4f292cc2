import Logging
import NIOCore
import PostgresNIO

/// `GET`/`POST /{db}/_all_docs` (CouchDB 3): the documents by id (byte order of their UTF-8,
/// which is CouchDB's raw order for ids), with `startkey`/`endkey` (or `start_key`/`end_key`),
/// `inclusive_end`, `key`, `keys`, `limit`, `skip`, `descending` and `include_docs`. A document
/// is listed when the user may read its winning revision; `total_rows` counts those.
enum AllDocs {
    /// The most rows of one answer (a deliberate difference: page with `startkey` or `skip`).
    static let maximumRows = 10_000

    static func handle(gateway: Gateway, user: GatewayUser, query: [String: String], body: ByteBuffer?) async throws -> [UInt8] {
        func jsonParameter(_ name: String) throws(GatewayError) -> JSON? {
            guard let text = query[name] else { return nil }
            do {
                return try JSONParser.parse(Array(text.utf8))
            } catch {
                throw .badRequest("\(name) must be JSON (a quoted string for an id): \(error)")
            }
        }
        func flag(_ name: String, _ fallback: Bool) throws(GatewayError) -> Bool {
            switch query[name] {
            case nil: return fallback
            case "true": return true
            case "false": return false
            case let other?: throw .badRequest("\(name) must be true or false, not '\(other)'")
            }
        }
        let includeDocs = try flag("include_docs", false)
        let descending = try flag("descending", false)
        let inclusiveEnd = try flag("inclusive_end", true)
        var limit = maximumRows
        if let text = query["limit"] {
            guard let value = Int(text), value >= 0 else { throw GatewayError.badRequest("limit must be an integer ≥ 0") }
            limit = min(value, maximumRows)
        }
        var skip = 0
        if let text = query["skip"] {
            guard let value = Int(text), value >= 0 else { throw GatewayError.badRequest("skip must be an integer ≥ 0") }
            skip = value
        }
        var keys: [String]? = nil
        if let list = try jsonParameter("keys") {
            guard let array = list.arrayValue else { throw GatewayError.badRequest("keys must be a JSON array") }
            keys = array.compactMap(\.stringValue)
        }
        if let key = try jsonParameter("key") {
            guard let text = key.stringValue else { throw GatewayError.badRequest("key must be a JSON string") }
            keys = [text]
        }
        if let body, body.readableBytes > 0 {
            let parsed: JSON
            do { parsed = try JSONParser.parse(body.readableBytesView) } catch { throw GatewayError.badRequest("_all_docs body: \(error)") }
            if let list = parsed["keys"] {
                guard let array = list.arrayValue else { throw GatewayError.badRequest("keys must be a JSON array") }
                keys = array.compactMap(\.stringValue)
            }
        }
        let (all, channels) = user.read.sqlParameters
        let db = user.databaseID
        var total: Int64 = 0
        for try await count in try await gateway.client.query(
            """
            SELECT count(*) FROM documents d JOIN revisions r ON r.db = d.db AND r.doc_id = d.doc_id AND r.rev_id = d.winning_rev
            WHERE d.db = \(db) AND NOT d.deleted AND (\(all) OR r.channels && \(channels)::text[])
            """, logger: gateway.logger).decode(Int64.self) {
            total = count
        }
        var writer = JSONWriter(capacity: 4096)
        writer.raw("{\"total_rows\":"); writer.integer(total)
        writer.raw(",\"offset\":"); writer.integer(keys == nil ? skip : 0)
        writer.raw(",\"rows\":[")
        if let keys {
            guard keys.count <= maximumRows else { throw GatewayError.tooLarge("keys lists more than \(maximumRows) ids") }
            var rows: [String: (rev: String, deleted: Bool, readable: Bool, body: String?)] = [:]
            let result = try await gateway.client.query(
                """
                SELECT d.doc_id, d.winning_rev, d.deleted, r.channels, CASE WHEN \(includeDocs) THEN r.body END
                FROM documents d JOIN revisions r ON r.db = d.db AND r.doc_id = d.doc_id AND r.rev_id = d.winning_rev
                WHERE d.db = \(db) AND d.doc_id = ANY(\(keys)::text[])
                """, logger: gateway.logger)
            for try await (id, rev, deleted, revChannels, body) in result.decode((String, String, Bool, [String], String?).self) {
                rows[id] = (rev, deleted, user.read.canRead(revChannels), body)
            }
            for (i, key) in keys.enumerated() {
                if i > 0 { writer.raw(",") }
                guard let row = rows[key], row.readable else {
                    writer.raw("{\"key\":"); writer.string(key); writer.raw(",\"error\":\"not_found\"}")
                    continue
                }
                writer.raw("{\"id\":"); writer.string(key)
                writer.raw(",\"key\":"); writer.string(key)
                writer.raw(",\"value\":{\"rev\":"); writer.string(row.rev)
                if row.deleted { writer.raw(",\"deleted\":true") }
                writer.raw("}")
                if includeDocs {
                    writer.raw(",\"doc\":")
                    if row.deleted || row.body == nil { writer.raw("null") } else { writeRevision(into: &writer, docID: key, rev: row.rev, history: nil, body: row.body ?? "{}") }
                }
                writer.raw("}")
            }
        } else {
            var start = (try jsonParameter("startkey") ?? jsonParameter("start_key"))
            var end = (try jsonParameter("endkey") ?? jsonParameter("end_key"))
            if let value = start, value.stringValue == nil { throw GatewayError.badRequest("startkey must be a JSON string") }
            if let value = end, value.stringValue == nil { throw GatewayError.badRequest("endkey must be a JSON string") }
            if descending { swap(&start, &end) }
            let low = start?.stringValue ?? "", high = end?.stringValue ?? ""
            let hasHigh = end != nil
            // With descending, the end key is the low bound: inclusive_end applies to it.
            let lowInclusive = descending ? inclusiveEnd : true
            let highInclusive = descending ? true : inclusiveEnd
            let rows = try await gateway.client.query(
                """
                SELECT d.doc_id, d.winning_rev, CASE WHEN \(includeDocs) THEN r.body END
                FROM documents d JOIN revisions r ON r.db = d.db AND r.doc_id = d.doc_id AND r.rev_id = d.winning_rev
                WHERE d.db = \(db) AND NOT d.deleted AND (\(all) OR r.channels && \(channels)::text[])
                  AND (d.doc_id > \(low) OR (\(lowInclusive) AND d.doc_id = \(low)))
                  AND (NOT \(hasHigh) OR d.doc_id < \(high) OR (\(highInclusive) AND d.doc_id = \(high)))
                ORDER BY CASE WHEN \(descending) THEN NULL ELSE d.doc_id END ASC, d.doc_id DESC
                LIMIT \(limit) OFFSET \(skip)
                """, logger: gateway.logger)
            var first = true
            for try await (id, rev, body) in rows.decode((String, String, String?).self) {
                if !first { writer.raw(",") }
                first = false
                writer.raw("{\"id\":"); writer.string(id)
                writer.raw(",\"key\":"); writer.string(id)
                writer.raw(",\"value\":{\"rev\":"); writer.string(rev); writer.raw("}")
                if includeDocs {
                    writer.raw(",\"doc\":")
                    writeRevision(into: &writer, docID: id, rev: rev, history: nil, body: body ?? "{}")
                }
                writer.raw("}")
            }
        }
        writer.raw("]}")
        return writer.bytes
    }
}
