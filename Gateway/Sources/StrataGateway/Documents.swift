import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO

/// CouchDB's document API over the gateway's revision trees (PROTOCOL.md "CouchDB's document
/// API"): `PUT`/`DELETE /{db}/{docid}`, `POST /{db}`, standalone attachments, and `GET` with
/// `open_revs`, `revs_info`, `conflicts` and `latest`. Every write goes through
/// `BulkDocs.save`, so it is checked against the user's channels exactly as a replicated one.
enum Documents {
    /// `PUT /{db}/{docid}` (`?new_edits=false` writes a replicated revision), `POST /{db}`:
    /// 201 `{"ok": true, "id", "rev"}`, 409 on a stale or missing `_rev`.
    static func put(
        gateway: Gateway, database: String, user: GatewayUser, docID: String?, body: ByteBuffer,
        query: [String: String], ifMatch: String?
    ) async throws -> Response {
        let parsed: JSON
        do {
            parsed = try JSONParser.parse(body.readableBytesView)
        } catch {
            throw GatewayError.badRequest("the document: \(error)")
        }
        guard case var .object(members) = parsed else { throw GatewayError.badRequest("a document must be a JSON object") }
        if let docID {
            if let given = parsed["_id"]?.stringValue, given != docID {
                throw GatewayError.badRequest("the document's _id '\(given)' is not the id of its URL '\(docID)'")
            }
            members = members.filter { $0.0 != "_id" }
            members.insert(("_id", .string(docID)), at: 0)
        }
        let rev = query["rev"] ?? ifMatch.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        if let rev, parsed["_rev"] == nil {
            members.append(("_rev", .string(rev)))
        } else if let rev, parsed["_rev"]?.stringValue != rev {
            throw GatewayError.badRequest("the document's _rev and the rev of the request differ")
        }
        let newEdits = query["new_edits"] != "false"
        return try await saveOne(.object(members), newEdits: newEdits, status: 201, gateway: gateway, database: database, user: user)
    }

    /// Writes one document through `BulkDocs.save` and answers as CouchDB does.
    static func saveOne(_ doc: JSON, newEdits: Bool, status: Int, gateway: Gateway, database: String, user: GatewayUser) async throws -> Response {
        let outcomes = try await BulkDocs.save([doc], newEdits: newEdits, gateway: gateway, database: database, user: user)
        switch outcomes[0] {
        case let .ok(id, rev):
            var writer = JSONWriter()
            writer.raw("{\"ok\":true,\"id\":"); writer.string(id)
            writer.raw(",\"rev\":"); writer.string(rev); writer.raw("}")
            var response = Routes.json(status, writer.bytes)
            response.headers[.eTag] = "\"\(rev)\""
            return response
        case let .failed(_, _, error):
            throw error
        }
    }

    /// `DELETE /{db}/{docid}?rev=R`: a deletion revision (in the channels of what it deletes).
    static func delete(gateway: Gateway, database: String, user: GatewayUser, docID: String, rev: String?) async throws -> Response {
        guard let rev else { throw GatewayError.conflict("Document update conflict. (a deletion needs rev=)") }
        let doc: JSON = .object([("_id", .string(docID)), ("_rev", .string(rev)), ("_deleted", .bool(true))])
        return try await saveOne(doc, newEdits: true, status: 200, gateway: gateway, database: database, user: user)
    }

    /// The revision a request names (`rev`, else the winner), readable by the user, with its
    /// body; 404 `missing` (or `deleted` for a readable deleted winner) otherwise.
    static func readable(gateway: Gateway, user: GatewayUser, docID: String, rev: String?, history: Bool) async throws -> (rev: String, found: RevisionReader.Found, body: String) {
        var revText: String
        var winnerDeleted = false
        if let rev {
            guard RevisionID(rev) != nil else { throw GatewayError.badRequest("bad revision id '\(rev)'") }
            revText = rev
        } else {
            guard let winner = try await RevisionReader.winners([docID], db: user.databaseID, client: gateway.client, logger: gateway.logger)[docID] else {
                throw GatewayError.notFound("missing")
            }
            revText = winner.rev
            winnerDeleted = winner.deleted
        }
        let found = try await RevisionReader.read([(docID, revText)], withHistory: history, db: user.databaseID, client: gateway.client, logger: gateway.logger)
        guard let revision = found[0], let body = revision.body, user.read.canRead(revision.channels) else {
            throw GatewayError.notFound("missing")
        }
        if winnerDeleted { throw GatewayError.notFound("deleted") }
        return (revText, revision, body)
    }

