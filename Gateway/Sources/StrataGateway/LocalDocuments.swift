import Logging
import PostgresNIO

/// `GET`, `PUT` and `DELETE /{db}/_local/{id}`: documents that are never in `_changes` nor
/// replicated (replication checkpoints). They belong to the user who wrote them (issue 24: a
/// user who knows another's checkpoint id must not overwrite it): each user of a database has
/// its own `_local` namespace. Their revision is `0-K`, K counting the writes.
enum LocalDocuments {
    static func get(gateway: Gateway, user: GatewayUser, id: String) async throws -> [UInt8] {
        try DocumentIDs.check(id, what: "a local document id")
        let rows = try await gateway.client.query(
            "SELECT rev, body FROM local_documents WHERE db = \(user.databaseID) AND owner = \(user.name) AND doc_id = \(id)", logger: gateway.logger)
        for try await (rev, body) in rows.decode((Int64, String).self) {
            var writer = JSONWriter(capacity: body.utf8.count + 64)
            writeRevision(into: &writer, docID: "_local/" + id, rev: "0-\(rev)", history: nil, body: body)
            return writer.bytes
        }
        throw GatewayError.notFound("no local document '_local/\(id)'")
    }

    static func put(gateway: Gateway, user: GatewayUser, id: String, body: ByteBuffer) async throws -> [UInt8] {
        try DocumentIDs.check(id, what: "a local document id")
        let document: JSON
        do {
            document = try JSONParser.parse(body.readableBytesView)
        } catch {
            throw GatewayError.badRequest("_local/\(id) body: \(error)")
        }
        guard let members = document.objectMembers else { throw GatewayError.badRequest("_local/\(id) body must be a JSON object") }
        var expected: Int64? = nil
        switch document["_rev"] {
        case nil, .null: break
        case let .string(text):
            guard text.hasPrefix("0-"), let k = Int64(text.dropFirst(2)), k >= 0 else {
                throw GatewayError.badRequest("_local/\(id): bad _rev '\(text)' (a local revision is 0-K)")
            }
            expected = k
        default:
            throw GatewayError.badRequest("_local/\(id): _rev must be a string")
        }
        let stored = String(decoding: JSONWriter.encode(.object(members.filter { $0.0 != "_id" && $0.0 != "_rev" })), as: UTF8.self)
        if stored.utf8.count > gateway.maxDocumentSize {
            throw GatewayError.tooLarge("_local/\(id) is \(stored.utf8.count) bytes, over the limit of \(gateway.maxDocumentSize)")
        }
        let rows: PostgresRowSequence
        if let expected {
            rows = try await gateway.client.query(
                """
                UPDATE local_documents SET rev = rev + 1, body = \(stored)
                WHERE db = \(user.databaseID) AND owner = \(user.name) AND doc_id = \(id) AND rev = \(expected) RETURNING rev
                """, logger: gateway.logger)
        } else {
            rows = try await gateway.client.query(
                """
                INSERT INTO local_documents (db, owner, doc_id, rev, body) VALUES (\(user.databaseID), \(user.name), \(id), 1, \(stored))
                ON CONFLICT (db, owner, doc_id) DO NOTHING RETURNING rev
                """, logger: gateway.logger)
        }
        for try await rev in rows.decode(Int64.self) {
            var writer = JSONWriter()
            writer.raw("{\"ok\":true,\"id\":"); writer.string("_local/" + id)
            writer.raw(",\"rev\":"); writer.string("0-\(rev)"); writer.raw("}")
            return writer.bytes
        }
        if let expected {
            throw GatewayError.conflict("_local/\(id): revision 0-\(expected) is not the current one (stale _rev)")
        }
        throw GatewayError.conflict("_local/\(id) exists: give its current _rev to replace it")
    }

    /// `DELETE /{db}/_local/{id}?rev=0-K` (CouchDB: the current revision is required).
    static func delete(gateway: Gateway, user: GatewayUser, id: String, rev: String?) async throws -> [UInt8] {
        try DocumentIDs.check(id, what: "a local document id")
        guard let rev, rev.hasPrefix("0-"), let k = Int64(rev.dropFirst(2)), k >= 0 else {
            throw GatewayError.conflict("Document update conflict. (deleting _local/\(id) needs its current rev=0-K)")
        }
        let rows = try await gateway.client.query(
            """
            DELETE FROM local_documents WHERE db = \(user.databaseID) AND owner = \(user.name) AND doc_id = \(id) AND rev = \(k)
            RETURNING rev
            """, logger: gateway.logger)
        for try await _ in rows.decode(Int64.self) {
            var writer = JSONWriter()
            writer.raw("{\"ok\":true,\"id\":"); writer.string("_local/" + id)
            writer.raw(",\"rev\":\"0-0\"}")
            return writer.bytes
        }
        for try await _ in try await gateway.client.query(
            "SELECT rev FROM local_documents WHERE db = \(user.databaseID) AND owner = \(user.name) AND doc_id = \(id)", logger: gateway.logger
        ).decode(Int64.self) {
            throw GatewayError.conflict("Document update conflict. (_local/\(id): \(rev) is not the current revision)")
        }
        throw GatewayError.notFound("missing")
    }
}
