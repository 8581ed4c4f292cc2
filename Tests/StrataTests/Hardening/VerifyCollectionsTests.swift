import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: `strata-dump verify` checks the collections' records as the library checks them where
// it reads them — a series chunk of another value kind than its series' type, a conflicting-revision
// entry that is not a losing leaf, a change-feed entry that does not decode, is past the last
// change sequence or names no document — each a fault naming the record.

@Suite struct VerifyCollectionsTests {
    /// A closed store with the Double series `s` (chunked events and one event record) and the
    /// database `db` with documents `a` (change 1) and `b` (change 2).
    private static func store() throws -> (dir: TemporaryDirectory, series: UInt64, database: UInt64) {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let s = try store.timeSeries("s", of: Double.self)
        try s.append(contentsOf: (1...20).map(Double.init))
        let db = try store.documents("db")
        _ = try db.save(Document(id: "a", fields: ["n": .int(1)]))
        _ = try db.save(Document(id: "b", fields: ["n": .int(2)]))
        try store.compact()
        try s.append(21)
        let series = try #require(try store.catalog.entry(kind: .timeSeries, name: "s")).id
        let database = try #require(try store.catalog.entry(kind: .documentDatabase, name: "db")).id
        return (dir, series, database)
    }

    /// The chunk records of series `id`: key and value.
    private static func chunks(_ dir: TemporaryDirectory, series id: UInt64) throws -> [([UInt8], [UInt8])] {
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let prefix = EventRecord.seriesPrefix(id)
        let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var out: [([UInt8], [UInt8])] = []
        while try cursor.next() {
            if SeriesChunk.isChunk(cursor.value) { out.append((cursor.withKey { Array($0) }, Array(cursor.value))) }
        }
        return out
    }

    private static func faults(_ dir: TemporaryDirectory) throws -> [VerifyReport.Fault] {
        try StoreVerifier.verify(storeAt: dir.path).faults
    }

    @Test("a clean store with series and documents verifies clean")
    func clean() throws {
        let (dir, series, _) = try Self.store()
        defer { dir.remove() }
        #expect(!(try Self.chunks(dir, series: series)).isEmpty, "the series has chunks")
        let report = try StoreVerifier.verify(storeAt: dir.path)
        #expect(report.isClean, "\(report.faults)")
    }

    @Test("verify: a chunk of raw bytes or of integers inside a Double series is a fault naming the series and the chunk",
          arguments: [UInt8(0), 2])
    func chunkValueKind(_ kind: UInt8) throws {
        let (dir, series, _) = try Self.store()
        defer { dir.remove() }
        var (key, value) = try #require(try Self.chunks(dir, series: series).first)
        #expect(value[1] == 1, "a Double chunk has value kind 1")
        value[1] = kind
        try Hardening.writeRaw(dir, [(key, value)])
        let faults = try Self.faults(dir)
        #expect(faults.contains { $0.reason.contains("time series \"s\"") && $0.reason.contains("value kind \(kind)")
                    && $0.reason.contains(TupleKey.describe(key)) }, "\(faults)")
        Hardening.everyDumpVerb(dir)
    }

    @Test("verify: a conflicting-revision entry that is not a losing leaf, or of a document that does not exist, is a fault naming it",
          arguments: ["a", "ghost"])
    func conflictEntry(_ document: String) throws {
        let (dir, _, database) = try Self.store()
        defer { dir.remove() }
        let revision = try #require(RevisionID("7-0123456789abcdef0123456789abcdef"))
        try Hardening.writeRaw(dir, [(DocumentLayout.conflictKey(database, document, revision), [0])])
        let faults = try Self.faults(dir)
        #expect(faults.contains { $0.reason.contains("document database \"db\"") && $0.reason.contains(document)
                    && ($0.reason.contains(revision.description) || $0.reason.contains("does not exist")) }, "\(faults)")
        #expect(faults.count == 1, "\(faults)")
        Hardening.everyDumpVerb(dir)
    }

    /// A change-feed entry crafted three ways.
    enum BadChange: String, CaseIterable, Sendable {
        case keyDoesNotDecode, pastLastSequence, documentMissing, valueDoesNotDecode
    }

    @Test("verify: a change-feed entry whose key or value does not decode, past the last change sequence, or of no document is a fault naming it",
          arguments: BadChange.allCases)
    func changeFeed(_ bad: BadChange) throws {
        let (dir, _, database) = try Self.store()
        defer { dir.remove() }
        let record: ([UInt8], [UInt8])
        let expected: String
        switch bad {
        case .keyDoesNotDecode:
            var e = TupleKeyEncoder()
            e.append("x")
            record = (DocumentLayout.changePrefix(database) + e.bytes, DocumentLayout.changeValue(id: "a", isDeletion: false, revision: 1))
            expected = "bad change key"
        case .pastLastSequence:
            record = (DocumentLayout.changeKey(database, 1000), DocumentLayout.changeValue(id: "b", isDeletion: false, revision: 1))
            expected = "change 1000 (document \"b\") is past the database's last change sequence 2"
        case .documentMissing:
            record = (DocumentLayout.changeKey(database, 1), DocumentLayout.changeValue(id: "ghost", isDeletion: false, revision: 1))
            expected = "change 1 names document \"ghost\", which does not exist"
        case .valueDoesNotDecode:
            record = (DocumentLayout.changeKey(database, 1), [0xFF])
            expected = "change 1:"
        }
        try Hardening.writeRaw(dir, [record])
        let faults = try Self.faults(dir)
        #expect(faults.contains { $0.reason.contains("document database \"db\"") && $0.reason.contains(expected) }, "\(faults)")
        Hardening.everyDumpVerb(dir)
    }
}