    /// The leaves of a document the user may read, winner first: (rev, deleted).
    static func readableLeaves(gateway: Gateway, user: GatewayUser, docID: String) async throws -> [(rev: RevisionID, deleted: Bool)] {
        var leaves: [(rev: RevisionID, deleted: Bool)] = []
        let rows = try await gateway.client.query(
            "SELECT rev_id, deleted, channels FROM revisions WHERE db = \(user.databaseID) AND doc_id = \(docID) AND is_leaf AND body IS NOT NULL",
            logger: gateway.logger)
        for try await (revText, deleted, channels) in rows.decode((String, Bool, [String]).self) {
            guard user.read.canRead(channels), let rev = RevisionID(revText) else { continue }
            leaves.append((rev, deleted))
        }
        return leaves.sorted { a, b in a.rev.beats(b.rev, selfDeleted: a.deleted, otherDeleted: b.deleted) }
    }

    /// `GET /{db}/{docid}` with CouchDB's options: `rev`, `revs`, `revs_info`, `conflicts`,
    /// `deleted_conflicts`, `open_revs` (`all` or a JSON array; JSON, or multipart/mixed when
    /// the client accepts it) and `latest`. Attachments are always inline (`attachments=true`
    /// is what is served).
    static func get(gateway: Gateway, user: GatewayUser, docID: String, query: [String: String], accept: String?) async throws -> Response {
        let revs = query["revs"] == "true"
        if let openRevs = query["open_revs"] {
            return try await getOpenRevs(gateway: gateway, user: user, docID: docID, openRevs: openRevs, revs: revs,
                                         latest: query["latest"] == "true", multipart: accept?.contains("multipart/mixed") == true)
        }
        let wantInfo = query["revs_info"] == "true"
        let (rev, found, body) = try await readable(gateway: gateway, user: user, docID: docID, rev: query["rev"], history: revs || wantInfo)
        var extra: [(String, [String])] = []
        if query["conflicts"] == "true" || query["deleted_conflicts"] == "true" {
            let leaves = try await readableLeaves(gateway: gateway, user: user, docID: docID)
            let others = leaves.filter { $0.rev.description != rev }
            if query["conflicts"] == "true" {
                let live = others.filter { !$0.deleted }.map(\.rev.description)
                if !live.isEmpty { extra.append(("_conflicts", live)) }
            }
            if query["deleted_conflicts"] == "true" {
                let dead = others.filter(\.deleted).map(\.rev.description)
                if !dead.isEmpty { extra.append(("_deleted_conflicts", dead)) }
            }
        }
        var writer = JSONWriter(capacity: body.utf8.count + 256)
        let generation = RevisionID(rev)?.generation ?? 1
        let history = revs ? (start: generation, ids: found.history) : nil
        writeRevision(into: &writer, docID: docID, rev: rev, history: history, body: body)
        if wantInfo || !extra.isEmpty {
            writer.bytes.removeLast()  // the closing brace
            for (name, list) in extra {
                writer.raw(","); writer.string(name); writer.raw(":[")
                for (i, item) in list.enumerated() {
                    if i > 0 { writer.raw(",") }
                    writer.string(item)
                }
                writer.raw("]")
            }
            if wantInfo {
                writer.raw(",\"_revs_info\":[")
                for (i, digest) in found.history.enumerated() {
                    if i > 0 { writer.raw(",") }
                    writer.raw("{\"rev\":"); writer.string("\(generation - i)-\(digest)")
                    writer.raw(",\"status\":"); writer.raw(i == 0 ? "\"available\"" : "\"missing\"")
                    writer.raw("}")
                }
                writer.raw("]")
            }
            writer.raw("}")
        }
        var response = Routes.json(200, writer.bytes)
        response.headers[.eTag] = "\"\(rev)\""
        return response
    }

