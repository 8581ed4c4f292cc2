import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataEngine

// Issue 23: the record generator of RecordGeneratorTests (RecordLayouts.swift) over the record
// layouts of every keyspace but push — the catalog counter and entries (FORMAT.md §12, §14.1,
// §15.1, §16.1), time-series events, edit events, the edit index and the header fields of a chunk
// of each value column (§14.2, §14.3, §14.6), channel messages and heads (§15.2, §15.3), document
// records with their revision tree, dates, flags, revision, change sequence and attachment list
// (§16.2), attachments (§16.3), change-feed entries (§16.4), index rows of a raw and a unicode
// index (§16.5), conflicting revisions (§16.6), local documents (§16.7) and the security policy
// (§17). Each layout is the record the API stored in the base store, taken apart by the kinds of
// its fields (so the layout is checked to encode exactly as the library does); each field in turn
// takes its variants (0, 1, 2^63 − 1, 2^63, 2^64 − 1 in numbers, NaN and ±∞ in floats, each
// field's own worst case), and so do the key's numbers. The record is written with valid
// checksums, then the store is opened (a refusal must leave every byte as it was), every
// collection read and written, and every `strata-dump` verb run: any outcome but a trap or an
// untyped error is fine, and the valid record must open.

private func tuple(_ build: (inout TupleKeyEncoder) -> Void) -> [UInt8] {
    var e = TupleKeyEncoder()
    build(&e)
    return e.bytes
}

/// The store every case starts from, and the layouts of its records.
private struct LayoutBase: Sendable {
    let dir: TemporaryDirectory
    let catalog: [Layout], series: [Layout], channel: [Layout], documents: [Layout], security: [Layout]
    /// Layouts whose stored record was missing or did not read by its fields' kinds.
    let unread: [String]

    static let index = DocumentIndex(name: "byN", version: "1") { document, emit in emit(document["n"], nil) }
    static let unicodeIndex = DocumentIndex(name: "byU", version: "1", map: { document, emit in emit(document["n"], nil) },
                                            collation: .unicode)

