/// A revision as `_bulk_docs` receives it, checked and split into what the tables store
/// (PROTOCOL.md "Documents on the wire").
struct WireRevision: Sendable {
    var docID: String
    var rev: RevisionID
    /// The revision's history, newest first: `history[0] == rev`, `history[i]` has generation
    /// `rev.generation - i`. Just `[rev]` when `_revisions` is absent.
    var history: [RevisionID]
    var deleted: Bool
    /// The channels the body names (`_strata.channels`, else a top-level `channels` array).
    var channels: [String]
    /// False when the body names no channel at all (a deletion then inherits its parent's).
    var namesChannels: Bool
    /// The JSON object of the revision without `_id`, `_rev` and `_revisions`.
    var body: [UInt8]
    /// The size counted against the document limit: the revision's JSON as stored and served.
    var size: Int

    /// For a new edit (`new_edits` true, CouchDB's document API): the revision it replaces as
    /// the client named it (`_rev`), nil for a new document; the write checks it against the
    /// document's leaves in its transaction (409 when it is not one).
    var newEditParent: RevisionID? = nil
    /// True for a new edit: `rev` was made here (generation of the parent + 1, digest the MD5 of
    /// the parent, the deletion flag and the body, as CouchDB derives it from the content).
    var isNewEdit = false

    /// Checks `value` (one element of `docs`) for a new edit (`new_edits` true); throws a 400
    /// GatewayError naming what is wrong. `_revisions` is ignored, as CouchDB ignores it there;
    /// inline attachments get their `digest`, `length` and `revpos`.
    init(newEdit value: JSON) throws(GatewayError) {
        guard var members = value.objectMembers else { throw .badRequest("a document must be a JSON object") }
        guard let id = value["_id"]?.stringValue else { throw .badRequest("a document has no _id string") }
        var parent: RevisionID? = nil
        switch value["_rev"] {
        case nil, .null: break
        case let .string(text):
            guard let rev = RevisionID(text) else { throw .badRequest("document '\(id)': bad revision id '\(text)'") }
            parent = rev
        default: throw .badRequest("document '\(id)': _rev must be a string")
        }
        let generation = (parent?.generation ?? 0) + 1
        if let attachments = value["_attachments"] {
            guard let entries = attachments.objectMembers else { throw .badRequest("document '\(id)': _attachments must be an object") }
            var filled: [(String, JSON)] = []
            for (name, entry) in entries {
                if entry["stub"] == .bool(true) {
                    throw .badRequest("document '\(id)': attachment '\(name)' is a stub; this gateway stores attachments inline: send its data")
                }
                guard let data = entry["data"]?.stringValue, let bytes = base64Decode(data) else {
                    throw .badRequest("document '\(id)': attachment '\(name)' has no base64 data")
                }
                let contentType = entry["content_type"]?.stringValue ?? "application/octet-stream"
                filled.append((name, attachmentEntry(contentType: contentType, bytes: bytes, base64: data, revpos: entry["revpos"]?.integerValue ?? generation)))
            }
            members = members.map { $0.0 == "_attachments" ? ("_attachments", .object(filled)) : $0 }
        }
        members = members.filter { $0.0 != "_rev" && $0.0 != "_revisions" }
        // The revision id is filled below from the body; a placeholder lets init(_:) check
        // the rest exactly as for a replicated revision.
        members = members.filter { $0.0 != "_id" }
        members.insert(("_id", .string(id)), at: 0)
        members.insert(("_rev", .string("\(generation)-0")), at: 1)
        try self.init(.object(members))
        var digestInput = Array((parent?.description ?? "").utf8)
        digestInput.append(deleted ? 1 : 0)
        digestInput.append(contentsOf: body)
        rev = RevisionID(generation: generation, digest: md5Hex(digestInput))
        history = parent.map { [rev, $0] } ?? [rev]
        newEditParent = parent
        isNewEdit = true
    }

