import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The collection kinds' `strata-dump` views (`CollectionInspector`), registered in
// `StoreCollections.inspectors`, and the one generic subcommand the tool makes of each.

/// A closed store with a collection of every kind, a document index, push records and a policy.
func storeWithEveryKind(in dir: URL) throws {
    var options = StoreOptions(durability: .buffered)
    options.principal = "ann"
    options.clock = { Date(timeIntervalSince1970: 1_700_000_000) }
    let store = try Store.open(at: dir, options: options)
    let prices = try store.timeSeries("prices/AAPL", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(10)))
    try prices.append(contentsOf: [101.5, 102, 103])
    try prices.edit(originalSequence: 1, value: 99)
    _ = try store.timeSeries("empty", of: String.self)
    let chat = try store.channel("chat", of: JSON.self)
    try chat.publish(["text": "hi"], meta: ["lang": "en"], publisher: "alice")
    try chat.publish(["text": "yo"])
    let db = try store.documents("inv", indexes: [
        DocumentIndex(name: "cost", version: "7", map: { doc, emit in if let c = doc["c"] { emit(c, doc["n"]) } }, reduce: .sum)
    ])
    try db.save(Document(id: "a", fields: ["c": 5, "n": "A"]))
    try db.save(Document(id: "b", fields: ["c": 2]))
    let push = try store.pushNotifications()
    let phone = try push.register(PushDevice(platform: .apple, applicationID: "com.example.stocks", deviceToken: "a1b2"))
    var merge = PushSubscription(mode: .merge, items: ["prices/AAPL"], fields: ["value"])
    merge.notificationFormat = PushFormat.apple(alert: "AAPL ${value}", badge: "AUTO")
    _ = try push.subscribe(merge, device: phone.id)
    try prices.append(104)
    var policy = SecurityPolicy()
    policy.roles["trader"] = Role(global: [.viewSecurity], paths: ["prices": [.readTopic]])
    policy.principals["alice"] = ["trader"]
    try store.setSecurityPolicy(policy)
    try store.close()
}

