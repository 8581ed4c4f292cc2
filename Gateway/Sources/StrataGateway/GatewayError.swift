/// An error answered to a client as `{"error": kind, "reason": reason}` with an HTTP status
/// (PROTOCOL.md "Endpoints").
struct GatewayError: Error, CustomStringConvertible {
    var status: Int
    var kind: String
    var reason: String
    /// Seconds for a `Retry-After` header (429 answers).
    var retryAfter: Int? = nil

    var description: String { "\(status) \(kind): \(reason)" }

    static func badRequest(_ reason: String) -> GatewayError { .init(status: 400, kind: "bad_request", reason: reason) }
    static func unauthorized(_ reason: String) -> GatewayError { .init(status: 401, kind: "unauthorized", reason: reason) }
    static func forbidden(_ reason: String) -> GatewayError { .init(status: 403, kind: "forbidden", reason: reason) }
    static func notFound(_ reason: String) -> GatewayError { .init(status: 404, kind: "not_found", reason: reason) }
    static func methodNotAllowed(_ reason: String) -> GatewayError { .init(status: 405, kind: "method_not_allowed", reason: reason) }
    static func conflict(_ reason: String) -> GatewayError { .init(status: 409, kind: "conflict", reason: reason) }
    static func tooLarge(_ reason: String) -> GatewayError { .init(status: 413, kind: "request_entity_too_large", reason: reason) }
    static func tooManyRequests(_ reason: String, retryAfter: Int) -> GatewayError {
        .init(status: 429, kind: "too_many_requests", reason: reason, retryAfter: retryAfter)
    }
    static func serverError(_ reason: String) -> GatewayError { .init(status: 500, kind: "internal_server_error", reason: reason) }
    static func unavailable(_ reason: String) -> GatewayError { .init(status: 503, kind: "service_unavailable", reason: reason) }

    /// The error as a JSON object (also the per-document error of `_bulk_docs` without id/rev).
    var json: JSON {
        .object([("error", .string(kind)), ("reason", .string(reason))])
    }
}

/// An error of the admin command line (bad arguments, missing database or user).
struct CommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

import PostgresNIO

extension GatewayError {
    /// What a client is told of a PostgreSQL error: never PostgreSQL's text (it is logged), and a
    /// client's error told from the server's by SQLSTATE class, so that a client retries only
    /// what may succeed later: data exceptions (class 22: a value PostgreSQL refuses) are 400,
    /// program limits (class 54: a value over a row or index limit) 413, a unique violation
    /// (a concurrent writer won) 409; everything else is 503 (retried with backoff).
    static func from(_ error: PSQLError) -> GatewayError {
        let state = error.serverInfo?[.sqlState] ?? ""
        switch state.prefix(2) {
        case "22": return .badRequest("a value of the request is not valid for the database (SQLSTATE \(state))")
        case "54": return .tooLarge("a value of the request is over a limit of the database (SQLSTATE \(state))")
        case "23" where state == "23505": return .conflict("a concurrent request changed the same record; retry")
        default:
            return .unavailable(state.isEmpty ? "the database is unavailable; retry later" : "the database failed (SQLSTATE \(state)); retry later")
        }
    }
}