    /// `GET /{db}/{docid}?open_revs=all|[...]`: each asked revision (with `latest`, the
    /// readable leaves descending from it), `{"ok": doc}` or `{"missing": rev}`.
    static func getOpenRevs(gateway: Gateway, user: GatewayUser, docID: String, openRevs: String, revs: Bool, latest: Bool, multipart: Bool) async throws -> Response {
        var asked: [String]
        if openRevs == "all" {
            asked = try await readableLeaves(gateway: gateway, user: user, docID: docID).map(\.rev.description)
        } else {
            guard let parsed = try? JSONParser.parse(Array(openRevs.utf8)), let list = parsed.arrayValue else {
                throw GatewayError.badRequest("open_revs must be all or a JSON array of revision ids")
            }
            asked = []
            for element in list {
                guard let text = element.stringValue, RevisionID(text) != nil else { throw GatewayError.badRequest("open_revs lists a bad revision id") }
                asked.append(text)
            }
            guard asked.count <= BulkDocs.maximumDocuments else { throw GatewayError.tooLarge("open_revs lists too many revisions") }
            if latest {
                // Each asked revision stands for the readable leaves that descend from it.
                let leaves = try await readableLeaves(gateway: gateway, user: user, docID: docID).map(\.rev.description)
                var resolved: [String] = []
                let found = try await RevisionReader.read(leaves.map { (docID, $0) }, withHistory: true, db: user.databaseID, client: gateway.client, logger: gateway.logger)
                for rev in asked {
                    guard let id = RevisionID(rev) else { continue }
                    var matched = false
                    for (i, leaf) in leaves.enumerated() {
                        guard let leafID = RevisionID(leaf), let history = found[i]?.history else { continue }
                        let depth = leafID.generation - id.generation
                        if depth >= 0, depth < history.count, history[depth] == id.digest {
                            if !resolved.contains(leaf) { resolved.append(leaf) }
                            matched = true
                        }
                    }
                    if !matched && !resolved.contains(rev) { resolved.append(rev) }
                }
                asked = resolved
            }
        }
        let found = try await RevisionReader.read(asked.map { (docID, $0) }, withHistory: revs, db: user.databaseID, client: gateway.client, logger: gateway.logger)
        var parts: [(ok: Bool, bytes: [UInt8])] = []
        for (i, rev) in asked.enumerated() {
            var writer = JSONWriter()
            if let revision = found[i], let body = revision.body, user.read.canRead(revision.channels) {
                let history = revs ? (start: RevisionID(rev)?.generation ?? 1, ids: revision.history) : nil
                writeRevision(into: &writer, docID: docID, rev: rev, history: history, body: body)
                parts.append((true, writer.bytes))
            } else {
                writer.string(rev)
                parts.append((false, writer.bytes))
            }
        }
        if multipart {
            let boundary = randomHex(16)
            var out: [UInt8] = []
            for part in parts {
                out += Array("--\(boundary)\r\nContent-Type: application/json\(part.ok ? "" : "; error=\"true\"")\r\n\r\n".utf8)
                if part.ok { out += part.bytes } else { out += Array("{\"missing\":".utf8) + part.bytes + Array("}".utf8) }
                out += Array("\r\n".utf8)
            }
            out += Array("--\(boundary)--".utf8)
            var headers = HTTPFields()
            headers[.contentType] = "multipart/mixed; boundary=\"\(boundary)\""
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: out)))
        }
        var writer = JSONWriter()
        writer.raw("[")
        for (i, part) in parts.enumerated() {
            if i > 0 { writer.raw(",") }
            writer.raw(part.ok ? "{\"ok\":" : "{\"missing\":")
            writer.raw(part.bytes)
            writer.raw("}")
        }
        writer.raw("]")
        return Routes.json(200, writer.bytes)
    }

    /// `GET /{db}/{docid}/{name}`: the attachment's bytes with its content type.
    static func getAttachment(gateway: Gateway, user: GatewayUser, docID: String, name: String, rev: String?) async throws -> Response {
        let (revText, _, body) = try await readable(gateway: gateway, user: user, docID: docID, rev: rev, history: false)
        let parsed = try JSONParser.parse(Array(body.utf8))
        guard let entry = parsed["_attachments"]?[name], let data = entry["data"]?.stringValue, let bytes = base64Decode(data) else {
            throw GatewayError.notFound("Document is missing attachment")
        }
        var headers = HTTPFields()
        headers[.contentType] = entry["content_type"]?.stringValue ?? "application/octet-stream"
        if let digest = entry["digest"]?.stringValue { headers[.eTag] = "\"\(digest)\"" }
        headers[.init("X-Couch-Revision")!] = revText
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// `PUT /{db}/{docid}/{name}?rev=R` (the body is the attachment) and `DELETE` (no body): a
    /// new revision of the document with the attachment added, replaced or removed.
    static func changeAttachment(
        gateway: Gateway, database: String, user: GatewayUser, docID: String, name: String, rev: String?,
        data: [UInt8]?, contentType: String?
    ) async throws -> Response {
        var members: [(String, JSON)] = [("_id", .string(docID))]
        if let rev {
            let (_, _, body) = try await readable(gateway: gateway, user: user, docID: docID, rev: rev, history: false)
            guard case let .object(current) = try JSONParser.parse(Array(body.utf8)) else { throw GatewayError.serverError("a stored body is not an object") }
            members += current.filter { $0.0 != "_deleted" }
            members.append(("_rev", .string(rev)))
        } else if data == nil {
            throw GatewayError.conflict("Document update conflict. (a deletion needs rev=)")
        }
        var attachments = members.first(where: { $0.0 == "_attachments" })?.1.objectMembers ?? []
        guard data != nil || attachments.contains(where: { $0.0 == name }) else {
            throw GatewayError.notFound("Document is missing attachment")
        }
        attachments.removeAll { $0.0 == name }
        if let data {
            attachments.append((name, .object([
                ("content_type", .string(contentType ?? "application/octet-stream")),
                ("data", .string(Data(data).base64EncodedString())),
            ])))
        }
        members.removeAll { $0.0 == "_attachments" }
        if !attachments.isEmpty { members.append(("_attachments", .object(attachments))) }
        return try await saveOne(.object(members), newEdits: true, status: data == nil ? 200 : 201, gateway: gateway, database: database, user: user)
    }
}