    /// Series `s` of `Double` (events 0…19 in a chunk, event 20 and its edit 21 by `bob` as
    /// event records), series `o` with a retained range of a count and a duration and a
    /// subscription range of a count (one event by `carol`), series `i` of `Int64` and `t` of
    /// `String` (20 events each, in a chunk), channel `c` of `String` with a
    /// retention and a limit and one message with meta and publisher, database `db` with index
    /// `byN` and unicode index `byU`, document `a` (a type, a channel, an attachment), document
    /// `k` with a conflicting replicated revision, local document `cp`, and a
    /// security policy with a role, a path, a principal and a default role.
    static func make() throws -> LayoutBase {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("s", of: Double.self)
        try s.append(contentsOf: (1...20).map(Double.init))
        // Chunks of the other value columns: Int64 (kind 2) and bytes (kind 0).
        let i = try store.timeSeries("i", of: Int64.self)
        let t = try store.timeSeries("t", of: String.self)
        for n in 0..<20 {
            let at = Date(timeIntervalSince1970: 1_700_000_000 + Double(n * n))
            _ = try i.append(Int64(n * n) - 100, timestamp: at, author: n % 3 == 0 ? "x" : "y")
            _ = try t.append(String(repeating: "v", count: n), timestamp: at)
        }
        let o = try store.timeSeries("o", of: Double.self, options: TimeSeriesOptions(
            retainedRange: .limit(100, last: .seconds(30 * 86_400)), subscriptionRange: .limit(5)))
        _ = try o.append(1.5, timestamp: Date(timeIntervalSince1970: 1_700_000_000), author: "carol")
        let c = try store.channel("c", of: String.self, options: ChannelOptions(retention: .seconds(30 * 86_400), limit: 100))
        _ = try c.publish("hello", meta: .object(["k": .int(1)]), publisher: "alice")
        let db = try store.documents("db", indexes: [index, unicodeIndex])
        var document = Document(id: "a", fields: ["n": .int(1)])
        document.metadata.type = "t"
        document.metadata.channels = ["ch"]
        document.attachments["f"] = Attachment(data: Data("abc".utf8), contentType: "text/plain")
        _ = try db.save(document)
        try db.putLocalDocument(id: "cp", .object(["seq": .int(1)]))
        // A conflict: a replicated first revision of `k` beside the local one.
        _ = try db.save(Document(id: "k", fields: ["n": .int(3)]))
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        try db.insertReplicatedRevisions([ReplicatedRevision(
            documentID: "k", revisionID: try #require(RevisionID("1-0")), history: ["0"], isDeleted: false, fields: ["n": .int(4)],
            type: nil, channels: [], createDate: date, lastChange: date, attachments: [:])])
        _ = try db.query("byN", IndexQuery(.all))
        _ = try db.query("byU", IndexQuery(.all))
        _ = try store.setSecurityPolicy(SecurityPolicy(
            roles: ["trader": Role(global: [.viewSecurity], paths: ["prices": [.readTopic, .selectTopic]])],
            principals: ["alice": ["trader"]], defaultRoles: ["trader"]))
        try store.compact()
        _ = try s.append(21)
        _ = try s.edit(originalSequence: 20, value: 22, author: "bob")

        func id(_ kind: CollectionKind, _ name: String) throws -> UInt64 {
            try #require(try store.catalog.entry(kind: kind, name: name)).id
        }
        let sid = try id(.timeSeries, "s"), cid = try id(.channel, "c")
        let intID = try id(.timeSeries, "i"), stringID = try id(.timeSeries, "t")
        let dbid = try id(.documentDatabase, "db"), iid = try id(.documentIndex, "db\0byN"), uid = try id(.documentIndex, "db\0byU")
        var unread: [String] = []
        func layout(_ name: String, _ key: [KeyPart], _ schema: [Field]) -> [Layout] {
            let bytes = Layout(name: name, key: key, fields: []).keyBytes(key)
            guard let stored = try? store.engine.get(bytes), let layout = Layout(name: name, key: key, stored: stored, schema: schema) else {
                unread.append(name)
                return []
            }
            return [layout]
        }
        func catalogKey(_ kind: CollectionKind, _ name: String) -> [KeyPart] {
            [.bytes(Hardening.uint(0)), .number(kind.id), .bytes(tuple { $0.append(name) })]
        }
        let u8 = Field.u8(0), varint = Field.varint(0), string = Field.string(""), rest = Field.rest([])

        let catalog = layout("catalog counter", [.bytes(Hardening.uint(0)), .number(0)], [varint])
            + layout("catalog entry of a time series", catalogKey(.timeSeries, "s"),
                     [varint, u8, string, u8, u8, u8, .signed(0), varint, varint, .names([])])
            + layout("catalog entry of a time series with options", catalogKey(.timeSeries, "o"),
                     [varint, u8, string, u8, varint, varint, u8, varint, u8, .signed(0), varint, varint, .names([])])
            + layout("catalog entry of a channel", catalogKey(.channel, "c"), [varint, u8, string, u8, varint, varint])
            + layout("catalog entry of a database", catalogKey(.documentDatabase, "db"), [varint, u8])
            + layout("catalog entry of an index", catalogKey(.documentIndex, "db\0byN"), [varint, u8, u8, string, u8, u8, varint])
            + layout("catalog entry of a unicode index", catalogKey(.documentIndex, "db\0byU"),
                     [varint, u8, u8, string, u8, u8, .bytes([0, 0, 0, 0]), varint])

        let seriesKey = { (keyspace: UInt64, numbers: [UInt64]) -> [KeyPart] in
            [.bytes(Hardening.uint(keyspace)), .number(sid)] + numbers.map { .number($0) }
        }
        let series = layout("time-series event", seriesKey(2, [20]), [u8, varint, .f64(0)])
            + layout("time-series edit event", seriesKey(2, [21]), [u8, varint, varint, varint, varint, varint, .f64(0)])
            + layout("time-series edit index", seriesKey(8, [20, 21]), [rest])
            // marker, kind, n, first, then the timestamp column's header and first timestamp.
            + layout("time-series chunk", seriesKey(2, [19]), [u8, u8, varint, varint, u8, varint, .signed(0), rest])
            + layout("time-series chunk of Int64", [.bytes(Hardening.uint(2)), .number(intID), .number(19)],
                     [u8, u8, varint, varint, u8, varint, .signed(0), rest])
            + layout("time-series chunk of String", [.bytes(Hardening.uint(2)), .number(stringID), .number(19)],
                     [u8, u8, varint, varint, u8, varint, .signed(0), rest])

        /// The key of the first record under `prefix`, nil if none.
        func firstKey(_ prefix: [UInt8]) -> [UInt8]? {
            guard let cursor = try? store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix)),
                  (try? cursor.next()) == true else { return nil }
            return cursor.withKey { Array($0) }
        }
        var messageKey = TupleKeyDecoder(firstKey(Hardening.uint(3) + Hardening.uint(cid)) ?? [])
        _ = try? messageKey.nextUInt()
        _ = try? messageKey.nextUInt()
        let timetoken = (try? messageKey.nextUInt()) ?? 0
        let channel = layout("channel message", [.bytes(Hardening.uint(3)), .number(cid), .number(timetoken)], [u8, .blob([]), string, rest])
            + layout("channel head", [.bytes(Hardening.uint(10)), .number(cid)], [.u64(0), .u64(0)])

        /// An index row's key: `(5, id)`, the collation key(s) and document id as they are, emit index 0.
        func rowKey(_ index: UInt64) -> [KeyPart] {
            let prefix = Hardening.uint(5) + Hardening.uint(index), emitZero = Hardening.uint(0)
            let key = firstKey(prefix) ?? prefix + emitZero
            return [.bytes(Hardening.uint(5)), .number(index), .bytes(Array(key[prefix.count..<(key.count - emitZero.count)])), .number(0)]
        }
        let conflictPrefix = Hardening.uint(12) + Hardening.uint(dbid)
        let conflictKey = firstKey(conflictPrefix) ?? conflictPrefix
        let documents = layout("document record", [.bytes(Hardening.uint(4)), .number(dbid), .bytes(tuple { $0.append("a") })], [
            u8, varint, varint, .f64(0), .f64(0),
            .bytes(Array(repeating: 0, count: 16)),  // the tree of one revision: its digest alone (flag bit 4)
            string, .names([]),
            varint, string, string, varint, .bytes([0, 0, 0, 0]),  // one attachment: name, type, length, CRC32C
            rest,
        ])
            + layout("attachment", [.bytes(Hardening.uint(7)), .number(dbid), .bytes(tuple { $0.append("a"); $0.append("f") })], [rest])
            + layout("local document", [.bytes(Hardening.uint(13)), .number(dbid), .bytes(tuple { $0.append("cp") })], [rest])
            + layout("change-feed entry", [.bytes(Hardening.uint(6)), .number(dbid), .number(1)], [u8, varint, rest])
            + layout("index row", rowKey(iid), [rest])
            + layout("unicode index row", rowKey(uid), [rest])
            // The losing revision: varint(n) ‖ its record (16.2 without a tree, no type or attachments) ‖ no attachment bytes.
            + layout("conflicting revision", [.bytes(Hardening.uint(12)), .number(dbid), .bytes(Array(conflictKey[conflictPrefix.count...]))],
                     [varint, u8, varint, varint, .f64(0), .f64(0), .names([]), rest])

        let security = layout("security policy", [.bytes(Hardening.uint(16)), .number(0)], [
            u8, varint, varint, string, varint, varint, string, varint, .names([]), varint, string, .names([]), .names([]),
        ])
        return LayoutBase(dir: dir, catalog: catalog, series: series, channel: channel, documents: documents,
                          security: security, unread: unread)
    }

    static let shared: LayoutBase? = try? make()
}

