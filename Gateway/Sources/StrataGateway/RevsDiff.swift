import Logging
import PostgresNIO

/// `POST /{db}/_revs_diff`: which of the given revisions the gateway lacks (a revision known
/// only as an ancestor, without its body, counts as missing).
enum RevsDiff {
    /// The most revisions one request may name (what its parse and its query cost is bounded by).
    static let maximumRevisions = 50_000

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
            try DocumentIDs.check(docID, what: "_revs_diff: a document id")
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
            guard revs.count <= maximumRevisions else {
                throw GatewayError.tooLarge("_revs_diff names more than \(maximumRevisions) revisions: send fewer per request")
            }
        }
        var present = Set<String>()
        if !docIDs.isEmpty {
            let rows = try await gateway.client.query(
                """
                SELECT c.doc_id, c.rev_id, r.channels FROM unnest(\(docIDs)::text[], \(revs)::text[]) AS c(doc_id, rev_id)
                JOIN revisions r ON r.db = \(user.databaseID) AND r.doc_id = c.doc_id AND r.rev_id = c.rev_id
                WHERE r.body IS NOT NULL
                """, logger: gateway.logger)
            for try await (docID, rev, channels) in rows.decode((String, String, [String]).self) {
                // A revision the user may not read is reported missing, as if the gateway
                // lacked it: its existence is not told.
                if user.read.canRead(channels) { present.insert(docID + "\u{0}" + rev) }
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