    /// Checks `value` (one element of `docs`); throws a 400 GatewayError naming what is wrong.
    init(_ value: JSON) throws(GatewayError) {
        guard let members = value.objectMembers else { throw .badRequest("a document must be a JSON object") }
        guard let id = value["_id"]?.stringValue, !id.isEmpty else { throw .badRequest("a document has no _id string") }
        guard !id.hasPrefix("_local/") else { throw .badRequest("document '\(id)': local documents are written with PUT /{db}/_local/{id}") }
        try DocumentIDs.check(id)
        docID = id
        guard let revText = value["_rev"]?.stringValue else { throw .badRequest("document '\(id)' has no _rev") }
        guard let rev = RevisionID(revText) else { throw .badRequest("document '\(id)': bad revision id '\(revText)'") }
        self.rev = rev
        history = [rev]
        if let revisions = value["_revisions"] {
            guard let start = revisions["start"]?.integerValue, let ids = revisions["ids"]?.arrayValue else {
                throw .badRequest("document '\(id)': _revisions needs an integer start and an array ids")
            }
            guard start == rev.generation, ids.first?.stringValue == rev.digest else {
                throw .badRequest("document '\(id)': _revisions does not start with _rev \(revText)")
            }
            guard ids.count <= start else {
                throw .badRequest("document '\(id)': _revisions has \(ids.count) ids for generation \(start)")
            }
            // A longer history is stemmed to the newest `maximumHistory` revisions, as CouchDB
            // stems to its revs_limit: what one revision costs is bounded.
            for (i, element) in ids.prefix(RevisionReader.maximumHistory).enumerated().dropFirst() {
                guard let digest = element.stringValue, RevisionID.isValidDigest(digest) else {
                    throw .badRequest("document '\(id)': _revisions.ids[\(i)] is not a revision digest")
                }
                history.append(RevisionID(generation: start - i, digest: digest))
            }
        }
        switch value["_deleted"] {
        case nil, .null: deleted = false
        case let .bool(flag): deleted = flag
        default: throw .badRequest("document '\(id)': _deleted must be a boolean")
        }
        var channels: [String]? = nil
        if let strata = value["_strata"] {
            guard case .object = strata else { throw .badRequest("document '\(id)': _strata must be an object") }
            if let list = strata["channels"] {
                guard let array = list.arrayValue else { throw .badRequest("document '\(id)': _strata.channels must be an array of strings") }
                channels = try array.map { (element: JSON) throws(GatewayError) -> String in
                    guard let name = element.stringValue else { throw .badRequest("document '\(id)': _strata.channels must be an array of strings") }
                    return name
                }
            }
        } else if let list = value["channels"]?.arrayValue {
            // Another client's revision: Sync Gateway's default sync function reads `channels`.
            channels = list.compactMap(\.stringValue)
        }
        if let channels, channels.contains(where: { $0.utf8.contains(0) }) {
            throw .badRequest("document '\(id)': a channel name must not contain U+0000")
        }
        namesChannels = channels != nil && !(channels ?? []).isEmpty
        self.channels = Array(Set(channels ?? [])).sorted()
        var writer = JSONWriter(capacity: 512)
        writer.value(.object(members.filter { $0.0 != "_id" && $0.0 != "_rev" && $0.0 != "_revisions" }))
        body = writer.bytes
        size = body.count + id.utf8.count + revText.utf8.count + history.count * (rev.digest.utf8.count + 3) + 64
    }
}

/// Writes a revision as served: `_id`, `_rev`, optionally `_revisions`, then the stored body's
/// members (spliced from its JSON text without parsing it again).
func writeRevision(
    into writer: inout JSONWriter, docID: String, rev: String, history: (start: Int, ids: [String])?, body: String
) {
    writer.raw("{\"_id\":")
    writer.string(docID)
    writer.raw(",\"_rev\":")
    writer.string(rev)
    if let history {
        writer.raw(",\"_revisions\":{\"start\":")
        writer.integer(history.start)
        writer.raw(",\"ids\":[")
        for (i, id) in history.ids.enumerated() {
            if i > 0 { writer.raw(",") }
            writer.string(id)
        }
        writer.raw("]}")
    }
    // The stored body is a JSON object written by JSONWriter: "{}" or "{...}".
    let utf8 = body.utf8
    if utf8.count > 2 {
        writer.raw(",")
        writer.raw(utf8.dropFirst())
    } else {
        writer.raw("}")
    }
}

import Crypto
import Foundation

/// The 32 lowercase hex digits of the MD5 of `bytes`.
func md5Hex(_ bytes: [UInt8]) -> String {
    let hex = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(32)
    for byte in Insecure.MD5.hash(data: bytes) {
        out.append(hex[Int(byte >> 4)])
        out.append(hex[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The bytes of standard base64 text, nil when it is not base64.
func base64Decode(_ text: String) -> [UInt8]? {
    Data(base64Encoded: text, options: .ignoreUnknownCharacters).map { Array($0) }
}

/// An attachment as stored and served (PROTOCOL.md "Documents on the wire"): always inline.
func attachmentEntry(contentType: String, bytes: [UInt8], base64: String, revpos: Int) -> JSON {
    let digest = "md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString()
    return .object([
        ("content_type", .string(contentType)), ("digest", .string(digest)), ("length", .number(String(bytes.count))),
        ("revpos", .number(String(revpos))), ("data", .string(base64)),
    ])
}
