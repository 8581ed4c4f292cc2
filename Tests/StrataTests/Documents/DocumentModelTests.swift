import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Codable document models: `Blob` properties stored as attachments and read lazily, and
// `DocumentModel`'s type and channels, which channel-based replication selects by.

/// An invoice whose scan is an attachment, in the channel of its region.
struct ModelInvoice: DocumentModel, Equatable {
    static let documentType: String? = "invoice"
    var number: String
    var region: String
    var scan: Blob
    var documentChannels: [String] { ["invoices-\(region)"] }
}

/// Blobs at several depths of keyed containers.
struct ModelAlbum: Codable, Equatable {
    struct Meta: Codable, Equatable { var title: String; var photo: Blob }
    var meta: Meta
    var pages: [String: Blob]
    var back: Blob?
}

@Suite("Document models and blobs")
struct DocumentModelTests {
    static func open(_ dir: TemporaryDirectory) throws -> (Store, DocumentDatabase) {
        let store = try Store.open(at: dir.url, options: documentStoreOptions())
        return (store, try store.documents("main"))
    }

    static let pdf = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    @Test("a Blob property round-trips: stored as an attachment, not a field; the new Data is saved")
    func blobRoundTrip() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        let scan = Blob(data: Self.pdf, contentType: "application/pdf")
        #expect(scan.length == 5_000 && scan.digest.hasPrefix("crc32c-") && scan.digest.count == 15)
        let saved = try db.save(ModelInvoice(number: "A-1", region: "east", scan: scan), id: "A-1")
        #expect(saved.fields == ["number": "A-1", "region": "east"])
        #expect(saved.attachments == ["scan": Attachment(data: Self.pdf, contentType: "application/pdf")])

        let plain = try #require(try db.document(id: "A-1"))
        #expect(plain["scan"] == nil)
        #expect(plain.attachments["scan"]?.data == Self.pdf)

        let invoice = try #require(try db.document(id: "A-1", as: ModelInvoice.self))
        #expect(invoice.number == "A-1")
        #expect(invoice.scan == scan)
        #expect(invoice.scan.contentType == "application/pdf" && invoice.scan.length == 5_000)
        #expect(try invoice.scan.data() == Self.pdf)

