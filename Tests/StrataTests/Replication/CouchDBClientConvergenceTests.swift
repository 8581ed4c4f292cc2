import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Issue 24: Strata's replicator on one side of a gateway, a CouchDB client on the other (the
/// gateway's CouchDB document API as CouchDB clients call it: `PUT` with `rev`, `DELETE`,
/// `POST`, inline attachments), each writing while a repeating bidirectional replication runs:
/// they converge, and each side reads the other's writes, fields and attachments included.
@Suite("Replication with a CouchDB client", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct CouchDBClientConvergenceTests {
    @Test("a Strata store and a CouchDB client writing through two gateways converge")
    func strataAndCouchDBClientConverge() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let couch = try cluster.createDatabaseWithAdmin("main", gateway: 1)
            let store = try ReplicaStore(name: "strata")
            defer { store.remove() }
            let replication = try store.db.startReplication(with: cluster.configuration(
                ReplicationConfiguration.repeatingBidirectionalReplication, database: "main", gateway: 0))
            defer { replication.stop() }

            // The CouchDB client's writes: 20 documents, 5 updated with their rev, 3 deleted,
            // one created by POST, one with an inline attachment.
            var revisions: [String: String] = [:]
            for n in 0..<20 {
                let answer = try await couch.request("PUT", "couch-\(n)", body: .object(["n": .int(Int64(n)), "channels": .array([.string("c")])]))
                #expect(answer.status == 201, "\(answer)")
                revisions["couch-\(n)"] = answer.body?["rev"]?.stringValue
            }
            let strataCreated = try await saveDocuments(store.db, prefix: "strata", count: 20, channels: ["c"])
            for n in 0..<5 {
                let id = "couch-\(n)"
                let answer = try await couch.request("PUT", id, body: .object([
                    "_rev": .string(revisions[id] ?? ""), "n": .int(Int64(100 + n)), "channels": .array([.string("c")])]))
                #expect(answer.status == 201, "\(answer)")
            }
            for n in 5..<8 {
                let answer = try await couch.request("DELETE", "couch-\(n)?rev=\(revisions["couch-\(n)"] ?? "")")
                #expect(answer.status == 200, "\(answer)")
            }
            let posted = try await couch.request("POST", "", body: .object(["made": .string("by POST"), "channels": .array([.string("c")])]))
            #expect(posted.status == 201, "\(posted)")
            let attached = try await couch.request("PUT", "couch-attached", body: .object([
                "channels": .array([.string("c")]),
                "_attachments": .object(["note.txt": .object([
                    "content_type": .string("text/plain"), "data": .string(Data("hello from couch".utf8).base64EncodedString())])]),
            ]))
            #expect(attached.status == 201, "\(attached)")

            // Both sides agree on every live document's winner and conflicts.
            var serverState = ServerSnapshot(documents: [:])
            let agreed = try await waitUntil(seconds: 90, interval: .milliseconds(500)) {
                guard let state = try? await couch.snapshot() else { return false }
                serverState = state
                return try store.snapshot(extraIDs: Set(state.documents.keys)) == ReplicaSnapshot(server: state)
            }
            let expected = ReplicaSnapshot(server: serverState)
            let local = try store.snapshot(extraIDs: Set(serverState.documents.keys))
            #expect(agreed, "\(local.differences(from: expected))")
            // 20 of the CouchDB client less 3 deleted, its POST and attachment, 20 of the store.
            let live: Int = 39
            #expect(expected.documents.count == live)

            // The store holds the CouchDB client's fields and attachment; the client reads the
            // store's documents through GET.
            let updated = try await store.db.document(id: "couch-3")
            #expect(updated?["n"] == .int(103))
            #expect(try await store.db.document(id: "couch-6") == nil)
            let withAttachment = try await store.db.document(id: "couch-attached")
            #expect(withAttachment?.attachments["note.txt"]?.data == Data("hello from couch".utf8))
            for (id, revision) in strataCreated.sorted(by: { $0.key < $1.key }).prefix(5) {
                let answer = try await couch.request("GET", id)
                #expect(answer.status == 200, "\(answer)")
                #expect(answer.body?["_rev"]?.stringValue == revision)
                #expect(answer.body?["text"]?.stringValue?.hasPrefix("document ") == true)
            }
            #expect(!replication.status.isFinal, "\(replication.status)")
        }
    }
}
