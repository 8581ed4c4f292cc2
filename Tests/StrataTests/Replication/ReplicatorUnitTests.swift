import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The replicator's parts that need no gateway: digests, the wire form of revisions, checkpoint
/// ids, the backoff schedule, configurations, `_changes` answers and requests.
@Suite struct ReplicatorUnitTests {
    static let date1 = Date(timeIntervalSinceReferenceDate: 786_297_600)
    static let date2 = Date(timeIntervalSinceReferenceDate: 786_297_601.5)

    static func revision(deleted: Bool = false) throws -> ReplicatedRevision {
        let rev = try #require(RevisionID("3-6f1ad2c5a9d04b2f9a6c0e1b7d3e8f20"))
        return ReplicatedRevision(
            documentID: "invoice-1", revisionID: rev,
            history: ["6f1ad2c5a9d04b2f9a6c0e1b7d3e8f20", "a1b2", "c3d4"], isDeleted: deleted,
            fields: deleted ? [:] : ["TotalCost": 1200, "Lines": [["sku": "X1", "qty": 2]], "Paid": false, "Note": nil],
            type: deleted ? nil : "invoice", channels: ["east", "billing"], createDate: date1, lastChange: date2,
            attachments: deleted ? [:] : ["scan.pdf": Attachment(data: Data([0, 1, 2, 250, 255]), contentType: "application/pdf")])
    }

    @Test("attachment digests are md5- and the base64 of the MD5 of the bytes")
    func attachmentDigest() {
        #expect(WireRevision.attachmentDigest(Data("abc".utf8)) == "md5-kAFQmDzST7DWlj99KOF/cg==")
        #expect(WireRevision.attachmentDigest(Data()) == "md5-1B2M2Y8AsgTpgAmY7PhCfg==")
    }

