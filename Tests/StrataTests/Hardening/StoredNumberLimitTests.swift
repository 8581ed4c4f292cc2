import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: no trap from a stored number, and the legal limits never brick a store. Every store
// here is crafted with valid checksums (records through the commit path, files re-encoded by
// their writers' encoders), so only the rule under test can refuse it.

@Suite struct StoredNumberLimitTests {
    private static let two63 = Hardening.two63

    // MARK: Push numbers

    @Test("a push device key (17, 1, 2^64 − 1) or subscription key (17, 2, 2^64 − 1) in the log: open refuses, changing nothing")
    func pushKeysAtTheTop() throws {
        let base = try Hardening.pushStore()
        defer { base.remove() }
        let device = try #require(try Hardening.stored(base, PushLayout.deviceKey(1)))
        let subscription = try #require(try Hardening.stored(base, PushLayout.subscriptionKey(1)))
        for (key, value) in [(PushLayout.deviceKey(.max), device), (PushLayout.subscriptionKey(.max), subscription),
                             (PushLayout.notificationKey(.max), [])] {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.writeRaw(dir, [(key, value)])
            let e = try Hardening.expectRefusedOpen(dir)
            guard case .corrupted(_, _, let reason)? = e else {
                Issue.record("expected .corrupted for \(TupleKey.describe(key)), got \(String(describing: e))")
                continue
            }
            #expect(reason.contains("exceeds the limit"), "\(reason)")
        }
    }

    @Test("push counters at 2^64 − 1 are refused at open; at the limit 2^63 every new number is refused and nothing is written")
    func pushCounters() throws {
        let base = try Hardening.pushStore()
        defer { base.remove() }
        func counters(_ d: UInt64, _ s: UInt64, _ n: UInt64) -> [UInt8] {
            var w = PushLayout.Writer()
            w.varint(d)
            w.varint(s)
            w.varint(n)
            return w.bytes
        }
        do {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.writeRaw(dir, [(PushLayout.countersKey, counters(.max, .max, .max))])
            guard case .corrupted? = try Hardening.expectRefusedOpen(dir) else {
                Issue.record("counters of 2^64 − 1: expected .corrupted")
                return
            }
        }
        let dir = try Hardening.copy(base)
        defer { dir.remove() }
        try Hardening.writeRaw(dir, [(PushLayout.countersKey, counters(Self.two63, Self.two63, Self.two63))])
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let series = try store.timeSeries("AAPL", of: Double.self)  // made before: its catalog entry is a write
        let before = try Hardening.files(dir)
        let sequence = store.engine.statistics.lastSequence
        func expectRefused(_ what: String, _ body: () throws -> Void) {
            let e = Hardening.typed(what, body)
            guard case .invalidArgument(_, let m)? = e else {
                Issue.record("\(what): expected .invalidArgument, got \(String(describing: e))")
                return
            }
            #expect(m.contains("limit"), "\(m)")
        }
        expectRefused("register") { _ = try push.register(PushDevice(platform: .google, applicationID: "a", deviceToken: "t")) }
        var s = PushSubscription(mode: .distinct, items: ["B"], fields: ["value"])
        s.notificationFormat = PushFormat.google(body: "${value}")
        expectRefused("subscribe") { _ = try push.subscribe(s, device: "D1") }
        // An update of a subscribed item needs a notification number: the update is refused whole.
        expectRefused("append") { try series.append(1) }
        #expect(store.engine.statistics.lastSequence == sequence)
        #expect(try Hardening.files(dir) == before)
        // What is there still works.
        #expect(try push.subscriptions(device: "D1").count == 1)
        _ = try push.register(PushDevice(platform: .apple, applicationID: "com.example", deviceToken: "ab12"))
    }

    // MARK: Change feed

    /// A store with one document saved in database "db", and the database's catalog id.
    private static func documentStore() throws -> (TemporaryDirectory, UInt64) {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.documents("db").save(Document(id: "a", fields: ["n": .int(1)]))
        let prefix = Keyspace.documentChanges.prefix
        let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        #expect(try cursor.next())
        let key = cursor.withKey { Array($0) }
        var d = TupleKeyDecoder(key[...])
        _ = try d.nextUInt()
        return (dir, try d.nextUInt())
    }

    @Test("a change-feed key (…, 2^64 − 2): opening the database refuses it; at 2^63 − 1 a save and a delete are refused, nothing written")
    func changeFeedKeys() throws {
        let (base, id) = try Self.documentStore()
        defer { base.remove() }
        do {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.writeRaw(dir, [(DocumentLayout.changeKey(id, .max - 1),
                                          DocumentLayout.changeValue(id: "z", isDeletion: false, revision: 1))])
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            let e = Hardening.typed("documents") {
                _ = try store.documents("db").save(Document(id: "b", fields: [:]))
            }
            guard case .corrupted(_, _, let reason)? = e else {
                Issue.record("expected .corrupted, got \(String(describing: e))")
                return
            }
            #expect(reason.contains("exceeds the limit"))
        }
        let dir = try Hardening.copy(base)
        defer { dir.remove() }
        try Hardening.writeRaw(dir, [(DocumentLayout.changeKey(id, Self.two63 - 1),
                                      DocumentLayout.changeValue(id: "z", isDeletion: false, revision: 1))])
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try store.documents("db")
        let before = try Hardening.files(dir)
        for (what, body) in [("save", { _ = try db.save(Document(id: "b", fields: [:])) }),
                             ("save existing", { _ = try db.save(Document(id: "a", fields: ["n": .int(2)])) }),
                             ("delete", { try db.delete(id: "a") })] as [(String, () throws -> Void)] {
            guard case .invalidArgument? = Hardening.typed(what, body) else {
                Issue.record("\(what): expected .invalidArgument")
                continue
            }
        }
        #expect(try Hardening.files(dir) == before)
        #expect(try db.document(id: "a")?.fields == ["n": .int(1)])
    }

