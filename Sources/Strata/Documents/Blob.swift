import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Bytes that a `Codable` document model holds as a property, stored as one of its document's
/// attachments (Couchbase Lite's `Blob`): the fields never hold the bytes, and reading the model
/// does not read them; ``data()`` does, when it is called.
///
/// ```swift
/// struct Invoice: Codable {
///     var number: String
///     var scan: Blob
/// }
/// try db.save(Invoice(number: "A-1", scan: Blob(data: pdfBytes, contentType: "application/pdf")), id: "A-1")
///
/// let invoice = try db.document(id: "A-1", as: Invoice.self)!   // reads the fields only
/// invoice.scan.length                                              // known without the bytes
/// let pdf = try invoice.scan.data()                                // reads the attachment now
/// ```
///
/// A blob is the attachment named by its property's coding path: `scan` above; for a nested
/// property, the keys joined by `/` (`pages/cover`, with `~` written `~0` and `/` written `~1`
/// inside a key, as in a JSON Pointer). Seen as a ``Document``, the document has no `scan` field
/// and an attachment `"scan"`, which replicates with the document as every attachment does. A
/// blob may sit in a property at any depth of keyed containers (structs, dictionaries with string
/// keys), not in an array. Saving a model replaces the document's attachments with its blobs; a
/// blob read from a store is read when the model is saved again.
///
/// It is a programmer error to encode a blob other than in a model saved by
/// ``DocumentDatabase/save(_:id:)`` or ``TransactionDocuments/save(_:id:)``, or to decode one other
/// than with ``DocumentDatabase/document(id:as:)``: either throws.
public struct Blob: Sendable {
    /// The MIME type, e.g. `application/pdf`.
    public let contentType: String
    /// The number of bytes.
    public let length: Int
    /// A digest of the bytes, `crc32c-` and eight hexadecimal digits: the checksum the document's
    /// record keeps, known without reading the bytes. Equal bytes have equal digests; it detects
    /// accidental change, it is not a cryptographic hash.
    public let digest: String

    let source: Source

    /// Where the bytes are.
    enum Source: Sendable {
        /// Given to ``Blob/init(data:contentType:)``: saved with the model.
        case bytes(Data)
        /// An attachment of a stored document, read by ``Blob/data()``.
        case stored(database: DocumentDatabase, documentID: String, name: String, crc: UInt32)
    }

    /// A blob of `data`, stored when the model that holds it is saved.
    public init(data: Data, contentType: String = "application/octet-stream") {
        let crc = data.withUnsafeBytes { CRC32C.checksum($0) }
        self.init(contentType: contentType, length: data.count, crc: crc, source: .bytes(data))
    }

    /// The attachment `info` of document `documentID` in `database`, bytes not read.
    init(stored info: DocumentRecord.AttachmentInfo, documentID: String, database: DocumentDatabase) {
        self.init(contentType: info.contentType, length: info.length, crc: info.crc,
                  source: .stored(database: database, documentID: documentID, name: info.name, crc: info.crc))
    }

    private init(contentType: String, length: Int, crc: UInt32, source: Source) {
        self.contentType = contentType
        self.length = length
        let hex = String(crc, radix: 16)
        self.digest = "crc32c-" + String(repeating: "0", count: 8 - hex.count) + hex
        self.source = source
    }

    /// The bytes: those given, or, for a blob read with its model, the attachment's bytes read
    /// from the store now. Needs ``Permission/readTopic`` when the model was read through a
    /// session.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if the document or its attachment is gone;
    ///   ``StrataError/conflict(_:)`` if the attachment has other bytes than when the model was
    ///   read; ``StrataError/closed`` after the store closed.
    public func data() throws -> Data {
        switch source {
        case .bytes(let data):
            return data
        case .stored(let database, let documentID, let name, let crc):
            return try database.attachmentData(documentID: documentID, name: name, length: length, crc: crc)
        }
    }

    /// The `async` twin of ``data()``: reads a stored blob's bytes on the store's executor.
    ///
    /// - Throws: as ``data()``; `CancellationError` if the task was cancelled before the
    ///   read started.
    public func data() async throws -> Data {
        switch source {
        case .bytes(let data):
            return data
        case .stored(let database, _, _, _):
            return try await database.state.executor.run { try self.data() }
        }
    }
}

extension Blob: Hashable {
    /// Blobs are equal when their content types, lengths and digests are.
    public static func == (a: Blob, b: Blob) -> Bool {
        a.contentType == b.contentType && a.length == b.length && a.digest == b.digest
    }

    /// Hashes the content type, length and digest.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(contentType)
        hasher.combine(length)
        hasher.combine(digest)
    }
}

extension Blob: Codable {
    /// Registers the blob as an attachment of the document being saved (see ``Blob``).
    ///
    /// - Throws: `EncodingError.invalidValue` outside a document save, or in an array.
    public func encode(to encoder: any Encoder) throws {
        guard let blobs = encoder.userInfo[BlobEncoding.key] as? BlobEncoding else {
            throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath, debugDescription:
                "a Blob is stored only as a property of a document model saved by a DocumentDatabase"))
        }
        try blobs.add(self, at: encoder.codingPath)
        var container = encoder.singleValueContainer()
        try container.encode(JSON.object([:]))
    }

    /// The attachment of the document being read that the property's coding path names, its
    /// bytes not read.
    ///
    /// - Throws: `DecodingError` outside a document read, or when the document has no such
    ///   attachment.
    public init(from decoder: any Decoder) throws {
        guard let blobs = decoder.userInfo[BlobDecoding.key] as? BlobDecoding else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "a Blob is read only as a property of a document model read from a DocumentDatabase"))
        }
        self = try blobs.blob(at: decoder.codingPath)
    }
}
