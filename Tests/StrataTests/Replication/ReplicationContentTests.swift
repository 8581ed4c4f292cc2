import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Attachments and deletions through real gateway processes.
@Suite("Replication of attachments and deletions", .serialized, .enabled(if: ReplicationTestEnvironment.isEnabled))
struct ReplicationContentTests {
    @Test("attachments replicate with their documents, and a changed set of attachments replaces the old one")
    func attachments() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            var rng = SplitMix64(seed: 13)
            let photo = Data((0..<65_536).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            let note = Data("a note, in UTF-8: é ü ✓".utf8)
            var document = Document(id: "with-files", fields: ["title": "scan"])
            document.attachments["photo.bin"] = Attachment(data: photo, contentType: "application/octet-stream")
            document.attachments["note.txt"] = Attachment(data: note, contentType: "text/plain")
            let saved = try await a.db.save(document)

            let push = try await runOnce(a.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 0))
            #expect(push.status == .completed, "\(push.log.all)")
            let onServer = try #require(try await server.snapshot().documents["with-files"]?.leaves[saved.metadata.revisionID?.description ?? ""])
            #expect(onServer.body["_attachments"]?["photo.bin"]?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) } == photo)
            #expect(onServer.body["_attachments"]?["photo.bin"]?["length"]?.int64Value == Int64(photo.count))
            #expect(onServer.body["_attachments"]?["note.txt"]?["content_type"] == "text/plain")
            #expect(onServer.body["_attachments"]?["note.txt"]?["digest"]?.stringValue?.hasPrefix("md5-") == true)

            let pull = try await runOnce(b.db, cluster.configuration(ReplicationConfiguration.oneTimeServerToClientReplication, database: "main", gateway: 1))
            #expect(pull.status == .completed, "\(pull.log.all)")
            let received = try #require(try await b.db.document(id: "with-files"))
            #expect(received.metadata.revisionID == saved.metadata.revisionID)
            #expect(received.attachments == saved.attachments)
            #expect(received["title"] == "scan")

            // Changed on B: a new photo, the note removed; back to A.
            var changed = received
            let photo2 = Data(photo.reversed())
            changed.attachments["photo.bin"] = Attachment(data: photo2, contentType: "image/x-test")
            changed.attachments["note.txt"] = nil
            let saved2 = try await b.db.save(changed)
            let push2 = try await runOnce(b.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 1))
            #expect(push2.status == .completed)
            let pull2 = try await runOnce(a.db, cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 0))
            #expect(pull2.status == .completed)
            let back = try #require(try await a.db.document(id: "with-files"))
            #expect(back.metadata.revisionID == saved2.metadata.revisionID)
            #expect(back.attachments == ["photo.bin": Attachment(data: photo2, contentType: "image/x-test")])
        }
    }

    @Test("deletions replicate as tombstones; a deletion concurrent with an update loses to the update everywhere")
    func deletions() async throws {
        try await GatewayCluster.with(gateways: 2) { cluster in
            let server = try cluster.createDatabaseWithAdmin("main")
            let a = try ReplicaStore(name: "a")
            let b = try ReplicaStore(name: "b")
            defer { a.remove(); b.remove() }
            let configA = cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 0)
            let configB = cluster.configuration(ReplicationConfiguration.oneTimeBidirectionalReplication, database: "main", gateway: 1)
            let created = try await saveDocuments(a.db, prefix: "d", count: 20)
            #expect(try await runOnce(a.db, configA).status == .completed)
            #expect(try await runOnce(b.db, configB).status == .completed)
            #expect(try winners(b) == created)

            // Without replication in between: A deletes d-0…4, B deletes d-5…9; A deletes d-10
            // while B updates it.
            for n in 0..<5 { try await a.db.delete(id: "d-\(n)") }
            for n in 5..<10 { try await b.db.delete(id: "d-\(n)") }
            try await a.db.delete(id: "d-10")
            var d10 = try #require(try await b.db.document(id: "d-10"))
            d10["n"] = 1010
            let d10Revision = try await b.db.save(d10).metadata.revisionID?.description
            let collector = try ChangeCollector(b.db)

            #expect(try await runOnce(a.db, configA).status == .completed)
            #expect(try await runOnce(b.db, configB).status == .completed)
            #expect(try await runOnce(a.db, configA).status == .completed)

            var expected = created
            for n in 0..<10 { expected["d-\(n)"] = nil }
            expected["d-10"] = d10Revision
            #expect(try winners(a) == expected)
            #expect(try winners(b) == expected)
            let serverState = try await server.snapshot()
            #expect(serverState.liveWinners == expected)
            #expect((0..<10).allSatisfy { serverState.documents["d-\($0)"]?.isDeleted == true })
            // The deleted leaf of d-10 is no conflict: every side agrees it has none.
            #expect(serverState.documents["d-10"]?.conflicts.isEmpty == true)
            #expect(try a.snapshot().documents["d-10"]?.conflicts.isEmpty == true)
            #expect(try b.snapshot().documents["d-10"]?.conflicts.isEmpty == true)
            #expect(try await a.db.document(id: "d-10")?["n"] == 1010)
            // B saw A's deletions arrive, as external changes.
            let arrived = await waitUntil(seconds: 30) {
                Set(collector.all.filter { $0.isDeletion && $0.isExternal }.map(\.id)).isSuperset(of: (0..<5).map { "d-\($0)" })
            }
            #expect(arrived, "\(collector.all)")
            #expect(!collector.all.contains { $0.id.hasPrefix("d-") && !$0.isExternal })
        }
    }
}
