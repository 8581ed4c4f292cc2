import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The reads of `Codable` models with ``Blob`` properties (see ``DocumentDatabase/document(id:as:)``).
extension DocumentDatabase {
    /// The document `id` for decoding, its attachments described but not read; nil if none.
    func storedModel(id: String) throws -> StoredModelDocument? {
        try access?.require(.readTopic, state.name)
        return try state.documentDescribingAttachments(id: id)
    }

    /// `stored` decoded as `type`: its fields, and, for each ``Blob`` property, the attachment its
    /// coding path names, bytes not read.
    func decode<T: Decodable>(_ stored: StoredModelDocument, as type: T.Type) throws -> T {
        var fields = stored.document.fields
        var attachments: [String: DocumentRecord.AttachmentInfo] = [:]
        for info in stored.attachments {
            attachments[info.name] = info
            BlobPath.insertPlaceholder(BlobPath.keys(info.name)[...], into: &fields)
        }
        let blobs = BlobDecoding(database: self, documentID: stored.document.metadata.id, attachments: attachments)
        return try JSONValueDecoder(userInfo: blobs.userInfo).decode(type, from: .object(fields))
    }

    /// The bytes of a ``Blob`` read with its model (see ``Blob/data()``).
    func attachmentData(documentID: String, name: String, length: Int, crc: UInt32) throws -> Data {
        try access?.require(.readTopic, state.name)
        return try state.attachmentData(documentID: documentID, name: name, length: length, crc: crc)
    }
}
