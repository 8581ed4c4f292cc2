import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The contents of one leaf revision of a document: its record (without tree or change
/// sequence), its body, and its attachments' bytes.
///
/// A document's winner lives in its record (keyspace 4) with its attachments in keyspace 7; every
/// other leaf that is not a deletion lives in keyspace 12 as one value (FORMAT.md §16.6):
///
///     varint n, n bytes   the revision's record (§16.2 layout, flag bit 3 clear, change
///                         sequence 0) with its body
///     attachment bytes    each attachment the record lists, in its order, back to back
struct LeafRevision: Sendable {
    var record: DocumentRecord
    var body: [UInt8]
    var attachments: [String: Attachment]

    /// A deletion's contents.
    static func tombstone(revision: UInt64, createDate: Date, lastChange: Date) -> LeafRevision {
        LeafRevision(record: DocumentRecord(isDeleted: true, revision: revision, changeSequence: 0, createDate: createDate,
                                            lastChange: lastChange, type: nil, channels: [], attachments: []),
                     body: [], attachments: [:])
    }

    /// The contents of a revision received from another replica.
    init(_ revision: ReplicatedRevision) {
        if revision.isDeleted {
            self = .tombstone(revision: revision.revisionID.generation, createDate: revision.createDate,
                              lastChange: revision.lastChange)
            return
        }
        var body: [UInt8] = []
        JSON.object(revision.fields).appendBinary(to: &body)
        let infos = revision.attachments.sorted { $0.key < $1.key }.map { name, a in
            DocumentRecord.AttachmentInfo(name: name, contentType: a.contentType, length: a.data.count,
                                          crc: a.data.withUnsafeBytes { CRC32C.checksum($0) })
        }
        self.record = DocumentRecord(isDeleted: false, revision: revision.revisionID.generation, changeSequence: 0,
                                     createDate: revision.createDate, lastChange: revision.lastChange, type: revision.type,
                                     channels: revision.channels, attachments: infos)
        self.body = body
        self.attachments = revision.attachments
    }

    init(record: DocumentRecord, body: [UInt8], attachments: [String: Attachment]) {
        self.record = record
        self.body = body
        self.attachments = attachments
    }

    /// The winner stored in `value` (a keyspace-4 record), with its attachments from `snapshot`.
    static func winner(of documentID: String, database: UInt64, value: [UInt8], snapshot: Snapshot) throws -> LeafRevision {
        let record = try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID) }
        var attachments: [String: Attachment] = [:]
        for info in record.attachments {
            guard let data = try snapshot.get(DocumentLayout.attachmentKey(database, documentID, info.name)),
                  data.count == info.length, CRC32C.checksum(data) == info.crc else {
                throw StrataError.corrupted(file: "attachment \(info.name.debugDescription) of document \(documentID.debugDescription)",
                                            offset: 0, reason: "missing, or its length or CRC does not match the document's record")
            }
            attachments[info.name] = Attachment(data: Data(data), contentType: info.contentType)
        }
        var plain = record
        plain.tree = nil
        plain.changeSequence = 0
        return LeafRevision(record: plain, body: Array(value[record.bodyOffset...]), attachments: attachments)
    }

    /// The value stored in keyspace 12.
    func encoded() -> [UInt8] {
        var recordBytes: [UInt8] = []
        record.appendHeader(to: &recordBytes)
        recordBytes.append(contentsOf: body)
        var out: [UInt8] = []
        out.reserveCapacity(recordBytes.count + 8 + record.attachments.reduce(0) { $0 + $1.length })
        Varint.append(recordBytes.count, to: &out)
        out.append(contentsOf: recordBytes)
        for info in record.attachments { out.append(contentsOf: attachments[info.name]?.data ?? Data()) }
        return out
    }

    /// Decodes a keyspace-12 value of revision `revision` of `documentID`, checking every length
    /// and CRC.
    init(decoding value: [UInt8], documentID: String, revision: RevisionID) throws {
        (record, body, attachments) = try ByteReader.read(value, file: "conflicting revision \(revision) of document \(documentID.debugDescription)") { r in
            let recordBytes = try r.lengthPrefixedBytes("record")
            let record = try DocumentRecord(decoding: recordBytes, documentID: documentID)
            guard record.tree == nil, record.revision == revision.generation else {
                throw r.corrupted(at: r.offset - recordBytes.count, "the record is not that of revision \(revision)")
            }
            var attachments: [String: Attachment] = [:]
            for info in record.attachments {
                let at = r.offset
                guard info.length <= r.remaining else { throw r.corrupted("attachment \(info.name.debugDescription) is cut short") }
                let data = Data(try r.bytes(info.length, "attachment \(info.name.debugDescription)"))
                guard data.withUnsafeBytes({ CRC32C.checksum($0) }) == info.crc else {
                    throw r.corrupted(at: at, "attachment \(info.name.debugDescription) does not match its CRC")
                }
                attachments[info.name] = Attachment(data: data, contentType: info.contentType)
            }
            try r.expectEnd("the attachments")
            return (record, Array(UnsafeRawBufferPointer(rebasing: recordBytes[record.bodyOffset...])), attachments)
        }
    }

    /// The revision as a document (fields, metadata with `revisionID`, attachments); nil for a
    /// deletion.
    func document(id: String, revision: RevisionID) throws -> Document? {
        guard !record.isDeleted else { return nil }
        let json = try body.withUnsafeBytes { try JSON(binary: $0) }
        guard case .object(let fields) = json else {
            throw StrataError.corrupted(file: "revision \(revision) of document \(id.debugDescription)", offset: 0, reason: "body is not an object")
        }
        var document = Document(id: id, fields: fields)
        document.metadata = record.metadata(id: id)
        document.metadata.revisionID = revision
        document.attachments = attachments
        return document
    }
}
