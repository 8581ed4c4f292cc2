@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How Strata makes the digest of a new revision (FORMAT.md §16.2): the MD5, as 32 lowercase hex
/// digits, of the parent's revision id, the deletion flag, the body and the metadata. Like
/// CouchDB's, the same change to the same revision gives the same revision id on every replica.
enum RevisionDigest {
    /// MD5 of `parent ‖ 0x00 ‖ u8 deleted ‖ varint n, body ‖ type ‖ channels ‖ attachments`
    /// (strings length-prefixed; attachments as name, content type, length, CRC32C).
    static func make(parent: RevisionID?, isDeleted: Bool, body: [UInt8], type: String?, channels: [String],
                     attachments: [DocumentRecord.AttachmentInfo]) -> String {
        var md5 = MD5()
        var input: [UInt8] = []
        input.reserveCapacity(64)
        input.append(contentsOf: (parent?.description ?? "").utf8)
        input.append(0)
        input.append(isDeleted ? 1 : 0)
        Varint.append(body.count, to: &input)
        md5.update(input)
        md5.update(body)
        input.removeAll(keepingCapacity: true)
        if let type {
            input.append(1)
            DocumentLayout.appendString(type, to: &input)
        } else {
            input.append(0)
        }
        Varint.append(channels.count, to: &input)
        for channel in channels { DocumentLayout.appendString(channel, to: &input) }
        Varint.append(attachments.count, to: &input)
        for a in attachments { a.append(to: &input) }
        md5.update(input)
        return md5.finalize().hexString
    }

    /// The revision id `generation-digest`; throws when the generation overflowed (a record
    /// claiming 2⁶⁴ − 1 saves).
    static func revision(_ generation: UInt64, _ digest: String) throws -> RevisionID {
        guard let id = RevisionID(generation: generation, digest: digest) else {
            throw StrataError.invalidArgument(argument: "revision", reason: "a document cannot have more than \(UInt64.max - 1) revisions")
        }
        return id
    }
}
