/// An error answered to a client as `{"error": kind, "reason": reason}` with an HTTP status
/// (PROTOCOL.md "Endpoints").
struct GatewayError: Error, CustomStringConvertible {
    var status: Int
    var kind: String
    var reason: String

    var description: String { "\(status) \(kind): \(reason)" }

    static func badRequest(_ reason: String) -> GatewayError { .init(status: 400, kind: "bad_request", reason: reason) }
    static func unauthorized(_ reason: String) -> GatewayError { .init(status: 401, kind: "unauthorized", reason: reason) }
    static func forbidden(_ reason: String) -> GatewayError { .init(status: 403, kind: "forbidden", reason: reason) }
    static func notFound(_ reason: String) -> GatewayError { .init(status: 404, kind: "not_found", reason: reason) }
    static func methodNotAllowed(_ reason: String) -> GatewayError { .init(status: 405, kind: "method_not_allowed", reason: reason) }
    static func conflict(_ reason: String) -> GatewayError { .init(status: 409, kind: "conflict", reason: reason) }
    static func tooLarge(_ reason: String) -> GatewayError { .init(status: 413, kind: "request_entity_too_large", reason: reason) }
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
