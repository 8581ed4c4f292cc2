import Logging
import PostgresNIO

/// `POST /{db}/_revs_diff`: which of the given revisions the gateway lacks (a revision known
/// only as an ancestor, without its body, counts as missing).
enum RevsDiff {
    static func handle(gateway: Gateway, user: GatewayUser, body: ByteBuffer) async throws -> [UInt8] {
        let request: JSON
        do {
            request = try JSONParser.parse(body.readableBytesView)
        } catch {
            throw GatewayError.badRequest("_revs_diff body: \(error)")
        }
        guard let members = request.objectMembers else {
            throw GatewayError.badRequest("_revs_diff body must be an object {\"docid\": [\"rev\", ...]}")
        }
        var docIDs: [String] = [], revs: [String] = []
        var asked: [(docID: String, revs: [String])] = []
        for (docID, list) in members {
            guard !docID.utf8.contains(0) else { throw GatewayError.badRequest("_revs_diff: a document id must not contain U+0000") }
            guard let array = list.arrayValue else { throw GatewayError.badRequest("_revs_diff: '\(docID)' must map to an array of revision ids") }
            var revList: [String] = []
            for element in array {
                guard let rev = element.stringValue, RevisionID(rev) != nil else {
                    throw GatewayError.badRequest("_revs_diff: document '\(docID)' lists a bad revision id")
                }
                revList.append(rev)
                docIDs.append(docID)
                revs.append(rev)
            }
            asked.append((docID, revList))
        }
        var present = Set<String>()
        if !docIDs.isEmpty {
            let rows = try await gateway.client.query(
                """
                SELECT c.doc_id, c.rev_id FROM unnest(\(docIDs)::text[], \(revs)::text[]) AS c(doc_id, rev_id)
                JOIN revisions r ON r.db = \(user.databaseID) AND r.doc_id = c.doc_id AND r.rev_id = c.rev_id
                WHERE r.body IS NOT NULL
                """, logger: gateway.logger)
            for try await (docID, rev) in rows.decode((String, String).self) {
                present.insert(docID + "\u{0}" + rev)
            }
        }
        var writer = JSONWriter(capacity: 64 * asked.count + 2)
        writer.raw("{")
        var first = true
        for (docID, list) in asked {
            let missing = list.filter { !present.contains(docID + "\u{0}" + $0) }
            guard !missing.isEmpty else { continue }
            if !first { writer.raw(",") }
            first = false
            writer.string(docID)
            writer.raw(":{\"missing\":[")
            for (i, rev) in missing.enumerated() {
                if i > 0 { writer.raw(",") }
                writer.string(rev)
            }
            writer.raw("]}")
        }
        writer.raw("}")
        return writer.bytes
    }
}