    // MARK: Engine counters

    @Test("lastSequence at 2^63 − 1: a put is refused, nothing written; the store opens again with its data")
    func lastSequenceAtTheLimit() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            try store.put(Array("k".utf8), Array("v".utf8))
            try store.compact()
            try store.close()
        }
        try Hardening.rewriteManifest(dir) { $0.lastSequence = Self.two63 - 1 }
        do {
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            let before = try Hardening.files(dir)
            guard case .invalidArgument(_, let m)? = Hardening.typed("put", { try store.put(Array("x".utf8), Array("y".utf8)) }) else {
                Issue.record("put: expected .invalidArgument")
                return
            }
            #expect(m.contains("sequence number"))
            var batch = WriteBatch()
            batch.put(Array("x".utf8), Array("y".utf8))
            batch.delete(Array("k".utf8))
            #expect(Hardening.typed("write") { try store.write(batch) } != nil)
            #expect(try Hardening.files(dir) == before)
            // A batch with no operation takes no number.
            try store.write(WriteBatch())
        }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(try store.get(Array("k".utf8)) == Array("v".utf8))
        #expect(try store.get(Array("x".utf8)) == nil)
    }

    @Test("a manifest nextFileNumber of 2^63 − 1, or a stray log or segment numbered 2^63 − 1: every open refuses with a typed error, changing nothing")
    func fileNumbersAtTheLimit() throws {
        let crafts: [(String, (TemporaryDirectory) throws -> Void)] = [
            ("nextFileNumber", { dir in try Hardening.rewriteManifest(dir) { $0.nextFileNumber = Self.two63 - 1 } }),
            ("stray log", { dir in try dir.write(FileNames.log(Self.two63 - 1), LogFormat.header(logNumber: Self.two63 - 1)) }),
            ("stray segment", { dir in try dir.write(FileNames.segment(Self.two63 - 1), Array(repeating: 7, count: 100)) }),
        ]
        for (what, craft) in crafts {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            do {
                let store = try Store.open(at: dir.url)
                try store.put(Array("k".utf8), Array("v".utf8))
                try store.close()
            }
            try craft(dir)
            // Twice: the first refusal must leave the store as the second finds it.
            for attempt in 1...2 {
                let e = try Hardening.expectRefusedOpen(dir)
                guard case .invalidArgument(_, let m)? = e else {
                    Issue.record("\(what), open \(attempt): expected .invalidArgument, got \(String(describing: e))")
                    continue
                }
                #expect(m.contains("file number"), "\(what): \(m)")
            }
        }
    }

    @Test("nextFileNumber 2^63 − 2: a flush that needs a segment and a new log is refused, and the store reopens whole")
    func lastFileNumber() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            try store.put(Array("k".utf8), Array("v".utf8))
            try store.close()
        }
        try Hardening.rewriteManifest(dir) { $0.nextFileNumber = Self.two63 - 2 }
        do {
            let store = try Store.open(at: dir.url)
            try store.put(Array("k2".utf8), Array("v2".utf8))
            guard case .invalidArgument? = Hardening.typed("compact", { try store.compact() }) else {
                Issue.record("compact: expected .invalidArgument")
                try? store.close()
                return
            }
            try store.close()
        }
        // The open appended to log 1 and took no number (FORMAT.md 4.5, step 9); the compaction's
        // rotation took the last one for a new log, and its flush was refused a segment. The
        // manifest never names a number past the limit, and the next open, which counts the
        // numbers of every file it finds, refuses because none is left, changing nothing.
        let m = try Manifest.decode(try dir.read(FileNames.manifest), file: FileNames.manifest)
        #expect(m.nextFileNumber == Self.two63 - 2)
        guard case .invalidArgument? = try Hardening.expectRefusedOpen(dir) else {
            Issue.record("reopen: expected .invalidArgument")
            return
        }
    }

    // MARK: Catalog

    @Test("a collection id counter at 2^63 − 1: the last id is given, then creating a collection is refused (nothing written) and the store keeps working")
    func catalogCounter() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            _ = try store.timeSeries("first", of: Double.self)
            try store.close()
        }
        var counter: [UInt8] = []
        Varint.append(Self.two63 - 1, to: &counter)
        try Hardening.writeRaw(dir, [(Catalog.counterKey, counter)])
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.timeSeries("last", of: Double.self).append(1)
        #expect(try store.catalog.entry(kind: .timeSeries, name: "last")?.id == Self.two63 - 1)
        let before = try Hardening.files(dir)
        guard case .invalidArgument? = Hardening.typed("create", { _ = try store.channel("more", of: String.self) }) else {
            Issue.record("expected .invalidArgument")
            return
        }
        #expect(try Hardening.files(dir) == before)
        _ = try store.timeSeries("first", of: Double.self).append(2)
        _ = try store.timeSeries("last", of: Double.self).append(3)
        // A counter past the limit (what the old writer could leave) is refused as corruption.
        var bad: [UInt8] = []
        Varint.append(UInt64.max - 1, to: &bad)
        var batch = WriteBatch()
        batch.putRaw(Catalog.counterKey, bad)
        _ = try store.engine.commit(CommitBatch(records: batch))
        guard case .corrupted? = Hardening.typed("create", { _ = try store.channel("more", of: String.self) }) else {
            Issue.record("counter 2^64 − 2: expected .corrupted")
            return
        }
    }
}
