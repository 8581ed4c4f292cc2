/// A `Codable` type whose values are documents with a type and channels, so that they take part
/// in channel-based replication as ``Document``s do.
///
/// ``DocumentDatabase/save(_:id:)`` stores a model's encoding as the document's fields, its
/// ``Blob`` properties as attachments, ``documentType`` as ``DocumentMetadata/type`` and
/// ``documentChannels`` as ``DocumentMetadata/channels``:
///
/// ```swift
/// struct Invoice: DocumentModel {
///     static let documentType: String? = "invoice"
///     var number: String
///     var region: String
///     var scan: Blob
///     var documentChannels: [String] { ["invoices-\(region)"] }
/// }
/// try db.save(invoice, id: invoice.number)     // type "invoice", channels ["invoices-east"]
/// ```
///
/// Both are computed, not stored in the fields (a stored property of the same name would be a
/// field too). A `Codable` value that is not a `DocumentModel` is saved with no type and no
/// channels.
public protocol DocumentModel: Codable {
    /// The ``DocumentMetadata/type`` of every document of this model; nil (the default) for none.
    static var documentType: String? { get }
    /// The ``DocumentMetadata/channels`` of this value's document; empty by default.
    var documentChannels: [String] { get }
}

extension DocumentModel {
    /// No type.
    public static var documentType: String? { nil }
    /// No channels.
    public var documentChannels: [String] { [] }
}
