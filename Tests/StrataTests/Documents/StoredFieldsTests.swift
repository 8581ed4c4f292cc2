import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Documents read from a database keep their fields as the stored bytes (StoredFields): one field
// is read from the bytes, the dictionary is built on first use; a read document behaves as one
// built from its fields (equality, hashing, mutation, concurrent reads), and a corrupt body is
// still refused when the document is read.

@Suite struct StoredFieldsTests {
    static let fields: [String: JSON] = [
        "number": "INV-7", "total": 1200, "paid": false, "lines": [["sku": "X", "qty": 2], ["sku": "Ü", "qty": 1]],
        "note": .string(String(repeating: "é", count: 40)), "missing": .null, "rate": 0.25,
    ]

    /// A store with document "d" of ``fields``, its type and channels set.
    static func withSaved(_ body: (DocumentDatabase, Document) throws -> Void) throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("main")
        var doc = Document(id: "d", fields: fields)
        doc.metadata.type = "invoice"
        doc.metadata.channels = ["eu"]
        try body(db, try db.save(doc))
    }

    @Test("a read document equals, and hashes as, the document built from the same fields and metadata")
    func equalityAndHash() throws {
        try Self.withSaved { db, saved in
            let read = try #require(try db.document(id: "d"))
            let again = try #require(try db.document(id: "d"))
            #expect(read == saved && saved == read && read == again)
            #expect(read.hashValue == saved.hashValue && read.hashValue == again.hashValue)
            #expect(Set([read, saved, again]).count == 1)
            // Field by field without building the dictionary, then all of them.
            for (key, value) in Self.fields { #expect(read[key] == value, "\(key)") }
            #expect(read["absent"] == nil)
            #expect(read.fields == Self.fields)
            #expect(read.json == .object(Self.fields) && read.jsonData() == saved.jsonData())
            #expect(Dictionary(uniqueKeysWithValues: read.map { ($0.key, $0.value) }) == Self.fields)
            // A different field or metadata is a different document.
            var other = read
            other["paid"] = true
            #expect(other != read)
            var retyped = read
            retyped.metadata.type = "order"
            #expect(retyped != read && retyped.fields == read.fields)
        }
    }

    @Test("a read document changes like any value: the copy it came from and the database keep the stored fields")
    func mutationAfterRead() throws {
        try Self.withSaved { db, _ in
            let read = try #require(try db.document(id: "d"))
            var changed = read
            changed["paid"] = true
            changed["total"] = nil
            changed.fields["added"] = [1, 2]
            #expect(changed["paid"] == true && changed["total"] == nil && changed["added"] == [1, 2] && changed["number"] == "INV-7")
            #expect(read["paid"] == false && read["total"] == 1200 && read["added"] == nil)
            var replaced = read
            replaced.fields = ["only": "this"]
            #expect(replaced.fields == ["only": "this"] && replaced["number"] == nil)
            // Saving the changed copy stores the change; saving an unchanged read document stores
            // the same fields (its stored bytes are written as they are).
            let saved = try db.save(changed)
            #expect(try db.document(id: "d")?.fields == saved.fields)
            #expect(saved.fields["added"] == [1, 2] && saved["total"] == nil)
            var unchanged = try #require(try db.document(id: "d"))
            unchanged.metadata.channels = ["us"]
            let resaved = try db.save(unchanged)
            let reread = try #require(try db.document(id: "d"))
            #expect(reread.fields == saved.fields && reread.metadata.channels == ["us"] && resaved.metadata.revision == 3)
        }
    }

    /// `count` reads of document "d" of ``fields``, made before the store closed (a read document
    /// owns its bytes).
    static func reads(_ count: Int) throws -> [Document] {
        var out: [Document] = []
        try withSaved { db, _ in
            for _ in 0..<count { out.append(try #require(try db.document(id: "d"))) }
        }
        return out
    }

    @Test("one read document read from many tasks at once gives every task the same fields")
    func concurrentReads() async throws {
        for read in try Self.reads(20) {
            let results = await withTaskGroup(of: Bool.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        // Half build the dictionary (racing to be first), half read single fields.
                        task % 2 == 0 ? read.fields == Self.fields && read == read
                            : read["total"] == 1200 && read["lines"] == Self.fields["lines"]
                    }
                }
                var all: [Bool] = []
                for await ok in group { all.append(ok) }
                return all
            }
            #expect(results.count == 8 && results.allSatisfy { $0 })
        }
    }

    @Test("a document whose stored body is not a well-formed object is refused when it is read, naming it")
    func corruptBody() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try store.documents("main")
        _ = try db.save(Document(id: "seed", fields: [:]))
        let record = DocumentRecord(isDeleted: false, revision: 1, changeSequence: 9, createDate: Date(timeIntervalSinceReferenceDate: 0),
                                    lastChange: Date(timeIntervalSinceReferenceDate: 0), type: nil, channels: [], attachments: [])
        var header: [UInt8] = []
        record.appendHeader(to: &header)
        var good: [UInt8] = []
        JSON.object(["k": "v"]).appendBinary(to: &good)
        var badUTF8 = good
        badUTF8[badUTF8.count - 1] = 0xff          // the string's only byte
        var unsorted: [UInt8] = []
        JSON.object(["a": 1, "b": 2]).appendBinary(to: &unsorted)
        unsorted.swapAt(7, 11)                      // keys "b", "a"
        let bodies: [String: [UInt8]] = ["utf8": badUTF8, "order": unsorted, "array": [0x07, 0x00, 0x00],
                                         "trailing": good + [0], "truncated": Array(good.dropLast())]
        for (name, body) in bodies {
            var batch = CommitBatch()
            batch.records.putRaw(DocumentLayout.documentKey(db.state.id, name), header + body)
            try store.engine.commit(batch)
            #expect {
                _ = try db.document(id: name)
            } throws: { error in
                guard case StrataError.corrupted(let file, _, _) = error else { return false }
                return file.contains(name)
            }
        }
    }

    @Test("the binary validator accepts what the decoder accepts and refuses what it refuses, at the same offset")
    func validatorAgreesWithDecoder() throws {
        var random = SplitMix64(seed: 27)
        var encoded: [UInt8] = []
        JSON.object(Self.fields).appendBinary(to: &encoded)
        try encoded.withUnsafeBytes { try JSON.validateBinary($0) }
        for _ in 0..<2_000 {
            var damaged = encoded
            let at = Int(random.next() % UInt64(damaged.count))
            damaged[at] = UInt8(truncatingIfNeeded: random.next())
            let decoded = Result { try damaged.withUnsafeBytes { _ = try JSON(binary: $0) } }
            let validated = Result { try damaged.withUnsafeBytes { try JSON.validateBinary($0) } }
            switch (decoded, validated) {
            case (.success, .success): break
            case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)", "byte \(at)")
            default: Issue.record("decoder and validator disagree on a change of byte \(at): \(decoded) \(validated)")
            }
        }
    }
}
