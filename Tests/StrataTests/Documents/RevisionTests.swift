import Foundation
import Testing
@testable import Strata
import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Revisions of documents (FORMAT.md §16.2, §16.6): CouchDB revision ids, the revision tree,
// conflicting branches, the winner every replica picks, conflict resolution, and the package API
// replication uses. Two stores stand for two replicas; `exchange` moves revisions between them
// the way the replicator does (changes → missing revisions → revisions with history → insert).

/// Moves every revision `from` has and `to` lacks, as the replicator does; returns how many.
@discardableResult
func exchangeRevisions(from: DocumentDatabase, to: DocumentDatabase, historyLimit: Int = 20) throws -> Int {
    let changes = try from.revisionChanges(since: 0, limit: .max)
    var wanted: [String: [RevisionID]] = [:]
    for change in changes { wanted[change.documentID] = change.leaves }
    let missing = try to.missingRevisions(wanted)
    var revisions: [ReplicatedRevision] = []
    for (id, revs) in missing.sorted(by: { $0.key < $1.key }) {
        for rev in revs {
            if let r = try from.replicatedRevision(id: id, revision: rev, historyLimit: historyLimit) { revisions.append(r) }
        }
    }
    try to.insertReplicatedRevisions(revisions)
    return revisions.count
}

@Suite struct RevisionTests {
    static func open(_ dir: TemporaryDirectory, _ name: String = "a", indexes: [DocumentIndex] = []) throws -> (Store, DocumentDatabase) {
        let store = try Store.open(at: dir.url.appendingPathComponent(name), options: documentStoreOptions())
        return (store, try store.documents("main", indexes: indexes))
    }

    @Test("MD5 gives RFC 1321's test-suite digests")
    func md5() {
        let cases = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"), ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"), ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (input, digest) in cases { #expect(MD5.digest(Array(input.utf8)).hexString == digest, "\(input)") }
    }

    @Test("revision ids parse, print and order as CouchDB's; malformed ones are refused")
    func revisionIDs() {
        let r = RevisionID("12-abc")
        #expect(r?.generation == 12 && r?.digest == "abc" && r?.description == "12-abc")
        for bad in ["", "-abc", "0-abc", "1-", "x-abc", "1-ab-c", "1-ab c", "18446744073709551616-a", "1-" + String(repeating: "a", count: 65)] {
            #expect(RevisionID(bad) == nil, "\(bad)")
        }
        #expect(RevisionID("2-a")! < RevisionID("10-a")!)
        #expect(RevisionID("3-a")! < RevisionID("3-b")!)
    }