/// A family's cases: every case of every layout of it (no sampling: about 990 cases in all, which
/// run in well under a minute in a debug build).
private func cases(_ family: (LayoutBase) -> [Layout]) -> [CraftedRecord] {
    guard let base = LayoutBase.shared else { return [] }
    return family(base).flatMap(\.cases)
}

@Suite struct LayoutGeneratorTests {
    /// Writes the case's record into a copy of the base store and runs every reader on it.
    private func run(_ c: CraftedRecord) throws {
        let base = try #require(LayoutBase.shared)
        let dir = try Hardening.copy(base.dir)
        defer { dir.remove() }
        try Hardening.writeRaw(dir, [(c.key, c.value)])
        let refusal = try Hardening.exerciseEveryCollection(dir, indexes: [LayoutBase.index, LayoutBase.unicodeIndex],
                                                            series: ["s", "o"]) { store in
            _ = try store.timeSeries("i", of: Int64.self).query(.values.fromLast(.seconds(100)))
            _ = try store.timeSeries("t", of: String.self).query(.edits(.all).fromLast(3))
        }
        if c.label.hasSuffix(" valid") { #expect(refusal == nil, "the valid record is refused: \(String(describing: refusal))") }
    }

    @Test("the base store's records read as their layouts say, field by field, and encode back to the same bytes")
    func layoutsMatchTheStoredRecords() throws {
        let base = try #require(LayoutBase.shared)
        #expect(base.unread.isEmpty, "layouts that do not match the stored record: \(base.unread)")
        #expect(base.catalog.count == 7 && base.series.count == 6 && base.channel.count == 2
                && base.documents.count == 7 && base.security.count == 1)
    }

    @Test("catalog counter and entries of every kind, every field at its extremes: open, reads, writes and every dump verb never trap",
          arguments: cases(\.catalog))
    func catalogRecord(_ c: CraftedRecord) throws { try run(c) }

    @Test("time-series events, edit events, edit index and chunk header, every field at its extremes: never trap",
          arguments: cases(\.series))
    func seriesRecord(_ c: CraftedRecord) throws { try run(c) }

    @Test("channel messages and heads, every field at its extremes: never trap", arguments: cases(\.channel))
    func channelRecord(_ c: CraftedRecord) throws { try run(c) }

    @Test("document records (flags, revision, change sequence, dates, revision tree, attachments), attachments, change feed, raw and unicode index rows, conflicting revisions and local documents at their extremes: never trap",
          arguments: cases(\.documents))
    func documentRecord(_ c: CraftedRecord) throws { try run(c) }

    @Test("the security policy record, every field at its extremes: never trap", arguments: cases(\.security))
    func securityRecord(_ c: CraftedRecord) throws { try run(c) }
}
