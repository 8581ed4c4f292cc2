import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a database keeps about a document besides its fields.
///
/// `id`, `createDate`, `lastChange` and `revision` are set by the database when the document is
/// saved; `type` and `channels` are the caller's, stored with the document.
///
/// ```swift
/// var invoice: Document = ["InvoiceNumber": "A-1", "TotalCost": 1200]
/// invoice.metadata.type = "invoice"
/// invoice.metadata.channels = ["billing"]
/// let saved = try db.save(invoice)
/// saved.metadata.revision      // 1
/// ```
public struct DocumentMetadata: Sendable, Hashable {
    /// The document's id, unique in its database. Empty for a document that was created without
    /// one and not saved yet: the database then assigns one from
    /// ``StoreOptions/documentIDFactory``.
    public internal(set) var id: String
    /// When the document was first saved (kept by every later save). Before the first save, the
    /// reference date (2001-01-01).
    public internal(set) var createDate: Date
    /// When the document was last saved. Before the first save, the reference date.
    public internal(set) var lastChange: Date
    /// The generation of the document's (winning) revision: 1 after the first save, one more
    /// after each later save or deletion on its branch; 0 before the first save. A document
    /// deleted and saved again continues from the deletion's revision, so a revision of an id
    /// never repeats. Revisions received by replication keep the generation they were made with.
    public internal(set) var revision: UInt64
    /// The CouchDB revision id of this revision (its ``RevisionID/generation`` is ``revision``):
    /// what replication compares, and what ``ConcurrencyControl/failOnConflict`` checks. Nil
    /// before the first save.
    ///
    /// ```swift
    /// let saved = try db.save(invoice)
    /// saved.metadata.revisionID?.description   // "1-9a0c…"
    /// ```
    public internal(set) var revisionID: RevisionID?
    /// The kind of the document (PredixSDK's `type`), if the application gives one.
    public var type: String?
    /// The channels the document belongs to (for sync), in the order given.
    public var channels: [String]

    /// Metadata of a document not saved yet.
    init(id: String) {
        self.id = id
        self.createDate = Date(timeIntervalSinceReferenceDate: 0)
        self.lastChange = Date(timeIntervalSinceReferenceDate: 0)
        self.revision = 0
        self.revisionID = nil
        self.type = nil
        self.channels = []
    }
}
