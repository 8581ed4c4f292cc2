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

    /// Checks `value` (one element of `docs`); throws a 400 GatewayError naming what is wrong.
    init(_ value: JSON) throws(GatewayError) {
        guard let members = value.objectMembers else { throw .badRequest("a document must be a JSON object") }
        guard let id = value["_id"]?.stringValue, !id.isEmpty else { throw .badRequest("a document has no _id string") }
        guard !id.hasPrefix("_local/") else { throw .badRequest("document '\(id)': local documents are written with PUT /{db}/_local/{id}") }
        guard id.utf8.count <= 1024 else { throw .badRequest("document id longer than 1024 bytes") }
        guard !id.utf8.contains(0) else { throw .badRequest("a document id must not contain U+0000") }
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
            for (i, element) in ids.enumerated().dropFirst() {
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