    @Test("a revision goes to wire JSON with _id, _rev, _revisions, _strata and inline attachments, and back unchanged")
    func wireRoundTrip() throws {
        let revision = try Self.revision()
        let json = WireRevision.json(of: revision)
        #expect(json["_id"] == "invoice-1")
        #expect(json["_rev"] == "3-6f1ad2c5a9d04b2f9a6c0e1b7d3e8f20")
        #expect(json["_revisions"] == ["start": 3, "ids": ["6f1ad2c5a9d04b2f9a6c0e1b7d3e8f20", "a1b2", "c3d4"]])
        #expect(json["_deleted"] == nil)
        #expect(json["_strata"] == ["channels": ["east", "billing"], "type": "invoice",
                                    "created": 786_297_600.0, "changed": 786_297_601.5])
        #expect(json["_attachments"]?["scan.pdf"] == ["content_type": "application/pdf",
                                                      "digest": .string(WireRevision.attachmentDigest(Data([0, 1, 2, 250, 255]))),
                                                      "length": 5, "revpos": 3, "data": "AAEC+v8="])
        #expect(json["TotalCost"] == 1200)
        // Through JSON text, as on the wire.
        let back = try WireRevision.revision(from: try JSON(parsing: json.jsonData()))
        #expect(back == revision)
    }

    @Test("a deletion carries _deleted and no fields or attachments, and comes back deleted")
    func wireDeletion() throws {
        let revision = try Self.revision(deleted: true)
        let json = WireRevision.json(of: revision)
        #expect(json["_deleted"] == true)
        #expect(json["_attachments"] == nil)
        guard case .object(let members) = json else { Issue.record("not an object"); return }
        #expect(members.keys.allSatisfy { $0.hasPrefix("_") })
        let back = try WireRevision.revision(from: try JSON(parsing: json.jsonData()))
        #expect(back == revision)
        #expect(back.isDeleted)
        // Fields sent with a deletion by another client are not kept.
        let other = try WireRevision.revision(from: try JSON(parsing: #"{"_id":"d","_rev":"2-ab","_deleted":true,"x":1}"#))
        #expect(other.isDeleted && other.fields.isEmpty)
    }

    @Test("fields named with a leading underscore are left off the wire")
    func underscoreFields() throws {
        var revision = try Self.revision()
        revision.fields["_private"] = 1
        let json = WireRevision.json(of: revision)
        #expect(json["_private"] == nil)
        #expect(json["TotalCost"] == 1200)
    }

    @Test("a revision of another client: no _strata (channels from a top-level channels array, kept as a field), no _revisions")
    func wireForeignRevision() throws {
        let now = Date(timeIntervalSinceReferenceDate: 1_000)
        let text = #"{"_id":"x","_rev":"1-abc","channels":["a","b"],"name":"n"}"#
        let revision = try WireRevision.revision(from: try JSON(parsing: text), now: now)
        #expect(revision.documentID == "x")
        #expect(revision.revisionID == RevisionID(generation: 1, digest: "abc"))
        #expect(revision.history == ["abc"])
        #expect(revision.channels == ["a", "b"])
        #expect(revision.type == nil)
        #expect(revision.fields == ["channels": ["a", "b"], "name": "n"])
        #expect(revision.createDate == now && revision.lastChange == now)
    }

    @Test("malformed wire revisions are refused with .network naming the document")
    func wireMalformed() throws {
        let cases = [
            #"{"_rev":"1-abc"}"#,                                                          // no _id
            #"{"_id":"x","_rev":"abc"}"#,                                                  // bad _rev
            #"{"_id":"x","_rev":"2-abc","_revisions":{"start":3,"ids":["abc"]}}"#,         // start mismatch
            #"{"_id":"x","_rev":"2-abc","_revisions":{"start":2,"ids":["zzz"]}}"#,         // ids[0] mismatch
            #"{"_id":"x","_rev":"2-abc","_revisions":{"start":2,"ids":["abc","b","c"]}}"#, // longer than the generation
            #"{"_id":"x","_rev":"1-abc","_attachments":{"a":{"content_type":"t","length":3}}}"#,  // stub
            #"{"_id":"x","_rev":"1-abc","_attachments":{"a":{"data":"AAEC","length":4}}}"#,       // length
            #"{"_id":"x","_rev":"1-abc","_attachments":{"a":{"data":"AAEC","digest":"md5-AAAAAAAAAAAAAAAAAAAAAA=="}}}"#,
            #"{"_id":"x","_rev":"1-abc","_strata":{"channels":"east"}}"#,
            #"{"_id":"x","_rev":"1-abc","_strata":{"created":"yesterday"}}"#,
        ]
        for text in cases {
            #expect(throws: StrataError.self, "\(text)") { try WireRevision.revision(from: try JSON(parsing: text)) }
            do {
                _ = try WireRevision.revision(from: try JSON(parsing: text))
            } catch StrataError.network(let message) {
                #expect(message.contains("malformed revision"))
            } catch {
                Issue.record("\(text): \(error)")
            }
        }
    }

    @Test("the filter sees the winner as a Document with its metadata")
    func filterDocument() throws {
        let document = WireRevision.document(of: try Self.revision())
        #expect(document.metadata.id == "invoice-1")
        #expect(document.metadata.revisionID?.description == "3-6f1ad2c5a9d04b2f9a6c0e1b7d3e8f20")
        #expect(document.metadata.revision == 3)
        #expect(document.metadata.type == "invoice")
        #expect(document.metadata.channels == ["east", "billing"])
        #expect(document["TotalCost"] == 1200)
        #expect(document.attachments["scan.pdf"]?.length == 5)
    }

    @Test("checkpoint ids are stable, and change with the store uuid, URL, direction, channels and filter")
    func checkpointIDs() {
        func id(uuid: String = "u1", url: String = "http://127.0.0.1:4984/main", push: Bool = false, channels: [String] = [],
                filterName: String? = nil, parameters: [String: JSON] = [:]) -> String {
            ReplicationCheckpoint.id(uuid: uuid, url: url, push: push, channels: channels, filterName: filterName,
                                     filterParameters: parameters)
        }
        let base = id()
        #expect(base.count == 32 && base.allSatisfy(\.isHexDigit))
        #expect(base == MD5.digest(Array("strata-replication 1\nu1\nhttp://127.0.0.1:4984/main\npull\n\n".utf8)).hexString)
        #expect(id() == base)
        #expect(id(channels: ["b", "a"]) == id(channels: ["a", "b"]))
        let others = [id(uuid: "u2"), id(url: "http://127.0.0.1:4985/main"), id(push: true), id(channels: ["a"]),
                      id(push: true, filterName: "f"), id(push: true, filterName: "f", parameters: ["owner": "alice"]),
                      id(push: true, filterName: "g")]
        #expect(Set(others + [base]).count == others.count + 1)
        // A pull ignores the filter (it applies to what is sent).
        #expect(id(filterName: "f") == base)
    }

    @Test("checkpoints resume from agreeing copies, the lower of two numbers, else from the start")
    func checkpointAgreement() {
        #expect(ReplicationCheckpoint.agreed(local: "42", remote: "42") == "42")
        #expect(ReplicationCheckpoint.agreed(local: "42", remote: "40") == "40")
        #expect(ReplicationCheckpoint.agreed(local: "7", remote: "40") == "7")
        #expect(ReplicationCheckpoint.agreed(local: nil, remote: "40") == "0")
        #expect(ReplicationCheckpoint.agreed(local: "40", remote: nil) == "0")
        #expect(ReplicationCheckpoint.agreed(local: "a", remote: "b") == "0")
        #expect(ReplicationCheckpoint.agreed(local: "a", remote: "a") == "a")
    }

    @Test("backoff: 0.1 s doubling to the maximum, jitter scales by 0.5...1, reset starts over")
    func backoffSchedule() {
        var backoff = RetryBackoff(maximum: .seconds(30))
        let bases = (0..<12).map { backoff.baseDelay(afterFailures: $0) }
        #expect(bases == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                          .milliseconds(3200), .milliseconds(6400), .milliseconds(12800), .milliseconds(25600),
                          .seconds(30), .seconds(30), .seconds(30)])
        #expect(backoff.nextDelay(jitter: 1) == .milliseconds(100))
        #expect(backoff.nextDelay(jitter: 0) == .milliseconds(100))
        #expect(backoff.nextDelay(jitter: 0.5) == .milliseconds(300))
        #expect(backoff.failures == 3)
        for _ in 0..<100 {
            let d = backoff.nextDelay()
            #expect(d >= .seconds(15) || backoff.failures < 10)
            #expect(d <= .seconds(30))
        }
        backoff.reset()
        #expect(backoff.failures == 0)
        #expect(backoff.nextDelay(jitter: 1) == .milliseconds(100))
    }

    @Test("the static initializers and their defaults; validation refuses settings out of range")
    func configurations() throws {
        let url = try #require(URL(string: "http://127.0.0.1:4984/main/"))
        let repeating = ReplicationConfiguration.repeatingBidirectionalReplication(with: url)
        #expect(repeating.repeating && repeating.bidirectional && repeating.maximumRetries == nil)
        let once = ReplicationConfiguration.oneTimeBidirectionalReplication(with: url)
        #expect(!once.repeating && once.bidirectional && once.maximumRetries == 10)
        let pull = ReplicationConfiguration.oneTimeServerToClientReplication(with: url)
        #expect(!pull.repeating && !pull.bidirectional)
        #expect(pull.limitToChannels.isEmpty && pull.filter == nil && pull.filterParameters.isEmpty && pull.authentication == .none)
        #expect(pull.batchSize == 500)
        #expect(pull.baseURLString == "http://127.0.0.1:4984/main")
        try pull.validate()

        var bad = pull
        bad.batchSize = 0
        #expect(throws: StrataError.self) { try bad.validate() }
        bad = pull
        bad.url = try #require(URL(string: "ftp://host/db"))
        #expect(throws: StrataError.self) { try bad.validate() }
        bad = pull
        bad.longpollTimeout = .seconds(301)
        #expect(throws: StrataError.self) { try bad.validate() }
        bad = pull
        bad.limitToChannels = ["a,b"]
        #expect(throws: StrataError.self) { try bad.validate() }
        bad = pull
        bad.revisionHistoryLimit = 0
        #expect(throws: StrataError.self) { try bad.validate() }

        #expect(ReplicationAuthentication.basic(user: "alice", password: "secret").headerValue == "Basic YWxpY2U6c2VjcmV0")
        #expect(ReplicationAuthentication.none.headerValue == nil)
    }

    @Test("_changes requests: all_docs, limit, longpoll with its timeout, the channel filter; answers parsed in order")
    func changesRequestsAndAnswers() throws {
        var config = ReplicationConfiguration.repeatingBidirectionalReplication(with: try #require(URL(string: "http://h:1/db")))
        config.limitToChannels = ["east", "a+b"]
        config.batchSize = 100
        let replicator = Replicator(database: try Self.unusedDatabase(), configuration: config,
                                    replication: Replication(configuration: config))
        let query = replicator.changesQuery(since: "17", longpoll: true)
        #expect(query.map(\.0) == ["since", "style", "limit", "feed", "timeout", "filter", "channels"])
        #expect(query.map(\.1) == ["17", "all_docs", "400", "longpoll", "30000", "sync_gateway/bychannel", "east,a+b"])
        let url = try #require(replicator.client.url("_changes", query: query))
        #expect(url.absoluteString.contains("channels=east,a%2Bb") || url.absoluteString.contains("channels=east%2Ca%2Bb"))
        #expect(url.absoluteString.hasPrefix("http://h:1/db/_changes?since=17&"))

        let answer = try JSON(parsing: #"""
        {"results":[{"seq":3,"id":"a","changes":[{"rev":"2-bb"},{"rev":"2-aa"}]},
                    {"seq":5,"id":"b","changes":[{"rev":"1-cc"}],"deleted":true}],"last_seq":5}
        """#)
        let page = try Replicator.parseChanges(answer, what: "test")
        #expect(page.lastSequence == "5")
        #expect(page.results.map(\.id) == ["a", "b"])
        #expect(page.results.map(\.sequence) == ["3", "5"])
        #expect(page.results[0].revisions == [RevisionID("2-bb"), RevisionID("2-aa")].compactMap { $0 })
        #expect(throws: GatewayClient.Fault.self) { try Replicator.parseChanges(["results": []], what: "test") }
        #expect(throws: GatewayClient.Fault.self) {
            try Replicator.parseChanges(try JSON(parsing: #"{"results":[{"seq":1,"id":"a","changes":[{"rev":"x"}]}],"last_seq":1}"#), what: "test")
        }
    }

    @Test("_bulk_docs bodies: revisions in order, split under the byte limit, a revision over it alone")
    func bulkDocsBodies() throws {
        var revisions: [ReplicatedRevision] = []
        for i in 0..<10 {
            var revision = try Self.revision()
            revision.documentID = "doc-\(i)"
            revision.attachments = ["a": Attachment(data: Data(repeating: UInt8(i), count: i == 7 ? 9_000 : 1_000), contentType: "b")]
            revisions.append(revision)
        }
        let bodies = Replicator.bulkDocsBodies(revisions, limit: 6_000)
        var ids: [String] = []
        for body in bodies {
            let json = try JSON(parsing: body.text)
            #expect(json["new_edits"] == false)
            guard case .array(let docs)? = json["docs"] else { Issue.record("no docs"); continue }
            #expect(docs.count == body.count)
            #expect(body.text.count <= 6_000 || body.count == 1)
            #expect(body.first.hasPrefix(docs.first?["_id"]?.stringValue ?? "?"))
            ids += docs.compactMap { $0["_id"]?.stringValue }
            for doc in docs {
                let revision = try WireRevision.revision(from: doc)
                #expect(revision.attachments["a"]?.length == (revision.documentID == "doc-7" ? 9_000 : 1_000))
            }
        }
        #expect(ids == (0..<10).map { "doc-\($0)" })
        #expect(bodies.count > 2)
        #expect(bodies.contains { $0.count == 1 && $0.first.hasPrefix("doc-7 ") })
        #expect(Replicator.bulkDocsBodies([], limit: 100).isEmpty)
        #expect(Replicator.bulkDocsBodies(revisions, limit: 1 << 30).count == 1)
    }

    /// A database handle for tests that build a replicator without running it.
    static func unusedDatabase() throws -> DocumentDatabase {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer {
            try? store.close()
            dir.remove()
        }
        return try store.documents("unused")
    }

    @Test("a replication's final status: stop and store close stop it; 4xx and local errors fail it")
    func finalStatus() {
        #expect(Replicator.finalStatus(of: CancellationError(), stopRequested: false) == .stopped)
        #expect(Replicator.finalStatus(of: StrataError.closed, stopRequested: false) == .stopped)
        #expect(Replicator.finalStatus(of: StrataError.network("x"), stopRequested: true) == .stopped)
        #expect(Replicator.finalStatus(of: GatewayClient.Fault.permanent(.network("401")), stopRequested: false) == .failed(.network("401")))
        #expect(Replicator.finalStatus(of: StrataError.io(path: "p", errno: 5, operation: "write"), stopRequested: false)
                == .failed(.io(path: "p", errno: 5, operation: "write")))
    }
}
