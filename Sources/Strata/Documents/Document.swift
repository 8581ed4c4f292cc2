import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A document: a JSON object's fields, with metadata and attachments.
///
/// A value type: changing a `Document` changes nothing in the database until it is saved.
///
/// A document read from a database keeps its fields as they are stored: reading one field
/// (`doc["TotalCost"]`) decodes only that field, and ``fields`` is built on first use. Reads of one
/// document from several tasks are safe, as for any `Sendable` value.
///
/// ```swift
/// var invoice: Document = ["InvoiceNumber": "A-1", "TotalCost": 1200]
/// invoice["Paid"] = false
/// let saved = try db.save(invoice)            // gets an id, revision 1
/// let again = try db.document(id: saved.metadata.id)
/// again?["TotalCost"]                           // .int(1200)
/// ```
public struct Document: Sendable, Hashable {
    /// The fields: a dictionary, or the stored bytes of a document read from a database.
    private enum Fields: Sendable {
        case built([String: JSON])
        case stored(StoredFields)
    }

    private var storage: Fields

    /// The fields (the members of the document's JSON object).
    public var fields: [String: JSON] {
        get {
            switch storage {
            case .built(let fields): return fields
            case .stored(let stored): return stored.fields
            }
        }
        set { storage = .built(newValue) }
        _modify {
            var fields = self.fields
            storage = .built([:])   // so that `fields` is the only reference, changed in place
            defer { storage = .built(fields) }
            yield &fields
        }
    }
    /// Id, dates, revision, type and channels.
    public var metadata: DocumentMetadata
    /// The attachments by name.
    public var attachments: [String: Attachment]

    /// An empty document with the given id.
    public init(id: String) {
        self.storage = .built([:])
        self.metadata = DocumentMetadata(id: id)
        self.attachments = [:]
    }

    /// A document of `fields` without an id: saving it assigns one from
    /// ``StoreOptions/documentIDFactory``.
    public init(_ fields: [String: JSON]) {
        self.storage = .built(fields)
        self.metadata = DocumentMetadata(id: "")
        self.attachments = [:]
    }

    /// A document of `fields` with the given id.
    public init(id: String, fields: [String: JSON]) {
        self.storage = .built(fields)
        self.metadata = DocumentMetadata(id: id)
        self.attachments = [:]
    }

    /// A document (without an id) whose fields are those of a JSON object in UTF-8 text.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if the text is not valid JSON or not an
    ///   object (object keys are always strings in valid JSON text).
    public init(json: Data) throws {
        try self.init(parsed: try JSON(parsing: json))
    }

    /// A document (without an id) whose fields are those of a JSON object in text.
    ///
    /// ```swift
    /// let doc = try Document(json: #"{"InvoiceNumber": "A-1", "TotalCost": 1200}"#)
    /// ```
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if the text is not valid JSON or not an object.
    public init(json: String) throws {
        try self.init(parsed: try JSON(parsing: json))
    }

    private init(parsed: JSON) throws {
        guard case .object(let members) = parsed else {
            throw StrataError.invalidArgument(argument: "json", reason: "document JSON text must be an object, not \(parsed.documentsKindName)")
        }
        self.init(members)
    }

    /// The fields as compact JSON text (an object, members sorted by key); metadata and
    /// attachments are not included.
    public func jsonData() -> Data {
        JSON.object(fields).jsonData(sortedKeys: true)
    }

    /// The fields as a JSON object.
    public var json: JSON { .object(fields) }

    /// The field named `key`; setting nil removes it.
    public subscript(key: String) -> JSON? {
        get {
            switch storage {
            case .built(let fields): return fields[key]
            case .stored(let stored): return stored[key]
            }
        }
        set { fields[key] = newValue }
    }

    /// Documents are equal when their fields, metadata and attachments are (however the fields
    /// are held).
    public static func == (a: Document, b: Document) -> Bool {
        a.metadata == b.metadata && a.attachments == b.attachments && a.fields == b.fields
    }

    /// Hashes the fields, metadata and attachments.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields)
        hasher.combine(metadata)
        hasher.combine(attachments)
    }

    /// A document read from a database: `stored` holds its fields.
    init(metadata: DocumentMetadata, stored: StoredFields) {
        self.storage = .stored(stored)
        self.metadata = metadata
        self.attachments = [:]
    }

    /// Appends the fields as a binary JSON object (FORMAT.md §13.1), the body of a record: the
    /// stored bytes as they are when the fields were read from a database and not changed.
    func appendBody(to out: inout [UInt8]) {
        switch storage {
        case .built(let fields): JSON.object(fields).appendBinary(to: &out)
        case .stored(let stored): stored.withBody { out.append(contentsOf: $0) }
        }
    }
}

extension Document: Sequence {
    /// Iterates the fields, in no particular order.
    public func makeIterator() -> Dictionary<String, JSON>.Iterator { fields.makeIterator() }
}

extension Document: ExpressibleByDictionaryLiteral {
    /// A document of the given fields, without an id (a later duplicate key wins).
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSON {
    /// The kind of value, for error messages.
    var documentsKindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .date: return "a date"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