    @Test("a revision id is Codable as its string, and its throwing parser names what it refused")
    func revisionIDCodableAndParsing() throws {
        let r = try RevisionID(parsing: "7-0a1B")
        #expect(r.generation == 7 && r.digest == "0a1B")
        let encoded = try JSONEncoder().encode([r])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["7-0a1B"]"#)
        #expect(try JSONDecoder().decode([RevisionID].self, from: encoded) == [r])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([RevisionID].self, from: Data(#"["7-"]"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([RevisionID].self, from: Data("[7]".utf8)) }
        for bad in ["", "0-a", "1-a b"] {
            #expect { try RevisionID(parsing: bad) } throws: { error in
                guard case StrataError.invalidArgument("parsing", let message) = error else { return false }
                return message.contains(bad.debugDescription)
            }
        }
        #expect(RevisionID(r.description) == r)
    }

    @Test("a change of the stream and of the persistent feed carries the revision id of the document it changed")
    func changesCarryRevisionIDs() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        var stream = try db.changes().makeAsyncIterator()
        let first = try await db.save(Document(id: "d", fields: ["n": 1]))
        let second = try await db.save(Document(id: "d", fields: ["n": 2]))
        try await db.delete(id: "d")
        var live: [DocumentChange] = []
        while live.count < 3, let batch = try await stream.next() { live += batch }
        #expect(live.map(\.revisionID).prefix(2) == [first.metadata.revisionID!, second.metadata.revisionID!])
        #expect(live.map(\.revision) == [1, 2, 3] && live[2].isDeletion && live[2].revisionID.generation == 3)
        let (feed, _) = try await db.changes(since: 0)
        #expect(feed.count == 1 && feed[0].revisionID == live[2].revisionID)
    }

    @Test("a save gets revision id <revision>-<32 hex digits>; the same change of the same revision gets the same id anywhere")
    func localRevisionIDs() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (storeA, a) = try Self.open(dir, "a")
        let (storeB, b) = try Self.open(dir, "b")
        defer { try? storeA.close(); try? storeB.close() }
        let first = try a.save(Document(id: "d", fields: ["n": 1]))
        let id = try #require(first.metadata.revisionID)
        #expect(id.generation == 1 && id.digest.count == 32 && first.metadata.revision == 1)
        #expect(try a.document(id: "d")?.metadata.revisionID == first.metadata.revisionID)
        let same = try b.save(Document(id: "d", fields: ["n": 1]))
        #expect(same.metadata.revisionID == first.metadata.revisionID)
        let second = try a.save(Document(id: "d", fields: ["n": 2]))
        #expect(second.metadata.revisionID?.generation == 2 && second.metadata.revisionID != first.metadata.revisionID)
        try a.delete(id: "d")
        let changes = try a.revisionChanges(since: 0, limit: 10)
        #expect(changes.count == 1 && changes[0].isDeletion && changes[0].leaves.map(\.generation) == [3])
    }

    @Test("concurrent changes on two replicas become a conflict with the same winner on both; resolving ends it everywhere")
    func conflictsAndResolution() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var (storeA, a) = try Self.open(dir, "a")
        let (storeB, b) = try Self.open(dir, "b")
        defer { try? storeA.close(); try? storeB.close() }
        try a.save(Document(id: "d", fields: ["v": "base"]))
        #expect(try exchangeRevisions(from: a, to: b) == 1)
        #expect(try b.document(id: "d")?["v"] == "base")
        try a.save(Document(id: "d", fields: ["v": "from a"]))
        try b.save(Document(id: "d", fields: ["v": "from b"]))
        try exchangeRevisions(from: a, to: b)
        try exchangeRevisions(from: b, to: a)
        let winnerA = try #require(try a.document(id: "d")), winnerB = try #require(try b.document(id: "d"))
        #expect(winnerA == winnerB)
        #expect(winnerA.metadata.revision == 2)
        let conflictsA = try a.conflicts(id: "d"), conflictsB = try b.conflicts(id: "d")
        #expect(conflictsA.count == 1 && conflictsA == conflictsB)
        #expect(Set([winnerA["v"], conflictsA[0]["v"]]) == Set<JSON?>(["from a", "from b"]))
        // CouchDB's rule: equal generations, the greater digest wins.
        #expect(conflictsA[0].metadata.revisionID! < winnerA.metadata.revisionID!)
        // Nothing more to move, either way.
        #expect(try exchangeRevisions(from: a, to: b) == 0 && (try exchangeRevisions(from: b, to: a)) == 0)

        // The inspector (strata-dump documents) shows the winner and the conflict.
        try storeA.close()
        let dumped = try #require(try DocumentInspector.dump(database: "main", ofStoreAt: dir.url.appendingPathComponent("a").path)
            .documents.first)
        #expect(dumped.revisionID == winnerA.metadata.revisionID?.description && dumped.conflicts == [conflictsA[0].metadata.revisionID?.description])
        #expect(dumped.revisionsKept == 3)
        (storeA, a) = try Self.open(dir, "a")

        var merged = winnerA
        merged["v"] = "merged"
        let resolved = try a.resolveConflict(id: "d", with: merged)
        #expect(resolved["v"] == "merged" && resolved.metadata.revision == 3)
        #expect(try a.conflicts(id: "d").isEmpty)
        try exchangeRevisions(from: a, to: b)
        #expect(try b.conflicts(id: "d").isEmpty)
        #expect(try b.document(id: "d") == (try a.document(id: "d")))
    }

    @Test("the async twins of conflicts(id:) and resolveConflict(id:with:) read and end a conflict")
    func asyncConflicts() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (storeA, a) = try Self.open(dir, "a")
        let (storeB, b) = try Self.open(dir, "b")
        defer { try? storeA.close(); try? storeB.close() }
        _ = try await a.save(Document(id: "d", fields: ["v": "base"]))
        try exchangeRevisions(from: a, to: b)
        _ = try await a.save(Document(id: "d", fields: ["v": "from a"]))
        _ = try await b.save(Document(id: "d", fields: ["v": "from b"]))
        try exchangeRevisions(from: b, to: a)
        let conflicts = try await a.conflicts(id: "d")
        #expect(conflicts.count == 1)
        var merged = try #require(try await a.document(id: "d"))
        merged["v"] = "merged"
        let resolved = try await a.resolveConflict(id: "d", with: merged)
        #expect(resolved["v"] == "merged")
        #expect(try await a.conflicts(id: "d").isEmpty)
    }

    @Test(".failOnConflict saves only over the revision the document carries; the default saves over anything")
    func failOnConflict() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        let fresh = Document(id: "d", fields: ["v": 1])
        let first = try db.save(fresh, concurrencyControl: .failOnConflict)
        // The same fresh document again: it does not exist any more as "absent".
        #expect(throws: StrataError.self) { try db.save(fresh, concurrencyControl: .failOnConflict) }
        var edited = first
        edited["v"] = 2
        let second = try db.save(edited, concurrencyControl: .failOnConflict)
        var stale = first
        stale["v"] = 3
        #expect {
            try db.save(stale, concurrencyControl: .failOnConflict)
        } throws: { error in
            guard case StrataError.conflict(let message) = error else { return false }
            return message.contains(first.metadata.revisionID!.description) && message.contains(second.metadata.revisionID!.description)
        }
        #expect(try db.document(id: "d")?["v"] == 2)
        #expect(try db.save(stale)["v"] == 3)
        try db.delete(id: "d")
        #expect(throws: StrataError.self) { try db.save(stale, concurrencyControl: .failOnConflict) }
        var recreated = Document(id: "d", fields: ["v": 4])
        recreated.metadata.revisionID = nil
        #expect(try db.save(recreated, concurrencyControl: .failOnConflict).metadata.revision == 5)
    }

    @Test("a replicated change is external in the change feed and the change stream; a local one is not")
    func externalChanges() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (storeA, a) = try Self.open(dir, "a")
        let (storeB, b) = try Self.open(dir, "b")
        defer { try? storeA.close(); try? storeB.close() }
        let stream = try b.changes()
        try await a.save(Document(id: "x", fields: [:]))
        try exchangeRevisions(from: a, to: b)
        try await b.save(Document(id: "y", fields: [:]))
        var seen: [DocumentChange] = []
        for try await batch in stream {
            seen += batch
            if seen.count >= 2 { break }
        }
        #expect(seen.map(\.id) == ["x", "y"] && seen.map(\.isExternal) == [true, false])
        #expect(try await b.changes(since: 0).changes.map(\.isExternal) == [true, false])
    }

    @Test("deleting the winner of a document in conflict makes the other leaf the winner, index rows included")
    func deleteInConflict() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = DocumentIndex(name: "v", version: "1", map: { doc, emit in emit(doc["v"], nil) })
        let (storeA, a) = try Self.open(dir, "a", indexes: [index])
        let (storeB, b) = try Self.open(dir, "b", indexes: [index])
        defer { try? storeA.close(); try? storeB.close() }
        try a.save(Document(id: "d", fields: ["v": 1]))
        try exchangeRevisions(from: a, to: b)
        try a.save(Document(id: "d", fields: ["v": 2]))
        try b.save(Document(id: "d", fields: ["v": 3]))
        try exchangeRevisions(from: b, to: a)
        let winner = try #require(try a.document(id: "d"))
        let loser = try #require(try a.conflicts(id: "d").first)
        #expect(try a.query("v", .all).rows.map(\.key) == [winner["v"]!])
        try a.delete(id: "d")
        #expect(try a.document(id: "d") == loser)
        #expect(try a.conflicts(id: "d").isEmpty)
        #expect(try a.query("v", .all).rows.map(\.key) == [loser["v"]!])
        try a.delete(id: "d")
        #expect(try a.document(id: "d") == nil)
        #expect(try a.query("v", .all).rows.isEmpty)
        // The other replica converges to the same.
        try exchangeRevisions(from: a, to: b)
        #expect(try b.document(id: "d") == nil && (try b.conflicts(id: "d")).isEmpty)
        #expect(try b.query("v", .all).rows.isEmpty)
    }

    @Test("a replicated winner brings its attachments; the loser keeps its own; both survive reopening")
    func attachmentsAndReopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var (storeA, a) = try Self.open(dir, "a")
        let (storeB, b) = try Self.open(dir, "b")
        defer { try? storeB.close() }
        var doc = Document(id: "d", fields: ["v": 1])
        doc.attachments["x.bin"] = Attachment(data: Data([1, 2, 3]), contentType: "application/octet-stream")
        try a.save(doc)
        try exchangeRevisions(from: a, to: b)
        #expect(try b.document(id: "d")?.attachments == doc.attachments)
        doc["v"] = 2
        doc.attachments["x.bin"] = Attachment(data: Data([4, 5]), contentType: "application/octet-stream")
        try a.save(doc)
        var other = doc
        other["v"] = 3
        other.attachments = ["y.txt": Attachment(data: Data("why".utf8), contentType: "text/plain")]
        try b.save(other)
        try exchangeRevisions(from: a, to: b)
        try exchangeRevisions(from: b, to: a)
        try storeA.close()
        (storeA, a) = try Self.open(dir, "a")
        defer { try? storeA.close() }
        let all = [try a.document(id: "d")!] + (try a.conflicts(id: "d"))
        #expect(Set(all.map { $0.attachments }) == Set([doc.attachments, other.attachments]))
        #expect(try a.document(id: "d") == (try b.document(id: "d")))
    }

    @Test("histories are bounded; a revision sent with a short history still joins its branch")
    func boundedHistory() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (storeA, a) = try Self.open(dir, "a")
        let (storeB, b) = try Self.open(dir, "b")
        defer { try? storeA.close(); try? storeB.close() }
        for i in 0..<30 { try a.save(Document(id: "d", fields: ["i": .int(Int64(i))])) }
        let leaf = try #require(try a.document(id: "d")!.metadata.revisionID)
        let full = try #require(try a.replicatedRevision(id: "d", revision: leaf, historyLimit: 1000))
        #expect(leaf.generation == 30 && full.history.count == RevisionTree.defaultHistoryLimit)
        try exchangeRevisions(from: a, to: b)
        for i in 30..<33 { try a.save(Document(id: "d", fields: ["i": .int(Int64(i))])) }
        // Two digests of history reach the revision b has: no conflict.
        try exchangeRevisions(from: a, to: b, historyLimit: 4)
        #expect(try b.conflicts(id: "d").isEmpty && (try b.document(id: "d")) == (try a.document(id: "d")))
        #expect(try b.missingRevisions(["d": [leaf, RevisionID("99-ff")!]]) == ["d": [RevisionID("99-ff")!]])
    }

    @Test("local documents are kept apart: not in the change feed, not documents")
    func localDocuments() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var (store, db) = try Self.open(dir)
        try db.putLocalDocument(id: "checkpoint", ["seq": 42])
        #expect(try db.localDocument(id: "checkpoint") == ["seq": 42])
        #expect(try db.document(id: "checkpoint") == nil && (try db.changes(since: 0)).changes.isEmpty)
        try store.close()
        (store, db) = try Self.open(dir)
        defer { try? store.close() }
        #expect(try db.localDocument(id: "checkpoint") == ["seq": 42])
        try db.putLocalDocument(id: "checkpoint", nil)
        #expect(try db.localDocument(id: "checkpoint") == nil)
        #expect(throws: StrataError.self) { try db.putLocalDocument(id: "", ["x": 1]) }
    }

    @Test("replicated revisions that are malformed are refused whole: nothing is written")
    func malformedReplicatedRevisions() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        let date = Date(timeIntervalSinceReferenceDate: 0)
        func revision(_ id: String, _ rev: String, history: [String]) -> ReplicatedRevision {
            ReplicatedRevision(documentID: id, revisionID: RevisionID(rev)!, history: history, isDeleted: false, fields: ["a": 1],
                               type: nil, channels: [], createDate: date, lastChange: date, attachments: [:])
        }
        #expect(throws: StrataError.self) {
            try db.insertReplicatedRevisions([revision("ok", "1-aa", history: ["aa"]), revision("bad", "2-bb", history: ["cc"])])
        }
        #expect(throws: StrataError.self) { try db.insertReplicatedRevisions([revision("", "1-aa", history: ["aa"])]) }
        #expect(try db.document(id: "ok") == nil)
        // A history with a bad digest, or longer than the generation, is cut where it stops making sense.
        try db.insertReplicatedRevisions([revision("h", "2-bb", history: ["bb", "not valid!", "zz"]),
                                          revision("g", "1-aa", history: ["aa", "x", "y"])])
        #expect(try db.document(id: "h")?.metadata.revisionID == RevisionID("2-bb") && (try db.document(id: "g"))?.metadata.revisionID == RevisionID("1-aa"))
    }

    @Test("a document at generation 2⁶⁴ − 1 refuses another save or a deletion with .invalidArgument, and stays readable")
    func generationAtTheLimit() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var (store, db) = try Self.open(dir)
        let date = Date(timeIntervalSinceReferenceDate: 0)
        try db.insertReplicatedRevisions([ReplicatedRevision(
            documentID: "max", revisionID: RevisionID(generation: .max, digest: "ab")!, history: ["ab"], isDeleted: false,
            fields: ["v": 1], type: nil, channels: [], createDate: date, lastChange: date, attachments: [:])])
        func invalid(_ body: () throws -> Void) {
            #expect { try body() } throws: { error in
                guard case StrataError.invalidArgument = error else { return false }
                return true
            }
        }
        invalid { _ = try db.save(Document(id: "max", fields: ["v": 2])) }
        invalid { try db.delete(id: "max") }
        invalid { _ = try db.resolveConflict(id: "max", with: Document(id: "max", fields: ["v": 3])) }
        invalid {
            try store.transaction { tx in try tx.documents("main").delete(id: "max") }
        }
        try store.close()
        (store, db) = try Self.open(dir)
        defer { try? store.close() }
        #expect(try db.document(id: "max")?["v"] == 1)
        #expect(try db.document(id: "max")?.metadata.revisionID?.description == "\(UInt64.max)-ab")
    }

    @Test("crafted revision trees are refused as corrupt, naming the document", arguments: [
        // count 1: generation 1, packed digest, parent 2 (out of range), leaf.
        [1, 1, 0] + [UInt8](repeating: 0xab, count: 16) + [2, 2],
        // Two nodes, the first not a leaf.
        [2, 1, 1, 1, 0x61, 0, 0, 2, 1, 1, 0x62, 0, 2],
        // A parent whose generation is not one less.
        [2, 3, 1, 1, 0x61, 2, 2, 1, 1, 1, 0x62, 0, 0],
        // Unknown digest form, unknown flags, a digest that is not [0-9a-zA-Z].
        [1, 1, 7, 0, 2], [1, 1, 1, 1, 0x61, 0, 9], [1, 1, 1, 1, 0x2d, 0, 2],
        // A revision twice.
        [2, 1, 1, 1, 0x61, 0, 2, 1, 1, 1, 0x61, 0, 2],
        // No revision at all.
        [0],
    ] as [[UInt8]])
    func craftedTrees(tree: [UInt8]) throws {
        // flags: tree; revision 1 (or 3 for the third case: the first node's generation); sequence 1; two dates.
        let generation = tree.count > 1 ? tree[1] : 1
        var value: [UInt8] = [DocumentRecord.treeFlag, generation, 1] + [UInt8](repeating: 0, count: 16) + tree + [0]
        JSON.object([:]).appendBinary(to: &value)
        #expect {
            try value.withUnsafeBytes { _ = try DocumentRecord(decoding: $0, documentID: "doc-7") }
        } throws: { error in
            guard case StrataError.corrupted(let file, _, _) = error else { return false }
            return file.contains("doc-7")
        }
    }

    @Test("a record written before revision trees reads with a stable revision id and takes a tree at its next save")
    func legacyRecords() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (store, db) = try Self.open(dir)
        defer { try? store.close() }
        _ = try db.save(Document(id: "seed", fields: [:]))
        let record = DocumentRecord(isDeleted: false, revision: 4, changeSequence: 9, createDate: Date(timeIntervalSinceReferenceDate: 0),
                                    lastChange: Date(timeIntervalSinceReferenceDate: 0), type: nil, channels: [], attachments: [])
        var value: [UInt8] = []
        record.appendHeader(to: &value)
        JSON.object(["old": true]).appendBinary(to: &value)
        var batch = CommitBatch()
        batch.records.putRaw(DocumentLayout.documentKey(db.state.id, "old"), value)
        try store.engine.commit(batch)
        let legacy = try #require(try db.document(id: "old"))
        #expect(legacy.metadata.revisionID == DocumentRecord.legacyRevisionID(documentID: "old", revision: 4))
        #expect(legacy.metadata.revisionID?.generation == 4)
        let saved = try db.save(legacy)
        #expect(saved.metadata.revision == 5)
        let full = try #require(try db.replicatedRevision(id: "old", revision: saved.metadata.revisionID!, historyLimit: 10))
        #expect(full.history.count == 2 && full.history[1] == legacy.metadata.revisionID!.digest)
    }

    @Test("a first revision is stored as its digest alone (FORMAT.md §16.2's example), with the same revision id; a second save stores the tree")
    func singleRevisionForm() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = documentStoreOptions()
        options.clock = { Date(timeIntervalSinceReferenceDate: 0) }
        var store = try Store.open(at: dir.url, options: options)
        var db = try store.documents("main")
        let saved = try db.save(Document(id: "A-1", fields: ["n": 2]))
        // The digest of FORMAT.md §16.2 (MD5 of 00 00 09, the body, 00 00 00): the id saves made before.
        let digest = "45c25f5e78a547eb53be13608d3d0d57"
        #expect(saved.metadata.revisionID?.description == "1-" + digest)
        let stored = try #require(try store.engine.snapshot().get(DocumentLayout.documentKey(db.state.id, "A-1")))
        var packed: [UInt8] = []
        #expect(RevisionTree.appendPacked(digest, to: &packed))
        #expect(stored == [DocumentRecord.singleRevisionFlag, 1, 1] + [UInt8](repeating: 0, count: 16) + packed
            + [0, 0x08, 0x01, 0x06, 0x01, 0x00, 0x01, 0x6e, 0x03, 0x04])
        // A replicated first revision whose digest is not 32 hex digits keeps the tree form.
        try db.insertReplicatedRevisions([ReplicatedRevision(
            documentID: "r", revisionID: RevisionID("1-aa")!, history: ["aa"], isDeleted: false, fields: ["a": 1], type: nil,
            channels: [], createDate: Date(timeIntervalSinceReferenceDate: 0), lastChange: Date(timeIntervalSinceReferenceDate: 0),
            attachments: [:])])
        let replicated = try #require(try store.engine.snapshot().get(DocumentLayout.documentKey(db.state.id, "r")))
        #expect(replicated.first == DocumentRecord.treeFlag)
        _ = try db.save(Document(id: "B", fields: ["v": 1]))
        var second = try #require(try db.document(id: "B"))
        second["v"] = 2
        let updated = try db.save(second)
        let two = try #require(try store.engine.snapshot().get(DocumentLayout.documentKey(db.state.id, "B")))
        #expect(two.first == DocumentRecord.treeFlag && updated.metadata.revision == 2)
        try store.close()

        // Reopened: the same ids; the inspector and the verifier read both forms.
        store = try Store.open(at: dir.url, options: options)
        db = try store.documents("main")
        #expect(try db.document(id: "A-1") == saved)
        #expect(try db.document(id: "r")?.metadata.revisionID == RevisionID("1-aa"))
        #expect(try db.document(id: "B")?.metadata.revisionID == updated.metadata.revisionID)
        let history = try #require(try db.replicatedRevision(id: "B", revision: updated.metadata.revisionID!, historyLimit: 5))
        #expect(history.history.count == 2)
        try store.close()
        let dumped = try DocumentInspector.dump(database: "main", ofStoreAt: dir.url.path).documents
        let first = try #require(dumped.first { $0.id == "A-1" })
        #expect(first.revisionID == "1-" + digest && first.revisionsKept == 1 && first.conflicts.isEmpty && first.fields == ["n": 2])
        #expect(dumped.first { $0.id == "B" }?.revisionsKept == 2)
        #expect(try StoreVerifier.verify(storeAt: dir.url.path).faults.isEmpty)
    }

    @Test("records with flag bit 4 are refused as corrupt when they also have a tree, a revision 0 or a short digest", arguments: [
        // Both flag bits 3 and 4.
        [DocumentRecord.treeFlag | DocumentRecord.singleRevisionFlag, 1, 1] + [UInt8](repeating: 0, count: 32) + [0],
        // Revision 0.
        [DocumentRecord.singleRevisionFlag, 0, 1] + [UInt8](repeating: 0, count: 32) + [0],
        // Cut short in the digest.
        [DocumentRecord.singleRevisionFlag, 1, 1] + [UInt8](repeating: 0, count: 20),
    ] as [[UInt8]])
    func craftedSingleRevisions(value: [UInt8]) throws {
        #expect {
            try value.withUnsafeBytes { _ = try DocumentRecord(decoding: $0, documentID: "doc-8") }
        } throws: { error in
            guard case StrataError.corrupted(let file, _, _) = error else { return false }
            return file.contains("doc-8")
        }
    }

    @Test("a database of layout 1 or 2 is rewritten as layout 3 when opened; an unknown layout is refused")
    func layoutVersions() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        func setLayout(_ payload: [UInt8]) throws {
            let store = try Store.open(at: dir.url, options: documentStoreOptions())
            defer { try? store.close() }
            let db = try store.documents("main")
            var batch = CommitBatch()
            Catalog.put(CatalogEntry(id: db.state.id, payload: payload), kind: .documentDatabase, name: "main", into: &batch.records)
            try store.engine.commit(batch)
        }
        func storedLayout() throws -> [UInt8]? {
            let store = try Store.open(at: dir.url, options: documentStoreOptions())
            defer { try? store.close() }
            return try store.catalog.entry(kind: .documentDatabase, name: "main")?.payload
        }
        for layout: UInt8 in [1, 2] {
            try setLayout([layout])
            #expect(try storedLayout() == [layout])
            do {
                let store = try Store.open(at: dir.url, options: documentStoreOptions())
                defer { try? store.close() }
                _ = try store.documents("main")
            }
            #expect(try storedLayout() == [3])
        }
        try setLayout([4])
        let store = try Store.open(at: dir.url, options: documentStoreOptions())
        defer { try? store.close() }
        #expect {
            _ = try store.documents("main")
        } throws: { error in
            guard case StrataError.unsupportedFormatVersion(_, 4) = error else { return false }
            return true
        }
    }

    @Test("model: random saves, deletes and partial exchanges on three replicas converge once everything is exchanged",
          arguments: [1, 2, 3, 4] as [UInt64])
    func convergence(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var random = SplitMix64(seed: seed)
        var stores: [Store] = []
        var dbs: [DocumentDatabase] = []
        let index = DocumentIndex(name: "n", version: "1", map: { doc, emit in emit(doc["n"], doc["r"]) })
        for name in ["a", "b", "c"] {
            let (s, d) = try Self.open(dir, name, indexes: [index])
            stores.append(s)
            dbs.append(d)
        }
        defer { for s in stores { try? s.close() } }
        let ids = (0..<12).map { "doc\($0)" }
        for step in 0..<300 {
            let r = Int(random.next() % 3)
            let id = ids[Int(random.next() % UInt64(ids.count))]
            switch random.next() % 10 {
            case 0..<6:
                var doc = Document(id: id, fields: ["n": .int(Int64(random.next() % 5)), "r": .int(Int64(r)), "step": .int(Int64(step))])
                doc.metadata.channels = ["c\(random.next() % 2)"]
                try dbs[r].save(doc)
            case 6:
                if try dbs[r].document(id: id) != nil { try dbs[r].delete(id: id) }
            case 7:
                if let winner = try dbs[r].document(id: id), !(try dbs[r].conflicts(id: id)).isEmpty {
                    try dbs[r].resolveConflict(id: id, with: winner)
                }
            default:
                try exchangeRevisions(from: dbs[r], to: dbs[(r + 1 + Int(random.next() % 2)) % 3])
            }
        }
        for _ in 0..<2 {
            for from in 0..<3 { for to in 0..<3 where from != to { try exchangeRevisions(from: dbs[from], to: dbs[to]) } }
        }
        for id in ids {
            let winners = try dbs.map { try $0.document(id: id) }
            #expect(winners[0] == winners[1] && winners[1] == winners[2], "\(id)")
            let conflicts = try dbs.map { Set(try $0.conflicts(id: id).map(\.metadata.revisionID)) }
            #expect(conflicts[0] == conflicts[1] && conflicts[1] == conflicts[2], "\(id)")
        }
        // Index rows follow the winners.
        for db in dbs {
            let rows = try db.query("n", .all).rows.map { "\($0.documentID ?? "")=\($0.key)" }.sorted()
            let expected = try ids.compactMap { id in try db.document(id: id).map { "\(id)=\($0["n"]!)" } }.sorted()
            #expect(rows == expected)
        }
    }
}
