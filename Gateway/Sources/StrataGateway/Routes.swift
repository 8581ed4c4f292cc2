import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO

/// The HTTP front: parses the raw request target itself (so that `%2F` in a database name or a
/// document id stays inside its path segment), authenticates, dispatches to the endpoint and
/// turns every error into PROTOCOL.md's JSON error.
struct Routes: Sendable {
    var gateway: Gateway

    /// A request target split into decoded path segments and query parameters.
    struct Target {
        var segments: [String]
        var query: [String: String]

        init(_ raw: String) throws(GatewayError) {
            let parts = raw.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let path = parts.first.map(String.init) ?? "/"
            segments = []
            for piece in path.split(separator: "/", omittingEmptySubsequences: true) {
                guard let decoded = String(piece).removingPercentEncoding, !decoded.utf8.contains(0) else {
                    throw .badRequest("bad percent-encoding in the path '\(path)' (invalid UTF-8 or U+0000)")
                }
                segments.append(decoded)
            }
            query = [:]
            if parts.count > 1 {
                for pair in parts[1].split(separator: "&") {
                    let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    let key = String(kv[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(kv[0])
                    let value = kv.count > 1 ? (String(kv[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(kv[1])) : ""
                    query[key] = value
                }
            }
        }
    }

    func respond(to request: Request, context: GatewayRequestContext) async -> Response {
        do {
            let (status, bytes) = try await route(request, context: context)
            return Self.json(status, bytes)
        } catch let error as GatewayError {
            return Self.error(error)
        } catch is NIOTooManyBytesError {
            return Self.error(.tooLarge("the request body is over the limit of \(gateway.maxRequestSize) bytes"))
        } catch let error as PSQLError {
            // PostgreSQL's text goes to the log only, never to a client.
            gateway.logger.error("PostgreSQL: \(String(reflecting: error))")
            return Self.error(.from(error))
        } catch let error as PostgresTransactionError {
            gateway.logger.error("PostgreSQL transaction: \(String(reflecting: error))")
            if let inner = error.closureError as? GatewayError { return Self.error(inner) }
            if let inner = (error.closureError ?? error.commitError ?? error.beginError) as? PSQLError {
                return Self.error(.from(inner))
            }
            return Self.error(.unavailable("the database did not answer; retry later"))
        } catch {
            gateway.logger.error("request \(request.method) \(request.head.path ?? ""): \(error)")
            // The pool's errors (PostgreSQL unreachable, its circuit breaker open) are
            // transient: 503, which the replicator retries.
            if String(reflecting: type(of: error)).contains("ConnectionPool") {
                await gateway.pool.recover()
                return Self.error(.unavailable("the database is unreachable; retry later"))
            }
            return Self.error(.serverError("the request failed (see the gateway's log)"))
        }
    }

    static func json(_ status: Int, _ bytes: [UInt8]) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func error(_ error: GatewayError) -> Response {
        var response = json(error.status, JSONWriter.encode(error.json))
        if error.status == 401 {
            response.headers[.wwwAuthenticate] = "Basic realm=\"strata-gateway\""
        }
        if let retryAfter = error.retryAfter {
            response.headers[.retryAfter] = String(retryAfter)
        }
        return response
    }

    /// The largest body of a request that carries no document (`_revs_diff`, `_bulk_get`,
    /// `_local`): what a JSON tree of it costs in memory is bounded by this.
    static let maximumQueryBodySize = 16 * 1024 * 1024

    /// The request's body, refused with 413 past `limit` (the request limit by default) before
    /// it is read when its Content-Length says so.
    private func body(_ request: Request, limit: Int? = nil) async throws -> ByteBuffer {
        let limit = min(limit ?? gateway.maxRequestSize, gateway.maxRequestSize)
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw GatewayError.tooLarge("the request body (\(length) bytes) is over the limit of \(limit) bytes for this endpoint")
        }
        do {
            return try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw GatewayError.tooLarge("the request body is over the limit of \(limit) bytes for this endpoint")
        }
    }

    private func route(_ request: Request, context: GatewayRequestContext) async throws -> (Int, [UInt8]) {
        let target = try Target(request.head.path ?? "/")
        let method = request.method
        guard let database = target.segments.first else {
            guard method == .get || method == .head else { throw GatewayError.methodNotAllowed("\(method) / (only GET)") }
            return (200, Array(#"{"couchdb":"Welcome","vendor":{"name":"strata-gateway","version":"1"}}"#.utf8))
        }
        guard Databases.isValidName(database) else {
            throw GatewayError.notFound("no database named '\(database)' (not a valid database name)")
        }
        guard gateway.pool.isReachable else {
            throw GatewayError.unavailable("PostgreSQL is unreachable; the gateway reconnects every 250 ms")
        }
        let user = try await gateway.authenticator.authenticate(
            database: database, authorization: request.headers[.authorization], address: context.remoteAddress?.ipAddress)
        let rest = Array(target.segments.dropFirst())
        guard let first = rest.first else {
            guard method == .get || method == .head else { throw GatewayError.methodNotAllowed("\(method) /\(database)/ (only GET)") }
            var seq: Int64 = 0
            for try await value in try await gateway.client.query("SELECT seq FROM databases WHERE id = \(user.databaseID)", logger: gateway.logger).decode(Int64.self) {
                seq = value
            }
            var writer = JSONWriter()
            writer.raw("{\"db_name\":"); writer.string(database)
            writer.raw(",\"update_seq\":"); writer.integer(seq); writer.raw("}")
            return (200, writer.bytes)
        }
        switch (first, method) {
        case ("_local", _):
            guard rest.count >= 2 else { throw GatewayError.notFound("no local document id in the path") }
            let id = rest.dropFirst().joined(separator: "/")
            switch method {
            case .get, .head: return (200, try await LocalDocuments.get(gateway: gateway, user: user, id: id))
            case .put: return (201, try await LocalDocuments.put(gateway: gateway, user: user, id: id, body: try await body(request, limit: Self.maximumQueryBodySize)))
            case .delete: return (200, try await LocalDocuments.delete(gateway: gateway, user: user, id: id, rev: target.query["rev"]))
            default: throw GatewayError.methodNotAllowed("\(method) on a local document (GET, PUT or DELETE)")
            }
        case ("_changes", .get), ("_changes", .head):
            return (200, try await ChangesFeed.handle(gateway: gateway, database: database, user: user, query: target.query))
        case ("_revs_diff", .post):
            return (200, try await RevsDiff.handle(gateway: gateway, user: user, body: try await body(request, limit: Self.maximumQueryBodySize)))
        case ("_bulk_get", .post):
            let revs = target.query["revs"].map { $0 == "true" } ?? false
            return (200, try await RevisionReader.bulkGet(gateway: gateway, user: user, body: try await body(request, limit: Self.maximumQueryBodySize), revs: revs))
        case ("_bulk_docs", .post):
            return (201, try await BulkDocs.handle(gateway: gateway, database: database, user: user, body: try await body(request)))
        case ("_changes", _), ("_revs_diff", _), ("_bulk_get", _), ("_bulk_docs", _):
            throw GatewayError.methodNotAllowed("\(method) /\(database)/\(first) is not supported")
        default:
            guard !first.hasPrefix("_") || rest.count > 1 else {
                throw GatewayError.notFound("no endpoint /\(database)/\(first)")
            }
            guard method == .get || method == .head else {
                throw GatewayError.methodNotAllowed("\(method) on a document (GET only; write with _bulk_docs)")
            }
            let docID = rest.joined(separator: "/")
            try DocumentIDs.check(docID)
            let revs = target.query["revs"].map { $0 == "true" } ?? false
            return (200, try await RevisionReader.getDocument(gateway: gateway, user: user, docID: docID, rev: target.query["rev"], revs: revs))
        }
    }
}

/// The request context: Hummingbird's core context and the client's address (for the login
/// limits of LoginLimiter).
struct GatewayRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The peer's address, nil when the channel has none.
    var remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The rules every document id obeys on every path (PROTOCOL.md "Documents on the wire").
enum DocumentIDs {
    /// The longest id, in UTF-8 bytes (PostgreSQL's btree rows bound what an index can hold).
    static let maximumLength = 1024

    /// Throws 400 naming the rule `id` breaks: empty, longer than `maximumLength` bytes, or
    /// containing U+0000.
    static func check(_ id: String, what: String = "a document id") throws(GatewayError) {
        guard !id.isEmpty else { throw .badRequest("\(what) is empty") }
        guard id.utf8.count <= maximumLength else {
            throw .badRequest("\(what) is \(id.utf8.count) bytes long, over the limit of \(maximumLength)")
        }
        guard !id.utf8.contains(0) else { throw .badRequest("\(what) must not contain U+0000") }
    }
}
