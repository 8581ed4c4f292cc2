import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO

/// CouchDB's cookie authentication (`POST`/`GET`/`DELETE /_session`) and the server-wide
/// endpoints that need a user (`_all_dbs`). Users belong to databases, so a session belongs to
/// a user name and to the databases where that name's password matched when it was opened; a
/// request to one of them with the cookie acts as that database's user of that name, with the
/// rights it has at the time of the request. Sessions are rows of PostgreSQL (any gateway
/// process honours them), keyed by a SHA-256 of the token, never the token itself.
enum Sessions {
    /// A session's lifetime (CouchDB's default `timeout` of 600 s).
    static let lifetime = 600
    static let cookieName = "AuthSession"

    static func tokenHash(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The session token of a Cookie header, if any.
    static func token(fromCookie header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0] == cookieName, !pair[1].isEmpty { return String(pair[1]) }
        }
        return nil
    }

    /// The session of `token`: its user name and databases, nil when unknown or expired.
    static func lookup(_ token: String, gateway: Gateway) async throws -> (name: String, databases: [Int64])? {
        guard token.utf8.count <= 128 else { return nil }
        let rows = try await gateway.client.query(
            "SELECT name, dbs FROM sessions WHERE token_hash = \(tokenHash(token)) AND expires > now()", logger: gateway.logger)
        for try await (name, dbs) in rows.decode((String, [Int64]).self) { return (name, dbs) }
        return nil
    }

    /// `POST /_session` with `name` and `password` (JSON or a form).
    static func open(gateway: Gateway, body: ByteBuffer, contentType: String?, address: String?) async throws -> Response {
        var name: String? = nil, password: String? = nil
        if contentType?.contains("application/x-www-form-urlencoded") == true {
            let text = String(decoding: body.readableBytesView, as: UTF8.self)
            for pair in text.split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let value = kv.count > 1 ? String(kv[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding : ""
                if kv[0] == "name" { name = value } else if kv[0] == "password" { password = value }
            }
        } else {
            let parsed: JSON
            do { parsed = try JSONParser.parse(body.readableBytesView) } catch { throw GatewayError.badRequest("_session body: \(error)") }
            name = parsed["name"]?.stringValue
            password = parsed["password"]?.stringValue
        }
        guard let name, let password, !name.isEmpty else { throw GatewayError.badRequest("_session needs a name and a password") }
        let users = try await gateway.authenticator.verifyAnywhere(name: name, password: password, address: address)
        guard !users.isEmpty else { throw GatewayError.unauthorized("Name or password is incorrect.") }
        let token = randomHex(32)
        try await gateway.client.query(
            """
            INSERT INTO sessions (token_hash, name, dbs, expires)
            VALUES (\(tokenHash(token)), \(name), \(users.map(\.databaseID)), now() + make_interval(secs => \(Double(lifetime))))
            """, logger: gateway.logger)
        try await gateway.client.query("DELETE FROM sessions WHERE expires < now()", logger: gateway.logger)
        var writer = JSONWriter()
        writer.raw("{\"ok\":true,\"name\":"); writer.string(name); writer.raw(",\"roles\":[]}")
        // Set-Cookie first, as CouchDB sends it (couchdb-python 1.2 reads the first header).
        var headers = HTTPFields()
        headers[.setCookie] = "\(cookieName)=\(token); Version=1; Path=/; Max-Age=\(lifetime); HttpOnly; SameSite=Lax"
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    /// `GET /_session`: who the request authenticates as (cookie or Basic), or nobody.
    static func info(gateway: Gateway, request: Request, address: String?) async throws -> Response {
        var name: String? = nil
        var method: String? = nil
        if let token = token(fromCookie: request.headers[.cookie]), let session = try await lookup(token, gateway: gateway) {
            name = session.name
            method = "cookie"
        } else if let (user, password) = basicCredentials(request.headers[.authorization]) {
            if !(try await gateway.authenticator.verifyAnywhere(name: user, password: password, address: address)).isEmpty {
                name = user
                method = "default"
            } else {
                throw GatewayError.unauthorized("Name or password is incorrect.")
            }
        }
        var writer = JSONWriter()
        writer.raw("{\"ok\":true,\"userCtx\":{\"name\":")
        if let name { writer.string(name) } else { writer.raw("null") }
        writer.raw(",\"roles\":[]},\"info\":{\"authentication_handlers\":[\"cookie\",\"default\"]")
        if let method { writer.raw(",\"authenticated\":"); writer.string(method) }
        writer.raw("}}")
        return Routes.json(200, writer.bytes)
    }

    /// `DELETE /_session`: ends the cookie's session.
    static func close(gateway: Gateway, request: Request) async throws -> Response {
        if let token = token(fromCookie: request.headers[.cookie]) {
            try await gateway.client.query("DELETE FROM sessions WHERE token_hash = \(tokenHash(token))", logger: gateway.logger)
        }
        var response = Routes.json(200, Array(#"{"ok":true}"#.utf8))
        response.headers[.setCookie] = "\(cookieName)=; Version=1; Path=/; Max-Age=0; HttpOnly"
        return response
    }

    /// `GET /_all_dbs`: the databases the request's user (cookie or Basic) belongs to, sorted.
    static func allDatabases(gateway: Gateway, request: Request, address: String?) async throws -> [UInt8] {
        var ids: [Int64] = []
        if let token = token(fromCookie: request.headers[.cookie]), let session = try await lookup(token, gateway: gateway) {
            ids = session.databases
        } else if let (user, password) = basicCredentials(request.headers[.authorization]) {
            ids = try await gateway.authenticator.verifyAnywhere(name: user, password: password, address: address).map(\.databaseID)
            if ids.isEmpty { throw GatewayError.unauthorized("Name or password is incorrect.") }
        } else {
            throw GatewayError.unauthorized("_all_dbs lists the databases of a user: log in (Basic credentials or _session)")
        }
        var writer = JSONWriter()
        writer.raw("[")
        var first = true
        for try await name in try await gateway.client.query(
            "SELECT name FROM databases WHERE id = ANY(\(ids)::int8[]) ORDER BY name", logger: gateway.logger).decode(String.self) {
            if !first { writer.raw(",") }
            first = false
            writer.string(name)
        }
        writer.raw("]")
        return writer.bytes
    }

    /// The (name, password) of a Basic Authorization header.
    static func basicCredentials(_ header: String?) -> (String, String)? {
        guard let header, header.lowercased().hasPrefix("basic ") else { return nil }
        let encoded = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard let data = Data(base64Encoded: encoded), let decoded = String(data: data, encoding: .utf8),
              let colon = decoded.firstIndex(of: ":") else { return nil }
        return (String(decoded[..<colon]), String(decoded[decoded.index(after: colon)...]))
    }
}
