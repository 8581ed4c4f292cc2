import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The wire form of a revision (`Gateway/PROTOCOL.md`, "Documents on the wire"): a JSON object
/// with `_id`, `_rev`, `_revisions`, `_deleted`, `_attachments` (inline base64 with `md5-`
/// digests), `_strata` (channels, type, dates) and the document's fields.
///
/// ```swift
/// let json = WireRevision.json(of: revision)             // to send in _bulk_docs
/// let back = try WireRevision.revision(from: json)       // from _bulk_get
/// ```
enum WireRevision {
    /// The wire JSON object of `revision`. Fields whose names start with `_` have no place on the
    /// wire (such members are the protocol's) and are left out.
    static func json(of revision: ReplicatedRevision) -> JSON {
        var members: [String: JSON] = [:]
        members.reserveCapacity(revision.fields.count + 6)
        if !revision.isDeleted {
            for (name, value) in revision.fields where !name.hasPrefix("_") { members[name] = value }
        }
        members["_id"] = .string(revision.documentID)
        members["_rev"] = .string(revision.revisionID.description)
        members["_revisions"] = .object([
            "start": .int(Int64(clamping: revision.revisionID.generation)),
            "ids": .array(revision.history.map { .string($0) }),
        ])
        if revision.isDeleted { members["_deleted"] = .bool(true) }
        var strata: [String: JSON] = [
            "channels": .array(revision.channels.map { .string($0) }),
            "created": .double(revision.createDate.timeIntervalSinceReferenceDate),
            "changed": .double(revision.lastChange.timeIntervalSinceReferenceDate),
        ]
        if let type = revision.type { strata["type"] = .string(type) }
        members["_strata"] = .object(strata)
        if !revision.isDeleted, !revision.attachments.isEmpty {
            var attachments: [String: JSON] = [:]
            for (name, attachment) in revision.attachments {
                attachments[name] = .object([
                    "content_type": .string(attachment.contentType),
                    "digest": .string(attachmentDigest(attachment.data)),
                    "length": .int(Int64(attachment.length)),
                    "revpos": .int(Int64(clamping: revision.revisionID.generation)),
                    "data": .string(attachment.data.base64EncodedString()),
                ])
            }
            members["_attachments"] = .object(attachments)
        }
        return .object(members)
    }

