import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: `strata-dump` reading hostile files prints a finding and never dies — properties or
// manifest counts of 2^64 − 1, a stored time of 2^63 − 1 ms, a NaN or infinite stored date.

@Suite struct DumpNeverTrapsTests {
    /// A closed store with one segment of a few key-value records.
    private static func segmentStore() throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        for i in 0..<10 { try store.put(Array("k\(i)".utf8), Array("v".utf8)) }
        try store.compact()
        return dir
    }

    @Test("summary: properties counts of 2^64 − 1 that overflow when added up are a finding, not a trap")
    func summaryPropertiesOverflow() throws {
        let dir = try Self.segmentStore()
        defer { dir.remove() }
        let segment = try #require(Hardening.segments(dir).first)
        try Hardening.rewriteProperties(dir, segment: segment) { p in
            p.keyBytes = .max
            p.valueBytes = .max
            // Two summaries of one keyspace, each claiming 2^64 − 1 key bytes: their sum overflows.
            var first = p.keyspaces[0], second = p.keyspaces[0]
            first.largestKey = first.smallestKey
            first.keyBytes = .max
            second.keyBytes = .max
            p.keyspaces = [first, second]
        }
        let summary = try StoreInspector.summary(ofStoreAt: dir.path)
        #expect(summary.problems.contains { $0.file == segment && $0.message.contains("overflow") }, "\(summary.problems)")
        Hardening.everyDumpVerb(dir)
    }

    @Test("summary: manifest entries whose records add up past 2^64 − 1 are a finding, not a trap")
    func summaryManifestOverflow() throws {
        let dir = try Self.segmentStore()
        defer { dir.remove() }
        try Hardening.rewriteManifest(dir) { m in
            var s = m.runs[0][0]
            s.records = .max
            m.runs = [[s, s]]
        }
        let summary = try StoreInspector.summary(ofStoreAt: dir.path)
        #expect(summary.problems.contains { $0.message.contains("overflow") }, "\(summary.problems)")
        Hardening.everyDumpVerb(dir)
    }

    @Test("push: a stored time of 2^63 − 1 ms (or −2^63) prints as itself, not a trap")
    func pushTimesAtTheLimits() throws {
        for t in [Int64.max, Int64.min] {
            let dir = try Hardening.pushStore()
            defer { dir.remove() }
            var w = PushLayout.Writer()
            w.varint(1)
            w.varint(1)
            w.u8(1)
            w.string("com.example")
            w.string("ab12")
            w.string("AAPL")
            w.string("{}")
            w.signed(t)
            var subscription = try #require(try Hardening.stored(dir, PushLayout.subscriptionKey(1)))
            // The status time is the record's last field (a zigzag varint): replace it.
            subscription.removeLast()
            while let last = subscription.last, last & 0x80 != 0 { subscription.removeLast() }
            Varint.append(ZigZag.encode(t), to: &subscription)
            try Hardening.writeRaw(dir, [(PushLayout.notificationKey(1), w.bytes), (PushLayout.subscriptionKey(1), subscription)])
            let push = try PushInspector.push(ofStoreAt: dir.path)
            #expect(push.outbox.first?.created == t)
            #expect(push.subscriptions.first?.statusTime == t)
            Hardening.everyDumpVerb(dir)
        }
    }

    @Test("documents: a NaN or infinite stored date is a finding naming the document, not a trap")
    func documentDates() throws {
        for bad in [Double.nan, .infinity, -.infinity] {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            var key: [UInt8] = []
            do {
                let store = try Store.open(at: dir.url)
                defer { try? store.close() }
                _ = try store.documents("db").save(Document(id: "a", fields: ["n": .int(1)]))
                let prefix = Keyspace.documents.prefix
                let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
                #expect(try cursor.next())
                key = cursor.withKey { Array($0) }
            }
            var value = try #require(try Hardening.stored(dir, key))
            // flags, revision 1, change sequence 1, then the two dates (FORMAT.md 16.2).
            #expect(value[1] == 1 && value[2] == 1)
            for at in [3, 11] { for i in 0..<8 { value[at + i] = UInt8(truncatingIfNeeded: bad.bitPattern >> (8 * UInt64(i))) } }
            try Hardening.writeRaw(dir, [(key, value)])
            let e = Hardening.typed("dump") { _ = try DocumentInspector.dump(database: "db", ofStoreAt: dir.path) }
            guard case .corrupted(let what, _, _)? = e else {
                Issue.record("\(bad): expected .corrupted, got \(String(describing: e))")
                continue
            }
            #expect(what.contains("\"a\""))
            Hardening.everyDumpVerb(dir)
        }
    }
}
