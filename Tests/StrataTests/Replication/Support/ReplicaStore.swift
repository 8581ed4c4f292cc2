import Foundation
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A store in a temporary directory with its document database `main`, as one replica of a
/// replication test; ``reopen()`` closes and opens it again, ``remove()`` closes and deletes it.
final class ReplicaStore: @unchecked Sendable {
    let directory: TemporaryDirectory
    let name: String
    private let lock = NSLock()
    private var store: Store
    private var database: DocumentDatabase

    init(name: String) throws {
        self.name = name
        directory = try TemporaryDirectory()
        store = try Store.open(at: directory.url, options: Self.options)
        database = try store.documents("main")
    }

    /// Buffered durability: these tests are about replication, not fsync.
    private static var options: StoreOptions {
        var options = StoreOptions()
        options.durability = .buffered
        return options
    }

    deinit { remove() }

    /// The document database (a new handle after ``reopen()``).
    var db: DocumentDatabase { lock.withLock { database } }

    /// The store (a new one after ``reopen()``).
    var handle: Store { lock.withLock { store } }

    /// Closes the store (which ends its replications) and opens it again.
    func reopen() throws {
        try lock.withLock {
            try store.close()
            store = try Store.open(at: directory.url, options: Self.options)
            database = try store.documents("main")
        }
    }

    /// Closes the store only (its replications end).
    func close() throws {
        try lock.withLock { try store.close() }
    }

    /// Closes the store and deletes its directory.
    func remove() {
        lock.withLock { _ = try? store.close() }
        directory.remove()
    }

    /// Ends the conflicts of `id` with `document` (the synchronous call, from async tests too).
    func resolveConflict(id: String, with document: Document) throws {
        try db.resolveConflict(id: id, with: document)
    }

    /// Every document id in the database's change feed (live or deleted).
    func documentIDs() throws -> Set<String> {
        Set(try db.changes(since: 0).changes.map(\.id))
    }

    /// The state of every document named by the feed or `extraIDs`.
    func snapshot(extraIDs: Set<String> = []) throws -> ReplicaSnapshot {
        let database = db
        var documents: [String: ReplicaDocument] = [:]
        for id in try documentIDs().union(extraIDs) {
            guard let document = try database.document(id: id) else { continue }
            let conflicts = try database.conflicts(id: id).map { $0.metadata.revisionID?.description ?? "" }
            documents[id] = ReplicaDocument(winner: document.metadata.revisionID?.description ?? "", conflicts: Set(conflicts))
        }
        return ReplicaSnapshot(documents: documents)
    }
}

/// A live document on a replica: its winning revision and its conflicting revisions.
struct ReplicaDocument: Sendable, Hashable, CustomStringConvertible {
    var winner: String
    var conflicts: Set<String>
    var description: String { conflicts.isEmpty ? winner : "\(winner) conflicts \(conflicts.sorted())" }
}

/// The live documents of a replica by id (deleted ones are left out).
struct ReplicaSnapshot: Sendable, Equatable {
    var documents: [String: ReplicaDocument]

    /// The live documents of the server in the same form.
    init(server: ServerSnapshot) {
        documents = server.documents.values.filter { !$0.isDeleted }.reduce(into: [:]) {
            $0[$1.id] = ReplicaDocument(winner: $1.winner, conflicts: $1.conflicts)
        }
    }

    init(documents: [String: ReplicaDocument]) { self.documents = documents }

    /// A short account of where `self` and `other` differ (at most `limit` documents).
    func differences(from other: ReplicaSnapshot, limit: Int = 10) -> String {
        var lines: [String] = []
        for id in Set(documents.keys).union(other.documents.keys).sorted() where documents[id] != other.documents[id] {
            lines.append("\(id): \(documents[id]?.description ?? "absent") vs \(other.documents[id]?.description ?? "absent")")
            if lines.count == limit { break }
        }
        return lines.isEmpty ? "none" : lines.joined(separator: "; ")
    }
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held. How tests wait for
/// replication to quiesce: the assertion is on the state reached, never on the time it took.
func waitUntil(seconds: Double, interval: Duration = .milliseconds(250), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if try await condition() { return true }
        if Date() > deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
