import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: records are checked against the type their collection gives them — a chunk's value
// kind against its series' value type (FORMAT.md §14.6), a conflicting-revision entry against the
// document's revision tree (§16.6).

@Suite struct TypeCheckedRecordsTests {
    /// A closed store with series `x` of `Value` whose events 1…10 are one chunk; the chunk's key
    /// and decoded form.
    private static func chunkedSeries<Value: Codable & Sendable>(_ values: [Value]) throws
        -> (TemporaryDirectory, key: [UInt8], chunk: SeriesChunk) {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let series = try store.timeSeries("x", of: Value.self)
        try series.append(contentsOf: values)
        try store.compact()
        let prefix = Keyspace.timeSeriesEvents.prefix
        let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        var found: ([UInt8], SeriesChunk)?
        while try cursor.next() {
            let value = Array(cursor.value)
            if value.first == SeriesChunk.marker { found = (cursor.withKey { Array($0) }, try SeriesChunk.decode(value)) }
        }
        let (key, chunk) = try #require(found)
        #expect(chunk.count == values.count)
        return (dir, key, chunk)
    }

    /// Every read of series `x` as `Value`: must throw .corrupted naming the series.
    private static func expectCorruptReads<Value: Codable & Sendable>(_ dir: TemporaryDirectory, as type: Value.Type,
                                                                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let e = Hardening.typed("open series") {
            let s = try store.timeSeries("x", of: Value.self)
            _ = try s.query(.values)
        }
        guard case .corrupted(let what, _, let reason)? = e else {
            Issue.record("expected .corrupted, got \(String(describing: e))", sourceLocation: sourceLocation)
            return
        }
        #expect(what.contains("\"x\"") && reason.contains("value kind"), "\(what): \(reason)", sourceLocation: sourceLocation)
    }

    @Test("a chunk of integer or raw-bytes kind inside a Double series, or of doubles inside an Int64 series: every read refuses it")
    func chunkKindMustMatchTheSeries() throws {
        let doubles = (1...10).map { Double($0) + 0.5 }
        let (base, key, chunk) = try Self.chunkedSeries(doubles)
        defer { base.remove() }
        let bits: [UInt64] = doubles.map(\.bitPattern)
        for values in [SeriesChunk.Values.integers(bits.map { Int64(bitPattern: $0) }),
                       .bytes(bits.map { b in (0..<8).map { UInt8(truncatingIfNeeded: b >> (8 * UInt64($0))) } })] {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            var forged = chunk
            forged.values = values
            try Hardening.writeRaw(dir, [(key, try forged.encode())])
            try Self.expectCorruptReads(dir, as: Double.self)
            Hardening.everyDumpVerb(dir)
        }

        let (ints, intKey, intChunk) = try Self.chunkedSeries((1...10).map { Int64($0) })
        defer { ints.remove() }
        var forged = intChunk
        forged.values = .doubles((1...10).map { Double($0) })
        try Hardening.writeRaw(ints, [(intKey, try forged.encode())])
        try Self.expectCorruptReads(ints, as: Int64.self)
    }

    @Test("a chunk of the series' own kind reads back")
    func rightKindReads() throws {
        let (dir, _, _) = try Self.chunkedSeries((1...10).map { Double($0) })
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(try store.timeSeries("x", of: Double.self).query(.values).events.map(\.value) == (1...10).map { Double($0) })
    }

    @Test("a conflicting-revision entry whose revision is not a losing leaf (the winner, or one the tree does not hold): conflicts and writes refuse it")
    func conflictEntryMustBeALosingLeaf() throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        var id: UInt64 = 0
        var winner = ""
        do {
            let store = try Store.open(at: base.url)
            defer { try? store.close() }
            let saved = try store.documents("db").save(Document(id: "a", fields: ["n": .int(1)]))
            winner = saved.metadata.revisionID!.description
            let prefix = Keyspace.documentChanges.prefix
            let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
            #expect(try cursor.next())
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[prefix.count...])
            id = try d.nextUInt()
        }
        for revision in [winner, "1-abc", "7-ffff"] {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            let r = try #require(RevisionID(revision))
            try Hardening.writeRaw(dir, [(DocumentLayout.conflictKey(id, "a", r), [0])])
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            let db = try store.documents("db")
            guard case .corrupted(_, _, let reason)? = Hardening.typed("conflicts", { _ = try db.conflicts(id: "a") }) else {
                Issue.record("\(revision): conflicts: expected .corrupted")
                continue
            }
            #expect(reason.contains("not a losing leaf"), "\(reason)")
            #expect(Hardening.typed("resolve") { _ = try db.resolveConflict(id: "a", with: Document(id: "a", fields: [:])) } != nil)
        }
    }
}