        // Saved again, a blob read from the store keeps its attachment.
        var edited = invoice
        edited.number = "A-1b"
        let again = try db.save(edited, id: "A-1")
        #expect(again.attachments["scan"]?.data == Self.pdf)
        #expect(try db.document(id: "A-1", as: ModelInvoice.self)?.number == "A-1b")
    }

    @Test("nested and dictionary blobs are attachments named by their coding paths; a nil blob is none")
    func blobPaths() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        let photo = Blob(data: Data([1, 2, 3]), contentType: "image/png")
        let cover = Blob(data: Data([4]), contentType: "image/jpeg")
        let slash = Blob(data: Data([5, 6]))
        let album = ModelAlbum(meta: .init(title: "Trip", photo: photo), pages: ["cover": cover, "a/b~c": slash], back: nil)
        let saved = try db.save(album, id: "album")
        #expect(Set(saved.attachments.keys) == ["meta/photo", "pages/cover", "pages/a~1b~0c"])
        #expect(saved.fields == ["meta": ["title": "Trip"], "pages": [:]])
        #expect(saved.attachments["pages/a~1b~0c"]?.contentType == "application/octet-stream")

        let read = try #require(try db.document(id: "album", as: ModelAlbum.self))
        #expect(read == album)
        #expect(try read.meta.photo.data() == Data([1, 2, 3]))
        #expect(try read.pages["a/b~c"]?.data() == Data([5, 6]))
        #expect(read.back == nil)
    }

    @Test("reading a model does not read its attachments: data() does, and meets what happened since")
    func lazyLoading() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        try db.save(ModelInvoice(number: "A-1", region: "east", scan: Blob(data: Self.pdf, contentType: "application/pdf")), id: "A-1")
        try db.save(ModelInvoice(number: "A-2", region: "east", scan: Blob(data: Self.pdf, contentType: "application/pdf")), id: "A-2")
        try db.save(ModelInvoice(number: "A-3", region: "east", scan: Blob(data: Self.pdf, contentType: "application/pdf")), id: "A-3")
        let one = try #require(try db.document(id: "A-1", as: ModelInvoice.self))
        let two = try #require(try db.document(id: "A-2", as: ModelInvoice.self))
        let three = try #require(try db.document(id: "A-3", as: ModelInvoice.self))

        // The attachment removed after the read: only data() notices.
        var plain = try #require(try db.document(id: "A-1"))
        plain.attachments = [:]
        try db.save(plain)
        do { _ = try one.scan.data(); Issue.record("the bytes were read with the model") } catch StrataError.notFound {}
        // Other bytes since the read: a conflict, not the new bytes.
        var changed = try #require(try db.document(id: "A-2"))
        changed.attachments["scan"] = Attachment(data: Data("other".utf8), contentType: "application/pdf")
        try db.save(changed)
        do { _ = try two.scan.data(); Issue.record("read bytes other than the model's") } catch StrataError.conflict {}
        // The document deleted.
        try db.delete(id: "A-3")
        do { _ = try three.scan.data(); Issue.record("the bytes were read with the model") } catch StrataError.notFound {}
        // A Blob property without an attachment does not decode.
        #expect(throws: StrataError.self) { try db.document(id: "A-1", as: ModelInvoice.self) }
    }

    @Test("a DocumentModel's type and channels are the document's metadata, and a channel filter selects it")
    func typeAndChannels() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        let east = try db.save(ModelInvoice(number: "E-1", region: "east", scan: Blob(data: Data("e".utf8))), id: "E-1")
        let west = try db.save(ModelInvoice(number: "W-1", region: "west", scan: Blob(data: Data("w".utf8))), id: "W-1")
        #expect(east.metadata.type == "invoice" && east.metadata.channels == ["invoices-east"])
        #expect(try db.document(id: "W-1")?.metadata.channels == ["invoices-west"])
        // A Codable value that is not a model has neither.
        struct Note: Codable { var text: String }
        let note = try db.save(Note(text: "hi"), id: "note")
        #expect(note.metadata.type == nil && note.metadata.channels.isEmpty)

        // What the replicator sends: the wire revision carries channels, type and the attachment.
        func wire(_ saved: Document) throws -> ReplicatedRevision {
            guard let revision = saved.metadata.revisionID,
                  let replicated = try db.replicatedRevision(id: saved.metadata.id, revision: revision, historyLimit: 10) else {
                throw StrataError.notFound(kind: .document, name: saved.metadata.id, reason: "revision \(String(describing: saved.metadata.revisionID))")
            }
            return replicated
        }
        let json = WireRevision.json(of: try wire(east))
        #expect(json["_strata"]?["channels"] == ["invoices-east"])
        #expect(json["_strata"]?["type"] == "invoice")
        #expect(json["_attachments"]?["scan"]?["data"] == .string(Data("e".utf8).base64EncodedString()))
        #expect(json["scan"] == nil)
        // A filter by channel, as a replication's filter sees each document: only east passes.
        let byChannel: @Sendable (Document, [String: JSON]) -> Bool = { document, parameters in
            document.metadata.channels.contains { parameters["channel"] == .string($0) }
        }
        let parameters: [String: JSON] = ["channel": "invoices-east"]
        #expect(byChannel(WireRevision.document(of: try wire(east)), parameters))
        #expect(!byChannel(WireRevision.document(of: try wire(west)), parameters))
        // And back: a pulled revision decodes as the model, its blob read from the store.
        let received = WireRevision.document(of: try WireRevision.revision(from: json))
        #expect(received.metadata.channels == ["invoices-east"] && received.attachments["scan"]?.data == Data("e".utf8))
    }

    @Test("a Blob outside a document save, or in an array, is refused")
    func misuse() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        struct Scans: Codable { var all: [Blob] }
        #expect(throws: StrataError.self) { try db.save(Scans(all: [Blob(data: Data([1]))]), id: "s") }
        #expect(try db.document(id: "s") == nil)
        struct Reading: Codable, Sendable { var raw: Blob }
        let series = try store.timeSeries("raw", of: Reading.self)
        #expect(throws: StrataError.self) { try series.append(Reading(raw: Blob(data: Data([1])))) }
        #expect(throws: (any Error).self) { try JSONEncoder().encode(Reading(raw: Blob(data: Data([1])))) }
    }

    @Test("a transaction saves a model with its blobs, type and channels")
    func transaction() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        try store.transaction { tx in
            _ = try tx.documents("main").save(ModelInvoice(number: "T-1", region: "north", scan: Blob(data: Data("t".utf8))), id: "T-1")
        }
        #expect(try db.document(id: "T-1")?.attachments["scan"]?.data == Data("t".utf8))
        #expect(try db.document(id: "T-1")?.metadata.channels == ["invoices-north"])
    }

    @Test("the async twins save and read models with blobs")
    func asyncTwins() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        try await db.save(ModelInvoice(number: "Y-1", region: "south", scan: Blob(data: Data("y".utf8))), id: "Y-1")
        let read = try #require(try await db.document(id: "Y-1", as: ModelInvoice.self))
        #expect(try await read.scan.data() == Data("y".utf8))
        var edited = read
        edited.region = "west"
        let saved = try await db.save(edited, id: "Y-1")
        #expect(saved.attachments["scan"]?.data == Data("y".utf8) && saved.metadata.channels == ["invoices-west"])
    }
}
