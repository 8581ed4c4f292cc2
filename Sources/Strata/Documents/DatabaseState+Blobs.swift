import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The reads behind ``Blob``: a document without its attachments' bytes, and one attachment's
/// bytes later.
extension DatabaseState {
    /// The live document `documentID` with its attachments described (in the record) but not
    /// read; nil if absent or deleted.
    func documentDescribingAttachments(id documentID: String) throws -> StoredModelDocument? {
        let snapshot = try engine.snapshot()
        guard let value = try snapshot.get(DocumentLayout.documentKey(id, documentID)) else { return nil }
        return try value.withUnsafeBytes { buffer -> StoredModelDocument? in
            let record = try DocumentRecord(decoding: buffer, documentID: documentID)
            if record.isDeleted { return nil }
            return StoredModelDocument(document: try DocumentReader.document(id: documentID, record: record, value: buffer),
                                       attachments: record.attachments)
        }
    }

    /// The bytes of attachment `name` of document `documentID` as stored now, which must still be
    /// those of `length` bytes and CRC `crc`.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if the document or the attachment is gone;
    ///   ``StrataError/conflict(_:)`` if the attachment's length or CRC differ;
    ///   ``StrataError/corrupted(file:offset:reason:)`` if the bytes do not match the record.
    func attachmentData(documentID: String, name: String, length: Int, crc: UInt32) throws -> Data {
        let what = "attachment \(name.debugDescription) of document \(documentID.debugDescription)"
        let snapshot = try engine.snapshot()
        let info = try snapshot.get(DocumentLayout.documentKey(id, documentID))?.withUnsafeBytes { buffer in
            let record = try DocumentRecord(decoding: buffer, documentID: documentID)
            return record.isDeleted ? nil : record.attachments.first { $0.name == name }
        }
        guard let info else { throw StrataError.notFound(kind: .attachment, name: name, reason: "\(what) in database \(self.name.debugDescription)") }
        guard info.length == length, info.crc == crc else {
            throw StrataError.conflict("\(what) has changed since the document was read")
        }
        guard let data = try snapshot.get(DocumentLayout.attachmentKey(id, documentID, name)) else {
            throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                        reason: "attachment \(name.debugDescription) is missing")
        }
        guard data.count == info.length, CRC32C.checksum(data) == info.crc else {
            throw StrataError.corrupted(file: what, offset: 0, reason: "length or CRC does not match the document's record")
        }
        return Data(data)
    }
}