@Suite struct CollectionInspectorTests {
    @Test("every registered kind has its own subcommand name and runs on an empty store, as text and as JSON")
    func everyKindOnAnEmptyStore() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Store.open(at: dir.url).close()
        let names = StoreCollections.inspectors.map { $0.commandName }
        #expect(Set(names).count == names.count, "\(names)")
        #expect(Set(names).isDisjoint(with: ["summary", "log", "segment", "verify"]), "\(names)")
        #expect(Set(names) == ["series", "channels", "documents", "push", "security"])
        for inspector in StoreCollections.inspectors {
            let arguments = try inspector.validated(CollectionInspectorArguments())
            let text = try inspector.run(storeAt: dir.path, arguments: arguments, json: false)
            #expect(!text.isEmpty && text.hasSuffix("\n"), "\(inspector.commandName): \(text)")
            let json = try inspector.run(storeAt: dir.path, arguments: arguments, json: true)
            #expect(json.hasSuffix("\n"), "\(inspector.commandName)")
            #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil, "\(inspector.commandName): \(json)")
        }
    }

    @Test("arguments a kind does not accept, or accepts with other values, are usage errors; defaults are applied")
    func validation() throws {
        func message(_ inspector: any CollectionInspector.Type, _ arguments: CollectionInspectorArguments) -> String? {
            do {
                _ = try inspector.validated(arguments)
                return nil
            } catch let error as CollectionInspectorUsageError {
                return error.message
            } catch {
                return "unexpected \(error)"
            }
        }
        #expect(message(SecurityInspector.self, .init(limit: 3)) == "Unknown option '--limit'")
        #expect(message(PushInspector.self, .init(index: "i")) == "Unknown option '--index'")
        #expect(message(SeriesInspector.self, .init(principal: "p")) == "Unknown option '--principal'")
        #expect(message(PushInspector.self, .init(collection: "x")) == "Unexpected argument 'x'")
        #expect(message(SeriesInspector.self, .init(limit: 0)) == "--limit must be at least 1")
        #expect(message(ChannelInspector.self, .init(collection: "c", limit: 0)) == "--limit must be at least 1")
        #expect(message(DocumentInspector.self, .init(limit: -1)) == "--limit must not be negative")
        #expect(message(PushInspector.self, .init(limit: -1)) == "--limit must not be negative")
        #expect(message(DocumentInspector.self, .init(index: "cost")) == "--index needs a database")
        #expect(message(DocumentInspector.self, .init(collection: "inv", limit: 0, index: "cost")) == nil)
        #expect(message(SecurityInspector.self, .init(principal: "alice")) == nil)

        #expect(try DocumentInspector.validated(.init(collection: "inv")) == .init(collection: "inv", limit: 100))
        #expect(try PushInspector.validated(.init()) == .init(limit: 20))
        #expect(try SeriesInspector.validated(.init(collection: "p")) == .init(collection: "p"))
        #expect(try ChannelInspector.validated(.init(limit: 5)) == .init(limit: 5))
    }

    @Test("strata-dump prints each kind's view: its tables and JSON, for the store and for one collection")
    func executablePrintsTheViews() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let tmp = dir.url
        do {
            let store = tmp.appendingPathComponent("store")
            try storeWithEveryKind(in: store)
            let cases: [(args: [String], inspector: any CollectionInspector.Type, arguments: CollectionInspectorArguments)] = [
                (["series"], SeriesInspector.self, .init()),
                (["series", "prices/AAPL", "--limit", "2"], SeriesInspector.self, .init(collection: "prices/AAPL", limit: 2)),
                (["channels"], ChannelInspector.self, .init()),
                (["channels", "chat", "--limit", "1"], ChannelInspector.self, .init(collection: "chat", limit: 1)),
                (["documents"], DocumentInspector.self, .init()),
                (["documents", "inv"], DocumentInspector.self, .init(collection: "inv", limit: 100)),
                (["documents", "inv", "--index", "cost", "--limit", "1"], DocumentInspector.self,
                 .init(collection: "inv", limit: 1, index: "cost")),
                (["push"], PushInspector.self, .init(limit: 20)),
                (["push", "--limit", "0"], PushInspector.self, .init(limit: 0)),
                (["security"], SecurityInspector.self, .init()),
                (["security", "--principal", "alice"], SecurityInspector.self, .init(principal: "alice")),
            ]
            for c in cases {
                for json in [false, true] {
                    let args = [c.args[0], store.path] + c.args.dropFirst() + (json ? ["--json"] : [])
                    let run = try runTool(args, in: tmp)
                    #expect(run.status == 0, "\(args): \(run.stderr)")
                    let expected = try c.inspector.run(storeAt: store.path, arguments: c.arguments, json: json)
                    #expect(run.stdout == expected, "\(args)")
                }
            }
            // The views hold what the store holds.
            let series = try runTool(["series", store.path], in: tmp).stdout
            #expect(series.contains("prices/AAPL") && series.contains("Time series: 2"), "\(series)")
            let one = try runTool(["series", store.path, "prices/AAPL"], in: tmp).stdout
            #expect(one.contains("99.0") && one.contains("ann"), "\(one)")
            let push = try runTool(["push", store.path], in: tmp).stdout
            #expect(push.contains("Devices: 1") && push.contains("Subscriptions: 1") && push.contains("Outbox: 1 pending"), "\(push)")
            let rows = try runTool(["documents", store.path, "inv", "--index", "cost"], in: tmp).stdout
            #expect(rows.contains("Rows of index \"cost\" (2 shown)"), "\(rows)")
            let security = try runTool(["security", store.path, "--principal", "alice", "--json"], in: tmp).stdout
            #expect(security.contains("\"globalPermissions\" : [\n    \"VIEW_SECURITY\""), "\(security)")
        }
    }

    @Test("strata-dump: an argument a kind does not take is absent from its help and a usage error (exit 2)")
    func executableUsage() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let tmp = dir.url
        do {
            let store = tmp.appendingPathComponent("store")
            try Store.open(at: store).close()
            let cases: [(args: [String], mention: String)] = [
                (["push", store.path, "--index", "i"], "Unknown option '--index'"),
                (["push", store.path, "extra"], "Unexpected argument 'extra'"),
                (["security", store.path, "--limit", "3"], "Unknown option '--limit'"),
                (["series", store.path, "--principal", "p"], "Unknown option '--principal'"),
                (["series", store.path, "--limit", "0"], "--limit must be at least 1"),
                (["channels", store.path, "--limit", "0"], "--limit must be at least 1"),
                (["documents", store.path, "--limit=-1"], "--limit must not be negative"),
                (["push", store.path, "--limit=-1"], "--limit must not be negative"),
                (["documents", store.path, "--index", "cost"], "--index needs a database"),
                (["series"], "<store>"),
            ]
            for c in cases {
                let run = try runTool(c.args, in: tmp)
                #expect(run.status == 2, "\(c.args): \(run.status) \(run.stderr)")
                #expect(run.stderr.contains(c.mention), "\(c.args): \(run.stderr)")
                #expect(run.stdout.isEmpty, "\(c.args): \(run.stdout)")
            }
            let missing = try runTool(["documents", store.path, "nope"], in: tmp)
            #expect(missing.status == 2 && missing.stderr.contains("nope"), "\(missing.stderr)")

            let push = try runTool(["push", "--help"], in: tmp).stdout
            #expect(push.contains("USAGE: strata-dump push <store> [--limit <limit>] [--json]"), "\(push)")
            #expect(push.contains("(default 20). (default: 20)"), "\(push)")
            #expect(!push.contains("--index") && !push.contains("--principal") && !push.contains("<collection>"), "\(push)")
            let documents = try runTool(["documents", "--help"], in: tmp).stdout
            #expect(documents.contains("USAGE: strata-dump documents <store> [<database>] [--index <index>] [--limit <limit>] [--json]"),
                    "\(documents)")
            #expect(!documents.contains("--principal"), "\(documents)")
            let security = try runTool(["security", "--help"], in: tmp).stdout
            #expect(security.contains("USAGE: strata-dump security <store> [--principal <principal>] [--json]"), "\(security)")
            let all = try runTool(["--help"], in: tmp).stdout
            for inspector in StoreCollections.inspectors {
                #expect(all.contains("  \(inspector.commandName) "), "\(inspector.commandName): \(all)")
            }
        }
    }

    @Test("strata-dump series --json prints a Double series holding NaN and ±infinity, as strings JSON can carry")
    func nonFiniteDoublesInJSON() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            try store.timeSeries("s", of: Double.self).append(contentsOf: [.nan, .infinity, -.infinity, 1.5])
        }
        let json = try SeriesInspector.run(storeAt: dir.path, arguments: CollectionInspectorArguments(collection: "s"), json: true)
        #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil, "\(json)")
        for spelled in ["\"NaN\"", "\"Infinity\"", "\"-Infinity\"", "1.5"] { #expect(json.contains(spelled), "\(spelled) in \(json)") }
    }
}
