import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A binary attachment of a document: bytes and their MIME content type.
///
/// Attachments are stored with their document, atomically with it, but apart from it on disk, so
/// that queries and index maintenance never read their bytes.
///
/// ```swift
/// var doc = Document(id: "invoice-1")
/// doc.attachments["scan.pdf"] = Attachment(data: pdfBytes, contentType: "application/pdf")
/// try db.save(doc)
/// ```
public struct Attachment: Sendable, Hashable {
    /// The bytes.
    public var data: Data
    /// The MIME type, e.g. `image/png`.
    public var contentType: String

    /// An attachment of `data` with MIME type `contentType`.
    public init(data: Data, contentType: String) {
        self.data = data
        self.contentType = contentType
    }

    /// The number of bytes.
    public var length: Int { data.count }
}
