import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A plain HTTP client of one gateway database, for tests that read or write the server side
/// directly (Gateway/PROTOCOL.md), without Strata's replicator.
struct GatewayHTTPClient: Sendable {
    /// The database's URL, `http://127.0.0.1:<port>/<db>`.
    let databaseURL: URL
    let user: String
    let password: String

    /// One answer: the status and the parsed body (nil when empty or not JSON).
    struct Response: Sendable, CustomStringConvertible {
        var status: Int
        var body: JSON?
        var text: String
        var description: String { "HTTP \(status) \(text)" }
    }

    /// Sends `method` to `path` (relative to the database URL; "" for the database itself) with
    /// an optional JSON body and the client's Basic credentials.
    ///
    /// Each request has a session of its own whose delegate cancels an authentication challenge:
    /// on Linux, URLSession given a 401 with `WWW-Authenticate` and no credential to offer waits
    /// forever under the default handling (seen with swift-corelibs-foundation, Swift 6.3.1); a
    /// cancelled challenge is reported here as the 401 it was.
    func request(_ method: String, _ path: String, body: JSON? = nil, authenticate: Bool = true) async throws -> Response {
        let text = databaseURL.absoluteString + (path.isEmpty ? "/" : "/" + path)
        guard let url = URL(string: text) else { throw FixtureError("bad URL \(text)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 120
        if let body {
            request.httpBody = body.jsonData()
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if authenticate {
            let token = Data("\(user):\(password)".utf8).base64EncodedString()
            request.setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
        }
        let delegate = ChallengeRefuser()
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        do {
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            return Response(status: status, body: try? JSON(parsing: data), text: String(decoding: data, as: UTF8.self))
        } catch where delegate.challenged {
            return Response(status: 401, body: nil, text: "(authentication challenge)")
        }
    }

    /// Like ``request(_:_:body:authenticate:)`` but throws unless the status is 2xx.
    func checked(_ method: String, _ path: String, body: JSON? = nil) async throws -> JSON {
        let response = try await request(method, path, body: body)
        guard (200..<300).contains(response.status), let json = response.body else {
            throw FixtureError("\(method) \(databaseURL)/\(path): \(response)")
        }
        return json
    }

    /// `POST _bulk_docs` with `new_edits: false`; the per-document results.
    func bulkDocs(_ revisions: [JSON]) async throws -> [JSON] {
        let answer = try await checked("POST", "_bulk_docs", body: ["docs": .array(revisions), "new_edits": false])
        guard case .array(let results) = answer else { throw FixtureError("_bulk_docs answered \(answer)") }
        return results
    }

    /// One page of `_changes` (`style=all_docs`).
    func changes(since: Int64 = 0, limit: Int = 10_000, channels: [String]? = nil,
                 longpollTimeout: Int? = nil) async throws -> (results: [JSON], lastSeq: Int64) {
        var query = "_changes?since=\(since)&limit=\(limit)&style=all_docs"
        if let longpollTimeout { query += "&feed=longpoll&timeout=\(longpollTimeout)" } else { query += "&feed=normal" }
        if let channels {
            let list = channels.joined(separator: ",").addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? ""
            query += "&filter=sync_gateway/bychannel&channels=\(list)"
        }
        let answer = try await checked("GET", query)
        guard case .array(let results)? = answer["results"], let last = answer["last_seq"]?.int64Value else {
            throw FixtureError("_changes answered \(answer)")
        }
        return (results, last)
    }

    /// Every entry of `_changes` from the start (all pages).
    func allChanges(channels: [String]? = nil) async throws -> [JSON] {
        var since: Int64 = 0
        var all: [JSON] = []
        while true {
            let page = try await changes(since: since, channels: channels)
            all += page.results
            if page.results.isEmpty || page.lastSeq == since { return all }
            since = page.lastSeq
        }
    }

    /// `POST _bulk_get?revs=true` for `(id, rev)` pairs: each revision, or nil where it answered
    /// an error, in request order.
    func bulkGet(_ pairs: [(id: String, rev: String)]) async throws -> [JSON?] {
        guard !pairs.isEmpty else { return [] }
        let docs: [JSON] = pairs.map { ["id": .string($0.id), "rev": .string($0.rev)] }
        let answer = try await checked("POST", "_bulk_get?revs=true", body: ["docs": .array(docs)])
        guard case .array(let results)? = answer["results"] else { throw FixtureError("_bulk_get answered \(answer)") }
        var revisions: [JSON?] = []
        for result in results {
            guard case .array(let docs)? = result["docs"] else { throw FixtureError("_bulk_get result \(result)") }
            for doc in docs { revisions.append(doc["ok"]) }
        }
        guard revisions.count == pairs.count else {
            throw FixtureError("_bulk_get answered \(revisions.count) revisions for \(pairs.count)")
        }
        return revisions
    }

    /// The server's view of the database as this user reads it: every document's winner, its
    /// leaves and their histories. Read while replications run, a document may change between the
    /// `_changes` pages and `_bulk_get`: the newest entry of each document counts, and a leaf gone
    /// by then makes this throw (callers polling for agreement try again).
    func snapshot() async throws -> ServerSnapshot {
        var newest: [String: JSON] = [:]
        var order: [String] = []
        for change in try await allChanges() {
            guard let id = change["id"]?.stringValue, case .array? = change["changes"] else {
                throw FixtureError("_changes entry \(change)")
            }
            if newest[id] == nil { order.append(id) }
            newest[id] = change
        }
        var entries: [(id: String, change: JSON, leaves: [String])] = []
        var pairs: [(id: String, rev: String)] = []
        for id in order {
            let change = newest[id]!
            guard case .array(let revs)? = change["changes"] else { continue }
            let leaves = revs.compactMap { $0["rev"]?.stringValue }
            entries.append((id, change, leaves))
            pairs += leaves.map { (id: id, rev: $0) }
        }
        var revisions: [JSON?] = []
        for start in stride(from: 0, to: pairs.count, by: 500) {
            revisions += try await bulkGet(Array(pairs[start..<min(start + 500, pairs.count)]))
        }
        var documents: [String: ServerDocument] = [:]
        var remaining = revisions[...]
        for entry in entries {
            var document = ServerDocument(id: entry.id, winner: entry.leaves.first ?? "",
                                          isDeleted: entry.change["deleted"]?.boolValue ?? false)
            for leaf in entry.leaves {
                guard let next = remaining.popFirst(), let revision = next else {
                    throw FixtureError("_bulk_get found no revision \(leaf) of \(entry.id), which _changes listed")
                }
                document.leaves[leaf] = ServerRevision(revision)
            }
            documents[entry.id] = document
        }
        return ServerSnapshot(documents: documents)
    }
}

/// One revision as the server returned it.
struct ServerRevision: Sendable, Equatable {
    var body: JSON
    var isDeleted: Bool { body["_deleted"]?.boolValue ?? false }
    /// The revision's own id and its ancestors' (from `_revisions`), newest first.
    var history: [String] {
        guard let start = body["_revisions"]?["start"]?.int64Value, case .array(let ids)? = body["_revisions"]?["ids"] else {
            return body["_rev"]?.stringValue.map { [$0] } ?? []
        }
        return ids.enumerated().compactMap { offset, digest in digest.stringValue.map { "\(start - Int64(offset))-\($0)" } }
    }
    /// The document's fields (members not starting with `_`).
    var fields: [String: JSON] {
        guard case .object(let members) = body else { return [:] }
        return members.filter { !$0.key.hasPrefix("_") }
    }
    /// `_strata.channels`.
    var channels: [String] {
        guard case .array(let list)? = body["_strata"]?["channels"] else { return [] }
        return list.compactMap(\.stringValue)
    }
    init(_ body: JSON) { self.body = body }
}

/// One document on the server.
struct ServerDocument: Sendable, Equatable {
    var id: String
    /// The winning revision id (the first of `_changes`' `changes`).
    var winner: String
    var isDeleted: Bool
    /// Every leaf the user may read, by revision id.
    var leaves: [String: ServerRevision] = [:]

    /// The non-deleted losing leaves (CouchDB's `_conflicts`).
    var conflicts: Set<String> {
        Set(leaves.filter { $0.key != winner && !$0.value.isDeleted }.map(\.key))
    }
    /// Every revision id on any leaf's history.
    var allRevisions: Set<String> { Set(leaves.values.flatMap(\.history)) }
}

/// A database's documents on the server, by id.
struct ServerSnapshot: Sendable {
    var documents: [String: ServerDocument]
    /// The live documents' winners by id.
    var liveWinners: [String: String] {
        documents.values.filter { !$0.isDeleted }.reduce(into: [:]) { $0[$1.id] = $1.winner }
    }
}

/// Cancels every authentication challenge and remembers that one came.
private final class ChallengeRefuser: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var sawChallenge = false

    var challenged: Bool { lock.withLock { sawChallenge } }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        lock.withLock { sawChallenge = true }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
}