    /// The revision a wire JSON object describes. A revision without `_strata` takes its channels
    /// from a top-level `channels` array of strings (kept as a field too), has no type, and is
    /// dated `now`.
    ///
    /// - Throws: ``StrataError/network(_:)`` naming the document and what is malformed: a missing
    ///   or bad `_id` or `_rev`, a `_revisions` that does not match `_rev`, an attachment without
    ///   data or whose bytes do not match its length or digest.
    static func revision(from json: JSON, now: Date = Date()) throws -> ReplicatedRevision {
        guard case .object(let members) = json else { throw malformed("?", "a revision is not a JSON object") }
        guard let id = members["_id"]?.stringValue, !id.isEmpty else { throw malformed("?", "_id is missing or not a string") }
        guard let revText = members["_rev"]?.stringValue, let rev = RevisionID(revText) else {
            throw malformed(id, "_rev is missing or malformed")
        }
        var history = [rev.digest]
        if let revisions = members["_revisions"] {
            guard let start = revisions["start"]?.int64Value, start == Int64(clamping: rev.generation),
                  case .array(let ids)? = revisions["ids"], !ids.isEmpty, ids.count <= Int(clamping: rev.generation) else {
                throw malformed(id, "_revisions does not match _rev \(revText)")
            }
            history = []
            history.reserveCapacity(ids.count)
            for element in ids {
                guard let digest = element.stringValue, RevisionID.isValidDigest(digest) else {
                    throw malformed(id, "_revisions holds a bad digest")
                }
                history.append(digest)
            }
            guard history[0] == rev.digest else { throw malformed(id, "_revisions.ids[0] is not the digest of _rev \(revText)") }
        }
        let isDeleted = members["_deleted"]?.boolValue ?? false

        var fields: [String: JSON] = [:]
        if !isDeleted {
            fields.reserveCapacity(members.count)
            for (name, value) in members where !name.hasPrefix("_") { fields[name] = value }
        }

        var channels: [String] = []
        var type: String?
        var created = now
        var changed = now
        if let strata = members["_strata"] {
            guard case .object = strata else { throw malformed(id, "_strata is not an object") }
            if let list = strata["channels"] { channels = try strings(list, id: id, what: "_strata.channels") }
            if let value = strata["type"], value != .null {
                guard let text = value.stringValue else { throw malformed(id, "_strata.type is not a string") }
                type = text
            }
            if let value = strata["created"] {
                guard let seconds = value.doubleValue, seconds.isFinite else { throw malformed(id, "_strata.created is not a number") }
                created = Date(timeIntervalSinceReferenceDate: seconds)
            }
            if let value = strata["changed"] {
                guard let seconds = value.doubleValue, seconds.isFinite else { throw malformed(id, "_strata.changed is not a number") }
                changed = Date(timeIntervalSinceReferenceDate: seconds)
            }
        } else if let list = members["channels"], case .array = list {
            channels = (try? strings(list, id: id, what: "channels")) ?? []
        }

        var attachments: [String: Attachment] = [:]
        if !isDeleted, let value = members["_attachments"] {
            guard case .object(let entries) = value else { throw malformed(id, "_attachments is not an object") }
            for (name, entry) in entries {
                guard let base64 = entry["data"]?.stringValue, let data = Data(base64Encoded: base64) else {
                    throw malformed(id, "attachment \(name.debugDescription) has no inline base64 data")
                }
                if let length = entry["length"]?.int64Value, length != Int64(data.count) {
                    throw malformed(id, "attachment \(name.debugDescription) has \(data.count) bytes, not its length \(length)")
                }
                if let digest = entry["digest"]?.stringValue, digest.hasPrefix("md5-"),
                   digest != attachmentDigest(data) {
                    throw malformed(id, "attachment \(name.debugDescription) does not match its digest \(digest)")
                }
                let contentType = entry["content_type"]?.stringValue ?? "application/octet-stream"
                attachments[name] = Attachment(data: data, contentType: contentType)
            }
        }
        return ReplicatedRevision(documentID: id, revisionID: rev, history: history, isDeleted: isDeleted,
                                  fields: fields, type: type, channels: channels, createDate: created, lastChange: changed,
                                  attachments: attachments)
    }

    /// The winning revision as a ``Document`` (what a client filter judges).
    static func document(of revision: ReplicatedRevision) -> Document {
        var document = Document(id: revision.documentID, fields: revision.fields)
        document.metadata.type = revision.type
        document.metadata.channels = revision.channels
        document.metadata.createDate = revision.createDate
        document.metadata.lastChange = revision.lastChange
        document.metadata.revision = revision.revisionID.generation
        document.metadata.revisionID = revision.revisionID
        document.attachments = revision.attachments
        return document
    }

    /// The wire form of an attachment digest: `"md5-"` and the base64 of the MD5 of the bytes.
    ///
    /// ```swift
    /// WireRevision.attachmentDigest(Data("abc".utf8))   // "md5-kAFQmDzST7DWlj99KOF/cg=="
    /// ```
    static func attachmentDigest(_ data: Data) -> String {
        "md5-" + Data(MD5.digest(data)).base64EncodedString()
    }

    private static func strings(_ value: JSON, id: String, what: String) throws -> [String] {
        guard case .array(let elements) = value else { throw malformed(id, "\(what) is not an array") }
        return try elements.map {
            guard let text = $0.stringValue else { throw malformed(id, "\(what) holds a non-string") }
            return text
        }
    }

    private static func malformed(_ id: String, _ reason: String) -> StrataError {
        StrataError.network("malformed revision of document \(id.debugDescription) from the gateway: \(reason)")
    }
}
