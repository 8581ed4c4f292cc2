import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// kill -9 while `strata-crash-helper documents` writes batches of documents with an index: after
// each kill the reopened database must hold every acknowledged batch, and documents, index rows
// and the change feed must agree (no row without its document, no document without its rows).

/// The map of the helper's index `byV` (Sources/strata-crash-helper/DocumentsMode.swift).
let crashIndexMap: DocumentIndex.Map = { doc, emit in
    if let v = doc["v"] {
        emit(v, doc["b"])
        emit([doc["g"] ?? nil, v], nil)
    }
}

@Suite struct DocumentCrashTests {
    @Test("kill -9 mid-batch leaves documents, index rows and change feed consistent", arguments: [11, 12] as [UInt64])
    func killDuringBatches(seed: UInt64) throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var lastAcknowledged: Int64 = -1
        for trial in 0..<3 {
            let child = try CrashHelperProcess(["documents", tmp.path, String(seed &+ UInt64(trial))])
            let started = child.waitFor(timeout: 120) { $0.contains { $0.hasPrefix("ACK ") } }
            guard started else {
                child.killAndWait()
                Issue.record("trial \(trial): no acknowledgement; stderr: \(child.errorText)")
                return
            }
            child.run(for: 0.2 + Double(trial) * 0.15)
            let status = child.killAndWait()
            #expect(CrashHelperProcess.killed(status, by: SIGKILL), "helper ended by itself: \(child.errorText)")
            var begun: Int64 = lastAcknowledged
            for line in child.lines {
                let parts = line.split(separator: " ")
                if parts.count == 2, let b = Int64(parts[1]) {
                    if parts[0] == "ACK" { lastAcknowledged = b } else { begun = b }
                }
            }
            let store = try Store.open(at: tmp.url)
            let db = try store.documents("crash", indexes: [DocumentIndex(name: "byV", version: "1", map: crashIndexMap)])
            // Every acknowledged batch is there; at most the one in flight beyond it.
            let last = try #require(try db.document(id: "last"))["b"]?.int64Value
            #expect(last.map { $0 >= lastAcknowledged && $0 <= begun } == true, "trial \(trial): last \(String(describing: last)), acked \(lastAcknowledged), begun \(begun)")
            lastAcknowledged = last ?? lastAcknowledged
            // Documents and index rows agree.
            let ids = (0..<300).map { "d\($0)" } + ["last"]
            let live = try db.documents(ids: ids)
            let reference = try ReferenceIndex(documents: live, map: crashIndexMap)
            let rows = try db.query("byV", .all).rows
            #expect(rows == (try reference.run(.all, reduction: nil)), "trial \(trial): index rows differ from the documents")
            // The change feed has one entry per id ever written, at its current revision.
            let feed = try db.changes(since: 0).changes
            #expect(Set(feed.map(\.id)).count == feed.count)
            for change in feed {
                if let doc = live[change.id] {
                    #expect(!change.isDeletion && change.revision == doc.metadata.revision, "trial \(trial): \(change)")
                } else {
                    #expect(change.isDeletion, "trial \(trial): \(change) for a missing document")
                }
            }
            for (id, _) in live { #expect(feed.contains { $0.id == id }, "trial \(trial): no change for \(id)") }
            try store.close()
        }
    }
}
