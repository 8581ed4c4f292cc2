import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Where one direction of a replication got to: a sequence saved both in the gateway's
/// `_local/<id>` document and in a local document of the database, after each batch committed.
///
/// The id (``id(uuid:url:push:channels:filterName:filterParameters:)``) is an MD5 of the database's
/// own replication uuid (a random value kept in a local document, so two stores never share a
/// checkpoint), the gateway URL, the direction, the channels and the filter: a replication with
/// another of these starts from the beginning rather than skip what the old one left out.
///
/// A replication resumes from the saved sequence when both copies agree, from the lower one
/// when they differ (a save interrupted between the two), and from the beginning when either is
/// missing (a new store, or a gateway database recreated).
///
/// Saves run in the background, one after the other in the order asked, so that the next batch
/// does not wait for them; ``flush()`` waits for them all.
///
/// ```swift
/// let checkpoint = ReplicationCheckpoint(id: id, client: client, database: db)
/// let since = try await checkpoint.read()      // "0" the first time
/// …                                            // a batch up to sequence 1234 committed
/// try await checkpoint.save("1234")            // queued
/// try await checkpoint.flush()                 // saved on both sides
/// ```
actor ReplicationCheckpoint {
    /// The local document holding the database's replication uuid.
    static let uuidDocumentID = "strata-replication-uuid"

    let id: String
    let client: GatewayClient
    let database: DocumentDatabase
    /// The `_rev` of the gateway's copy, for the next save.
    private var remoteRevision: String?
    /// The last value saved or read.
    private(set) var value = "0"
    /// The last save queued, which waits for those before it.
    private var chain: Task<Void, any Error>?
    /// The error of a failed save (later saves are refused with it).
    private var failure: (any Error)?

    init(id: String, client: GatewayClient, database: DocumentDatabase) {
        self.id = id
        self.client = client
        self.database = database
    }

    nonisolated var remotePath: String { "_local/" + id }
    nonisolated var localID: String { "strata-replication-checkpoint/" + id }

    /// The checkpoint id of a replication direction (32 hex digits).
    static func id(uuid: String, url: String, push: Bool, channels: [String], filterName: String?,
                   filterParameters: [String: JSON]) -> String {
        var text = "strata-replication 1\n\(uuid)\n\(url)\n\(push ? "push" : "pull")\n"
        text += channels.sorted().joined(separator: ",") + "\n"
        if push, let filterName {
            text += filterName + "\n" + JSON.object(filterParameters).description
        }
        return MD5.digest(Array(text.utf8)).hexString
    }

    /// The database's replication uuid, created (and kept) on first use.
    static func uuid(of database: DocumentDatabase) async throws -> String {
        try await database.state.executor.run {
            if let existing = try database.localDocument(id: uuidDocumentID)?["uuid"]?.stringValue { return existing }
            let uuid = UUID().uuidString.lowercased()
            try database.putLocalDocument(id: uuidDocumentID, .object(["uuid": .string(uuid)]))
            return uuid
        }
    }

    /// The sequence to resume from (see the type's rules).
    func read() async throws -> String {
        let answer = try await client.send("GET", remotePath, accepting: [404])
        let remote: String?
        if answer.status == 404 {
            remote = nil
            remoteRevision = nil
        } else {
            remote = answer.body["lastSequence"]?.stringValue
            remoteRevision = answer.body["_rev"]?.stringValue
        }
        let localID = self.localID
        let database = self.database
        let local = try await database.state.executor.run {
            try database.localDocument(id: localID)?["lastSequence"]?.stringValue
        }
        value = Self.agreed(local: local, remote: remote)
        return value
    }

    /// The sequence both copies allow: equal ones, the lower of two numbers, else "0".
    static func agreed(local: String?, remote: String?) -> String {
        guard let local, let remote else { return "0" }
        if local == remote { return local }
        if let l = UInt64(local), let r = UInt64(remote) { return String(min(l, r)) }
        return "0"
    }

    /// Queues a save of `sequence` (locally, then on the gateway) after the saves queued before.
    ///
    /// - Throws: the error of an earlier save that failed.
    func save(_ sequence: String) throws {
        if let failure { throw failure }
        let previous = chain
        chain = Task {
            try await previous?.value
            do {
                try await self.write(sequence)
            } catch {
                self.failed(error)
                throw error
            }
        }
    }

    /// Waits until every queued save is done.
    ///
    /// - Throws: the error of a save that failed.
    func flush() async throws {
        if let chain { try await chain.value }
        if let failure { throw failure }
    }

    private func failed(_ error: any Error) {
        if failure == nil { failure = error }
    }

    private func write(_ sequence: String) async throws {
        guard sequence != value else { return }
        let localID = self.localID
        let database = self.database
        try await database.state.executor.run {
            try database.putLocalDocument(id: localID, .object(["lastSequence": .string(sequence)]))
        }
        try await saveRemote(sequence)
        value = sequence
    }

    private func saveRemote(_ sequence: String) async throws {
        for attempt in 0..<2 {
            var body: [String: JSON] = ["lastSequence": .string(sequence)]
            if let remoteRevision { body["_rev"] = .string(remoteRevision) }
            let answer = try await client.send("PUT", remotePath, body: .object(body), accepting: [409])
            if answer.status != 409 {
                remoteRevision = answer.body["rev"]?.stringValue
                return
            }
            // Another save got in between (an older run of this replication): take its _rev.
            let current = try await client.send("GET", remotePath, accepting: [404])
            remoteRevision = current.status == 404 ? nil : current.body["_rev"]?.stringValue
            if attempt == 1 { break }
        }
        throw GatewayClient.Fault.transient("PUT \(client.base)/\(remotePath): 409 conflict twice")
    }
}
