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

    /// Answers a request, counts it in the metrics and logs it (at info level, with its route,
    /// status and duration as metadata).
    func respond(to request: Request, context: GatewayRequestContext) async -> Response {
        let started = ContinuousClock.now
        gateway.metrics.started()
        let response = await answer(request, context: context)
        let elapsed = ContinuousClock.now - started
        let route = Self.routeLabel(request.head.path ?? "/")
        gateway.metrics.finished(route: route, method: request.method.rawValue, status: response.status.code, duration: elapsed)
        gateway.logger.info("request", metadata: [
            "method": .string(request.method.rawValue), "route": .string(route), "status": .stringConvertible(response.status.code),
            "ms": .stringConvertible(Double((elapsed / .microseconds(1)).rounded()) / 1000),
            "address": .string(context.remoteAddress?.ipAddress ?? ""),
        ])
        return response
    }

    /// The route of a request target for metrics: the endpoint, never an id (bounded labels).
    static func routeLabel(_ path: String) -> String {
        let segments = (path.split(separator: "?", maxSplits: 1).first ?? "").split(separator: "/")
        guard let first = segments.first else { return "/" }
        if first.hasPrefix("_") || first == "metrics" { return "/" + first }
        guard segments.count > 1 else { return "/{db}" }
        let second = segments[1]
        if second == "_local" { return "/{db}/_local/{id}" }
        if second == "_strata" { return strataRouteLabel(Array(segments.dropFirst(2))) }
        if second.hasPrefix("_") { return "/{db}/" + second }
        return segments.count > 2 ? "/{db}/{docid}/{attachment}" : "/{db}/{docid}"
    }

    /// The route of a `/{db}/_strata/...` target (its segments after `_strata`) for metrics.
    static func strataRouteLabel(_ segments: [Substring]) -> String {
        if segments == ["changes"] { return "/{db}/_strata/changes" }
        if segments.count == 3 {
            switch (segments[0], segments[2]) {
            case ("channels", "publish"), ("channels", "delete"), ("channels", "messages"), ("channels", "count"):
                return "/{db}/_strata/channels/{name}/" + segments[2]
            case ("series", "claim"), ("series", "events"):
                return "/{db}/_strata/series/{path}/" + segments[2]
            default: break
            }
        }
        return "/{db}/_strata/{other}"
    }

    private func answer(_ request: Request, context: GatewayRequestContext) async -> Response {
        do {
            return try await route(request, context: context)
        } catch let error as GatewayError {
            return Self.error(error)
        } catch is NIOTooManyBytesError {
            return Self.error(.tooLarge("the request body is over the limit of \(gateway.maxRequestSize) bytes"))
        } catch let error as PSQLError {
            // PostgreSQL's text goes to the log only, never to a client.
            gateway.logger.error("PostgreSQL: \(String(reflecting: error))")
            return Self.error(.from(error))
        } catch let error as PostgresTransactionError {
            // A refusal decided inside a transaction (a series' conflict, a gap) is the client's.
            if let inner = error.closureError as? GatewayError { return Self.error(inner) }
            gateway.logger.error("PostgreSQL transaction: \(String(reflecting: error))")
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

    private func route(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let target = try Target(request.head.path ?? "/")
        let method = request.method
        let address = context.remoteAddress?.ipAddress
        if target.segments == ["metrics"], method == .get || method == .head {
            let waiting = await gateway.notifier.waiting
            await gateway.metrics.samplePool(gateway.pool)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(
                bytes: gateway.metrics.render(waitingNow: waiting, postgresReachable: gateway.pool.isReachable))))
        }
        guard let database = target.segments.first else {
            guard method == .get || method == .head else { throw GatewayError.methodNotAllowed("Only GET,HEAD allowed") }
            return Self.json(200, Array(#"{"couchdb":"Welcome","version":"3.3.3","vendor":{"name":"strata-gateway","version":"1"},"features":[]}"#.utf8))
        }
        if database.hasPrefix("_") {
            return try await server(database, target: target, request: request, address: address)
        }
        guard Databases.isValidName(database) else {
            throw GatewayError.badRequest("Name: '\(database)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        }
        guard gateway.pool.isReachable else {
            throw GatewayError.unavailable("PostgreSQL is unreachable; the gateway reconnects every 250 ms")
        }
        let user = try await gateway.authenticator.authenticate(
            database: database, authorization: request.headers[.authorization], cookie: request.headers[.cookie], address: address, gateway: gateway)
        let rest = Array(target.segments.dropFirst())
        let query = target.query
        guard let first = rest.first else {
            switch method {
            case .get, .head: return Self.json(200, try await Databases.info(database, user: user, gateway: gateway))
            case .put: throw GatewayError(status: 412, kind: "file_exists", reason: "The database could not be created, the file already exists.")
            case .post:
                return try await Documents.saveOne(try parseDocument(try await body(request)), newEdits: true, status: 201, gateway: gateway, database: database, user: user)
            case .delete: throw GatewayError.forbidden("databases are deleted with the admin command, not over HTTP")
            default: throw GatewayError.methodNotAllowed("Only GET,HEAD,POST allowed")
            }
        }
        switch (first, method) {
        case ("_local", _):
            guard rest.count >= 2 else { throw GatewayError.notFound("missing") }
            let id = rest.dropFirst().joined(separator: "/")
            switch method {
            case .get, .head: return Self.json(200, try await LocalDocuments.get(gateway: gateway, user: user, id: id))
            case .put: return Self.json(201, try await LocalDocuments.put(gateway: gateway, user: user, id: id, body: try await body(request, limit: Self.maximumQueryBodySize)))
            case .delete: return Self.json(200, try await LocalDocuments.delete(gateway: gateway, user: user, id: id, rev: query["rev"]))
            default: throw GatewayError.methodNotAllowed("Only GET,HEAD,PUT,DELETE allowed")
            }
        case ("_changes", .get), ("_changes", .head), ("_changes", .post):
            var parsed: JSON? = nil
            if method == .post {
                let bytes = try await body(request, limit: Self.maximumQueryBodySize)
                if bytes.readableBytes > 0 {
                    do { parsed = try JSONParser.parse(bytes.readableBytesView) } catch { throw GatewayError.badRequest("_changes body: \(error)") }
                }
            }
            return try await ChangesFeed.handle(gateway: gateway, database: database, user: user, query: query, body: parsed)
        case ("_all_docs", .get), ("_all_docs", .head):
            return Self.json(200, try await AllDocs.handle(gateway: gateway, user: user, query: query, body: nil))
        case ("_all_docs", .post):
            return Self.json(200, try await AllDocs.handle(gateway: gateway, user: user, query: query, body: try await body(request, limit: Self.maximumQueryBodySize)))
        case ("_revs_diff", .post):
            return Self.json(200, try await RevsDiff.handle(gateway: gateway, user: user, body: try await body(request, limit: Self.maximumQueryBodySize)))
        case ("_bulk_get", .post):
            let revs = query["revs"].map { $0 == "true" } ?? false
            return Self.json(200, try await RevisionReader.bulkGet(gateway: gateway, user: user, body: try await body(request, limit: Self.maximumQueryBodySize), revs: revs))
        case ("_bulk_docs", .post):
            return Self.json(201, try await BulkDocs.handle(gateway: gateway, database: database, user: user, body: try await body(request)))
        case ("_strata", _):
            return try await strata(Array(rest.dropFirst()), request: request, database: database, user: user, query: query)
        case ("_ensure_full_commit", .post):
            // Every write is committed (and durable) when it is answered.
            return Self.json(201, Array(#"{"ok":true,"instance_start_time":"0"}"#.utf8))
        case ("_changes", _), ("_revs_diff", _), ("_bulk_get", _), ("_bulk_docs", _), ("_all_docs", _), ("_ensure_full_commit", _):
            throw GatewayError.methodNotAllowed("\(method) /\(database)/\(first) is not allowed")
        default:
            guard !first.hasPrefix("_") else {
                throw GatewayError.notFound(first == "_design" ? "this gateway has no design documents" : "missing")
            }
            let docID = first
            try DocumentIDs.check(docID)
            if rest.count > 1 {
                let name = rest.dropFirst().joined(separator: "/")
                switch method {
                case .get, .head:
                    return try await Documents.getAttachment(gateway: gateway, user: user, docID: docID, name: name, rev: query["rev"])
                case .put:
                    let data = Array(try await body(request).readableBytesView)
                    return try await Documents.changeAttachment(
                        gateway: gateway, database: database, user: user, docID: docID, name: name,
                        rev: query["rev"] ?? request.headers[.ifMatch].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) },
                        data: data, contentType: request.headers[.contentType])
                case .delete:
                    return try await Documents.changeAttachment(
                        gateway: gateway, database: database, user: user, docID: docID, name: name,
                        rev: query["rev"] ?? request.headers[.ifMatch].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) },
                        data: nil, contentType: nil)
                default: throw GatewayError.methodNotAllowed("Only GET,HEAD,PUT,DELETE allowed")
                }
            }
            switch method {
            case .get, .head:
                return try await Documents.get(gateway: gateway, user: user, docID: docID, query: query, accept: request.headers[.accept])
            case .put:
                return try await Documents.put(
                    gateway: gateway, database: database, user: user, docID: docID, body: try await body(request), query: query,
                    ifMatch: request.headers[.ifMatch])
            case .delete:
                return try await Documents.delete(
                    gateway: gateway, database: database, user: user, docID: docID,
                    rev: query["rev"] ?? request.headers[.ifMatch].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) })
            default: throw GatewayError.methodNotAllowed("Only GET,HEAD,PUT,DELETE allowed")
            }
        }
    }

    /// Channels, time series and the database's change feed (`/{db}/_strata/...`, PROTOCOL.md
    /// "Channels and time series"): `segments` are the decoded path segments after `_strata`.
    private func strata(_ segments: [String], request: Request, database: String, user: GatewayUser, query: [String: String]) async throws -> Response {
        let method = request.method
        let reading = method == .get || method == .head
        if segments == ["changes"] {
            guard reading else { throw GatewayError.methodNotAllowed("Only GET,HEAD allowed") }
            return try await StreamChanges.handle(gateway: gateway, database: database, user: user, query: query)
        }
        guard segments.count == 3 else { throw GatewayError.notFound("no endpoint /\(database)/_strata/\(segments.joined(separator: "/"))") }
        let name = segments[1]
        switch (segments[0], segments[2]) {
        case ("channels", "publish"):
            guard method == .post else { throw GatewayError.methodNotAllowed("Only POST allowed") }
            return Self.json(200, try await ChannelMessages.publish(gateway: gateway, database: database, user: user, name: name, body: try await body(request)))
        case ("channels", "delete"):
            guard method == .post else { throw GatewayError.methodNotAllowed("Only POST allowed") }
            return Self.json(200, try await ChannelMessages.delete(
                gateway: gateway, database: database, user: user, name: name, body: try await body(request, limit: Self.maximumQueryBodySize)))
        case ("channels", "messages"):
            guard reading else { throw GatewayError.methodNotAllowed("Only GET,HEAD allowed") }
            return Self.json(200, try await ChannelMessages.messages(gateway: gateway, user: user, name: name, query: query))
        case ("channels", "count"):
            guard reading else { throw GatewayError.methodNotAllowed("Only GET,HEAD allowed") }
            return Self.json(200, try await ChannelMessages.count(gateway: gateway, user: user, name: name, query: query))
        case ("series", "claim"):
            guard method == .post else { throw GatewayError.methodNotAllowed("Only POST allowed") }
            return Self.json(200, try await SeriesEvents.claim(gateway: gateway, user: user, path: name, body: try await body(request, limit: Self.maximumQueryBodySize)))
        case ("series", "events"):
            if reading { return Self.json(200, try await SeriesEvents.list(gateway: gateway, user: user, path: name, query: query)) }
            guard method == .post else { throw GatewayError.methodNotAllowed("Only GET,HEAD,POST allowed") }
            return Self.json(200, try await SeriesEvents.append(gateway: gateway, database: database, user: user, path: name, body: try await body(request)))
        default:
            throw GatewayError.notFound("no endpoint /\(database)/_strata/\(segments[0])/{name}/\(segments[2])")
        }
    }

    /// A JSON object body (a document).
    private func parseDocument(_ bytes: ByteBuffer) throws -> JSON {
        do {
            return try JSONParser.parse(bytes.readableBytesView)
        } catch {
            throw GatewayError.badRequest("the document: \(error)")
        }
    }

    /// The server-wide endpoints (`/_...`).
    private func server(_ name: String, target: Target, request: Request, address: String?) async throws -> Response {
        let method = request.method
        switch (name, method) {
        case ("_up", .get), ("_up", .head):
            guard gateway.pool.isReachable else {
                return Self.json(503, Array(#"{"status":"unavailable","reason":"PostgreSQL is unreachable"}"#.utf8))
            }
            return Self.json(200, Array(#"{"status":"ok"}"#.utf8))
        case ("_uuids", .get):
            let count = target.query["count"].flatMap { Int($0) } ?? 1
            guard (1...1000).contains(count) else { throw GatewayError.badRequest("count must be 1...1000") }
            var writer = JSONWriter(capacity: 36 * count + 16)
            writer.raw("{\"uuids\":[")
            for i in 0..<count {
                if i > 0 { writer.raw(",") }
                writer.string(randomHex(16))
            }
            writer.raw("]}")
            return Self.json(200, writer.bytes)
        case ("_session", .post):
            return try await Sessions.open(gateway: gateway, body: try await body(request, limit: 64 * 1024), contentType: request.headers[.contentType], address: address)
        case ("_session", .get):
            return try await Sessions.info(gateway: gateway, request: request, address: address)
        case ("_session", .delete):
            return try await Sessions.close(gateway: gateway, request: request)
        case ("_all_dbs", .get):
            return Self.json(200, try await Sessions.allDatabases(gateway: gateway, request: request, address: address))
        case ("_uuids", _), ("_session", _), ("_all_dbs", _), ("_up", _):
            throw GatewayError.methodNotAllowed("\(method) /\(name) is not allowed")
        default:
            throw GatewayError.notFound("no endpoint /\(name)")
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
