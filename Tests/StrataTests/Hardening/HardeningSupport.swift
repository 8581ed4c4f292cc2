import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Crafting stores for the hardening tests (issue 23): records written through the engine's commit
// path (so every log record's checksums are valid), files patched with their checksums
// recomputed, and the byte-for-byte check that a refused open changed nothing. (The helpers of
// BadInputTests, RecoveryTests and FormatRulesTests are private to their files.)

enum Hardening {
    static let two63: UInt64 = 1 << 63
    /// The numbers every numeric field is tried with.
    static let extremes: [UInt64] = [0, 1, two63 - 1, two63, .max]

    /// Every file of the store directory but `LOCK` (whose content is for people only), by name.
    static func files(_ dir: TemporaryDirectory) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in dir.list() where name != FileNames.lock { out[name] = try dir.read(name) }
        return out
    }

    /// Opens the store expecting a refusal: the error (always a `StrataError`), after checking
    /// that every file is as it was, byte for byte, with the same names.
    @discardableResult
    static func expectRefusedOpen(_ dir: TemporaryDirectory, options: StoreOptions = StoreOptions(),
                                  sourceLocation: SourceLocation = #_sourceLocation) throws -> StrataError? {
        let before = try files(dir)
        var refusal: StrataError?
        do {
            let store = try Store.open(at: dir.url, options: options)
            try? store.close()
            Issue.record("the open succeeded", sourceLocation: sourceLocation)
        } catch let e as StrataError {
            refusal = e
        } catch {
            Issue.record("not a StrataError: \(error)", sourceLocation: sourceLocation)
        }
        let after = try files(dir)
        #expect(after.keys.sorted() == before.keys.sorted(), "file names changed", sourceLocation: sourceLocation)
        for (name, bytes) in before where after[name] != bytes {
            Issue.record("\(name) changed (\(bytes.count) → \(after[name]?.count ?? -1) bytes)", sourceLocation: sourceLocation)
        }
        return refusal
    }

    /// Opens the store, commits `records` (stored keys and values, as given) in one batch, closes.
    static func writeRaw(_ dir: TemporaryDirectory, _ records: [([UInt8], [UInt8])],
                         options: StoreOptions = StoreOptions()) throws {
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        var batch = WriteBatch()
        for (k, v) in records { batch.putRaw(k, v) }
        _ = try store.engine.commit(CommitBatch(records: batch))
    }

    /// A closed store with device D1 (Apple, `com.example`, `ab12`) and subscription S1 (MERGE of
    /// `value` of the series `AAPL`), as the API writes them.
    static func pushStore(options: StoreOptions = StoreOptions()) throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .apple, applicationID: "com.example", deviceToken: "ab12"))
        var subscription = PushSubscription(mode: .merge, items: ["AAPL"], fields: ["value"])
        subscription.notificationFormat = PushFormat.apple(alert: "AAPL ${value}")
        _ = try push.subscribe(subscription, device: device.id)
        return dir
    }

    /// A copy of `source` in a new directory.
    static func copy(_ source: TemporaryDirectory) throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        for (name, bytes) in try files(source) { try dir.write(name, bytes) }
        return dir
    }

    /// A closed store whose database `db` holds document `a` (`{"n": 1}`), and that document's
    /// record key (FORMAT.md §16.2).
    static func oneDocumentStore() throws -> (dir: TemporaryDirectory, key: [UInt8]) {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.documents("db").save(Document(id: "a", fields: ["n": .int(1)]))
        let prefix = Keyspace.documents.prefix
        let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        guard try cursor.next() else { throw StrataError.notFound(kind: .document, name: "a", reason: "no document record") }
        return (dir, cursor.withKey { Array($0) })
    }

    /// The stored value of `key` in a closed store (opened and closed for it).
    static func stored(_ dir: TemporaryDirectory, _ key: [UInt8]) throws -> [UInt8]? {
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        return try store.engine.get(key)
    }

    /// Runs `body`; a thrown error must be a `StrataError` (a refusal), never anything else.
    /// Returns the error, if any.
    @discardableResult
    static func typed(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> StrataError? {
        do {
            try body()
            return nil
        } catch let e as StrataError {
            return e
        } catch {
            Issue.record("\(what): not a StrataError: \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// Every verb of `strata-dump` on a closed store, through the inspectors it prints: each may
    /// report a finding (a thrown `StrataError` or `InspectionError`, or faults in its report)
    /// but must not trap.
    static func everyDumpVerb(_ dir: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) {
        func run(_ what: String, _ body: () throws -> Void) {
            do { try body() } catch is StrataError {} catch is InspectionError {} catch {
                Issue.record("strata-dump \(what): unexpected error \(error)", sourceLocation: sourceLocation)
            }
        }
        run("summary") { _ = try StoreInspector.summary(ofStoreAt: dir.path) }
        run("verify") { _ = try StoreVerifier.verify(storeAt: dir.path) }
        for name in dir.list() {
            switch FileNames.parse(name) {
            case .log:
                run("log") { _ = try LogInspector.dump(logAt: dir.file(name), includeOperations: true) }
                run("verify log") { _ = try StoreVerifier.verify(fileAt: dir.file(name)) }
            case .segment:
                run("segment") { _ = try SegmentInspector.dump(segmentAt: dir.file(name), includeRecords: true) }
                run("verify segment") { _ = try StoreVerifier.verify(fileAt: dir.file(name)) }
            default: break
            }
        }
        run("push") { _ = try PushInspector.push(ofStoreAt: dir.path) }
        run("security") { _ = try SecurityInspector.policy(ofStoreAt: dir.path) }
        run("series") {
            for s in try SeriesInspector.series(ofStoreAt: dir.path) {
                run("series dump") { _ = try SeriesInspector.dump(series: s.path, ofStoreAt: dir.path) }
            }
        }
        run("channels") {
            for c in try ChannelInspector.channels(ofStoreAt: dir.path) {
                run("channel dump") { _ = try ChannelInspector.dump(channel: c.name, ofStoreAt: dir.path) }
            }
        }
        run("documents") {
            for d in try DocumentInspector.databases(ofStoreAt: dir.path) {
                run("documents dump") { _ = try DocumentInspector.dump(database: d.name, ofStoreAt: dir.path) }
            }
        }
        // What the kinds' verbs print, as text and as JSON (the rendering does arithmetic too).
        func printed<I: CollectionInspector>(_ kind: I.Type, _ collections: () throws -> [String]) {
            for json in [false, true] {
                run("\(I.commandName) printed") { _ = try I.run(storeAt: dir.path, arguments: CollectionInspectorArguments(), json: json) }
                run("\(I.commandName) collections") {
                    for c in try collections() {
                        run("\(I.commandName) \(c) printed") {
                            _ = try I.run(storeAt: dir.path, arguments: CollectionInspectorArguments(collection: c), json: json)
                        }
                    }
                }
            }
        }
        printed(PushInspector.self) { [] }
        printed(SecurityInspector.self) { [] }
        printed(SeriesInspector.self) { try SeriesInspector.series(ofStoreAt: dir.path).map(\.path) }
        printed(ChannelInspector.self) { try ChannelInspector.channels(ofStoreAt: dir.path).map(\.name) }
        printed(DocumentInspector.self) { try DocumentInspector.databases(ofStoreAt: dir.path).map(\.name) }
    }

    /// Opens the store of `dir` and then each collection (a refused open, of the store or of a
    /// collection, must leave every byte as it was), reads every collection of the stores of
    /// KeyspaceFuzzTests and LayoutGeneratorTests (the series of `Double` named by `series`,
    /// channel `c` of `String`, database `db` with `indexes`, the security policy; `otherReads`
    /// reads the rest), writes to each, closes, and runs every `strata-dump` verb: any outcome but
    /// a trap, an error that is not typed, or a refused open that changed a byte is fine. Returns
    /// the store open's refusal, if any.
    @discardableResult
    static func exerciseEveryCollection(_ dir: TemporaryDirectory, indexes: [DocumentIndex], series: [String] = ["s"],
                                        otherReads: (Store) throws -> Void = { _ in },
                                        sourceLocation: SourceLocation = #_sourceLocation) throws -> StrataError? {
        let before = try files(dir)
        var store: Store?
        let refusal = typed("open", sourceLocation: sourceLocation) { store = try Store.open(at: dir.url) }
        if let refusal {
            #expect(try files(dir) == before, "refused open (\(refusal)) changed files", sourceLocation: sourceLocation)
        }
        if let store {
            // Each collection's open first: one that is refused (its records are corrupt) must
            // not have written a byte either. (Nothing else writes meanwhile: the base stores
            // are far from a flush.)
            func openCollection(_ what: String, _ body: () throws -> Void) {
                guard let before = try? files(dir) else { return }
                if let refusal = typed("open of \(what)", sourceLocation: sourceLocation, body) {
                    #expect((try? files(dir)) == before, "refused open of \(what) (\(refusal)) changed files",
                            sourceLocation: sourceLocation)
                }
            }
            for path in series { openCollection("series \(path)") { _ = try store.timeSeries(path, of: Double.self) } }
            openCollection("channel c") { _ = try store.channel("c", of: String.self) }
            openCollection("database db") { _ = try store.documents("db", indexes: indexes) }
            openCollection("security policy") { _ = try store.securityPolicy() }
            for path in series {
                typed("series \(path)", sourceLocation: sourceLocation) {
                    let s = try store.timeSeries(path, of: Double.self)
                    _ = try s.query(.values)
                    _ = try s.query(.edits(.all))
                    // Time anchors and spans: differences from the latest timestamp, which a
                    // damaged base can put anywhere.
                    _ = try s.query(.values.fromLast(.seconds(60)))
                    _ = try s.query(.values.from(Date(timeIntervalSince1970: 1_700_000_000)).next(.seconds(3_600)))
                    _ = try s.query(.values.fromLast(5).untilLast(.seconds(1)))
                    _ = try s.query(.edits(.all).from(sequence: 20).previous(.seconds(10)))
                    _ = try s.query(.values.from(sequence: 0).next(.seconds(10)))
                    _ = try s.query(.values.from(Date.distantPast).to(Date.distantFuture))
                    _ = try s.query(.values.fromLast(Int.max).limit(3))
                    _ = try s.append(1)
                }
            }
            typed("channel", sourceLocation: sourceLocation) {
                let ch = try store.channel("c", of: String.self)
                _ = try ch.history()
                _ = try ch.history(start: Timetoken(0), end: Timetoken(.max), limit: 10)
                _ = try ch.messageCount(since: Timetoken(0))
                _ = try ch.history(limit: 5, reverse: true)
                _ = try ch.publish("x")
            }
            typed("documents", sourceLocation: sourceLocation) {
                let db = try store.documents("db", indexes: indexes)
                _ = try db.document(id: "a")
                _ = try db.conflicts(id: "a")
                _ = try db.document(id: "k")
                _ = try db.conflicts(id: "k")
                _ = try db.changes(since: 0)
                _ = try db.localDocument(id: "cp")
                for index in indexes {
                    _ = try db.query(index.name, IndexQuery(.all))
                    var descending = IndexQuery.range(start: .int(5), end: .null)
                    descending.descending = true
                    _ = try db.query(index.name, descending)
                    _ = try db.query(index.name, .keys([.int(1), .string("a")]))
                }
                _ = try db.save(Document(id: "b", fields: ["n": .int(2)]))
                try db.delete(id: "a")
            }
            typed("security", sourceLocation: sourceLocation) {
                _ = try store.securityPolicy()
                _ = try store.setSecurityPolicy(SecurityPolicy())
            }
            typed("scan", sourceLocation: sourceLocation) { _ = try store.scan() }
            typed("other reads", sourceLocation: sourceLocation) { try otherReads(store) }
            try? store.close()
        }
        everyDumpVerb(dir, sourceLocation: sourceLocation)
        return refusal
    }

    /// A u64 as a tuple-encoded unsigned integer element.
    static func uint(_ v: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 9)
        e.append(v)
        return e.bytes
    }
}
