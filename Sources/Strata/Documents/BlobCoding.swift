import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The attachment name of a ``Blob`` property: the keys of its coding path, each with `~` written
/// `~0` and `/` written `~1`, joined by `/` (a JSON Pointer without its leading `/`).
enum BlobPath {
    /// The attachment name of the property at `codingPath`; nil for a path through an array
    /// element or a `super` encoder, or an empty one.
    static func name(_ codingPath: [any CodingKey]) -> String? {
        guard !codingPath.isEmpty, !codingPath.contains(where: { $0 is JSONIndexKey }) else { return nil }
        return codingPath.map {
            $0.stringValue.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
        }.joined(separator: "/")
    }

    /// The keys an attachment name stands for.
    static func keys(_ name: String) -> [String] {
        name.split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }

    /// `fields` without the member at `keys` (nested objects stay, empty or not).
    static func remove(_ keys: ArraySlice<String>, from fields: inout [String: JSON]) {
        guard let key = keys.first else { return }
        if keys.count == 1 {
            fields[key] = nil
        } else if case .object(var members) = fields[key] {
            remove(keys.dropFirst(), from: &members)
            fields[key] = .object(members)
        }
    }

    /// `fields` with a placeholder at `keys` where that member is absent and its parent object
    /// exists, so that a decoder meets the property and asks ``BlobDecoding`` for it.
    static func insertPlaceholder(_ keys: ArraySlice<String>, into fields: inout [String: JSON]) {
        guard let key = keys.first else { return }
        if keys.count == 1 {
            if fields[key] == nil { fields[key] = .object([:]) }
        } else if case .object(var members) = fields[key] {
            insertPlaceholder(keys.dropFirst(), into: &members)
            fields[key] = .object(members)
        }
    }
}

/// Collects the ``Blob``s of a value while it is encoded as a document: each blob's property
/// becomes an attachment of that name, and leaves the fields.
final class BlobEncoding {
    static let key = CodingUserInfoKey(rawValue: "strata.blobEncoding")!

    /// The blobs met, by attachment name.
    private(set) var blobs: [String: Blob] = [:]

    var userInfo: [CodingUserInfoKey: Any] { [Self.key: self] }

    func add(_ blob: Blob, at codingPath: [any CodingKey]) throws {
        guard let name = BlobPath.name(codingPath) else {
            throw EncodingError.invalidValue(blob, .init(codingPath: codingPath, debugDescription:
                "a Blob must be a property of a keyed container (a struct or a dictionary), not an array element or the document itself"))
        }
        blobs[name] = blob
    }

    /// `fields` without the blobs' placeholders, with the blobs given as bytes as attachments,
    /// and `value`'s type and channels if it is a ``DocumentModel``.
    func document(id: String, fields: [String: JSON], of value: some Encodable) -> EncodedDocument {
        var fields = fields
        var document = Document(id: id)
        var stored: [String: Blob] = [:]
        for (name, blob) in blobs {
            BlobPath.remove(BlobPath.keys(name)[...], from: &fields)
            switch blob.source {
            case .bytes(let data): document.attachments[name] = Attachment(data: data, contentType: blob.contentType)
            case .stored: stored[name] = blob
            }
        }
        document.fields = fields
        if let model = value as? any DocumentModel {
            document.metadata.type = type(of: model).documentType
            document.metadata.channels = model.documentChannels
        }
        return EncodedDocument(document: document, storedBlobs: stored)
    }
}

/// A value encoded as a document, but for the bytes of the blobs it read from a store.
struct EncodedDocument: Sendable {
    var document: Document
    /// Blobs of a stored document, by attachment name: ``loaded()`` reads their bytes.
    var storedBlobs: [String: Blob]

    /// The document with every blob's bytes.
    ///
    /// - Throws: as ``Blob/data()``.
    func loaded() throws -> Document {
        var document = document
        for (name, blob) in storedBlobs {
            document.attachments[name] = Attachment(data: try blob.data(), contentType: blob.contentType)
        }
        return document
    }
}

/// What a ``Blob`` being decoded finds in its decoder's `userInfo`: the attachments of the
/// document being read, without their bytes.
struct BlobDecoding {
    static let key = CodingUserInfoKey(rawValue: "strata.blobDecoding")!

    let database: DocumentDatabase
    let documentID: String
    let attachments: [String: DocumentRecord.AttachmentInfo]

    var userInfo: [CodingUserInfoKey: Any] { [Self.key: self] }

    func blob(at codingPath: [any CodingKey]) throws -> Blob {
        guard let name = BlobPath.name(codingPath), let info = attachments[name] else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription:
                "document \(documentID.debugDescription) has no attachment for this Blob property"))
        }
        return Blob(stored: info, documentID: documentID, database: database)
    }
}

/// A stored document read for decoding: fields and metadata, and its attachments described but
/// not read.
struct StoredModelDocument: Sendable {
    var document: Document
    var attachments: [DocumentRecord.AttachmentInfo]
}
