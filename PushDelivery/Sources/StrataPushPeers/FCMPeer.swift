import Crypto
import Foundation
import NIOHTTP1
import Synchronization
import _CryptoExtras

/// A protocol-faithful FCM HTTP v1 API and Google OAuth 2.0 token endpoint on loopback: HTTPS on
/// 127.0.0.1 (ALPN `h2` or `http/1.1`).
///
/// ```swift
/// let peer = try FCMPeer()
/// try await peer.start()
/// let account = try peer.makeServiceAccount(projectID: "strata-test")   // account.json
/// peer.script(token: "reg1", answers: [.unregistered])
/// ```
///
/// `POST /token` (``tokenURI``) takes the form `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&
/// assertion=<JWT>` and answers `{"access_token", "expires_in", "token_type": "Bearer"}` when the
/// assertion is an RS256 JWT signed by a registered service account (`iss`, and `kid` if present),
/// whose `scope` holds `https://www.googleapis.com/auth/firebase.messaging`, whose `aud` is the token
/// URI, with `exp - iat` at most 3600 s and `exp` not past by the peer's clock; otherwise 400
/// `{"error": "invalid_grant" | "invalid_scope" | "unsupported_grant_type", "error_description"}`.
///
/// `POST /v1/projects/{project_id}/messages:send` needs `authorization: Bearer <live access token>`
/// (401 `UNAUTHENTICATED`), the project of the service account the token was issued to (403
/// `PERMISSION_DENIED`), a body `{"message": {"token": …, …}}` (400 `INVALID_ARGUMENT`) whose message
/// without its token is at most 4096 bytes (400 `INVALID_ARGUMENT` "Message is too big"); then the
/// token's next scripted ``Answer``, else `{"name": "projects/<project>/messages/<id>"}`.
public final class FCMPeer: Sendable {
    /// The OAuth scope FCM's HTTP v1 API needs.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    /// A `messages:send` request the peer accepted (answered 200).
    public struct Message: Sendable {
        /// The registration token (`message.token`).
        public let token: String
        /// The project id from the path.
        public let projectID: String
        /// The `message` object's JSON text, as received.
        public let message: Data
        /// The whole request body.
        public let body: Data
        /// The access token it carried.
        public let accessToken: String
        /// The `name` answered.
        public let name: String
        /// The number of the connection that carried it.
        public let connection: Int

        /// The `message` object.
        public var messageObject: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: message)) as? [String: Any]
        }
    }

    /// An access token the token endpoint issued.
    public struct AccessToken: Sendable {
        /// The token.
        public let token: String
        /// The service account it was issued to.
        public let clientEmail: String
        /// The assertion's `iat`.
        public let assertionIssuedAt: Date
        /// When it stops working, by the peer's clock.
        public let expires: Date
    }

    /// One answer of `messages:send`, whatever it was.
    public struct Exchange: Sendable {
        /// The registration token (empty when the body held none).
        public let token: String
        /// The status answered; 0 for a reset stream or no answer.
        public let status: Int
        /// The canonical status or FCM error code answered, nil for a success.
        public let reason: String?
    }

    private struct State {
        var accounts: [String: ServiceAccount] = [:]
        var accessTokens: [String: AccessToken] = [:]
        var issued: [AccessToken] = []
        var tokenRequests = 0
        var verifiedAssertions: [String: Date] = [:]
        var scripts: [String: [Answer]] = [:]
        var received: [Message] = []
        var receivedByToken: [String: [Int]] = [:]
        var exchanges: [Exchange] = []
        var keepsRecords = true
        var acceptedCount = 0
        var answeredCount = 0

        /// Counts an answer, and keeps it when records are kept.
        mutating func note(_ exchange: @autoclosure () -> Exchange) {
            answeredCount += 1
            if keepsRecords { exchanges.append(exchange()) }
        }
        var clockOffset: Duration = .zero
        var accessTokenLifetime = 3600
        var messageCounter: UInt64 = 0x1000
    }

    /// The certificate authority whose server certificate the peer presents.
    public let authority: TestCertificateAuthority
    private let state = Mutex(State())
    private let server = Mutex<LoopbackServer?>(nil)

    /// Makes a stopped peer.
    /// - Parameters:
    ///   - port: the port of the first ``start()`` (0: any free port); every restart binds it again.
    ///   - authority: the CA that signs the peer's certificate; a new one when nil.
    ///   - allowHTTP1: whether ALPN offers `http/1.1` besides `h2`.
    public init(port: Int = 0, authority: TestCertificateAuthority? = nil, allowHTTP1: Bool = true) throws {
        self.authority = try authority ?? TestCertificateAuthority()
        let loopback = try LoopbackServer(port: port, authority: self.authority, allowHTTP1: allowHTTP1) { [weak self] request in
            self?.answer(request) ?? .reset
        }
        server.withLock { $0 = loopback }
    }

    private var loopback: LoopbackServer { server.withLock { $0! } }

    // MARK: Running

    /// Starts listening (again, on the same port after a ``stop()``).
    public func start() async throws { try await loopback.start() }

    /// Kills the peer: closes the listener and every connection abruptly, answering nothing pending.
    public func stop() async { await loopback.stop() }

    /// The port (bound by the first ``start()`` when 0 was asked for).
    public var port: Int { loopback.port }

    /// `https://127.0.0.1:<port>`: `FCMConfiguration`'s `endpoint`.
    public var url: URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// `https://127.0.0.1:<port>/token`: the service accounts' `token_uri`.
    public var tokenURI: URL { URL(string: "https://127.0.0.1:\(port)/token")! }

    /// How many connections the peer accepted, over all its starts.
    public var connectionCount: Int { loopback.connectionCount }

    // MARK: Configuration

    /// Makes and registers a service account whose `token_uri` is ``tokenURI`` (start the peer first
    /// when it was made with port 0, so that the port is known).
    public func makeServiceAccount(projectID: String = "strata-test", clientEmail: String? = nil) throws -> ServiceAccount {
        let email = clientEmail ?? "firebase-adminsdk@\(projectID).iam.gserviceaccount.com"
        let account = try ServiceAccount(projectID: projectID, clientEmail: email, tokenURI: tokenURI)
        state.withLock { $0.accounts[email] = account }
        return account
    }

    /// Queues answers for a registration token's next `messages:send` requests, after any already queued.
    public func script(token: String, answers: [Answer]) {
        state.withLock { $0.scripts[token, default: []].append(contentsOf: answers) }
    }

    /// The `expires_in` of the access tokens issued from now on, in seconds.
    public var accessTokenLifetime: Int {
        get { state.withLock { $0.accessTokenLifetime } }
        set { state.withLock { $0.accessTokenLifetime = newValue } }
    }

    /// Makes every access token issued so far stop working (401 from then on).
    public func expireAccessTokens() {
        state.withLock { $0.accessTokens.removeAll() }
    }

    /// How far the peer's clock is ahead of the system clock.
    public var clockOffset: Duration {
        get { state.withLock { $0.clockOffset } }
        set { state.withLock { $0.clockOffset = newValue } }
    }

    /// The peer's clock: the system clock plus ``clockOffset``.
    public var now: Date { Date().addingTimeInterval(clockOffset.timeInterval) }

    // MARK: Records

    /// Every `messages:send` request answered 200, in the order answered.
    public var received: [Message] { state.withLock { $0.received } }

    /// How many `messages:send` requests were answered 200.
    public var receivedCount: Int { state.withLock { $0.acceptedCount } }

    /// How many `messages:send` requests the peer answered (or reset, or left unanswered).
    public var answeredCount: Int { state.withLock { $0.answeredCount } }

    /// Whether the peer keeps every `messages:send` request and answer (``received``,
    /// ``exchanges``); true by default. Off, only the counts move.
    public var keepsRecords: Bool {
        get { state.withLock { $0.keepsRecords } }
        set { state.withLock { $0.keepsRecords = newValue } }
    }

    /// The requests for a registration token answered 200, in order.
    public func received(token: String) -> [Message] {
        state.withLock { state in (state.receivedByToken[token] ?? []).map { state.received[$0] } }
    }

    /// Every `messages:send` answer, in order.
    public var exchanges: [Exchange] { state.withLock { $0.exchanges } }

    /// The `messages:send` answers for a registration token, in order.
    public func exchanges(token: String) -> [Exchange] { exchanges.filter { $0.token == token } }

    /// Every access token issued, in order.
    public var issuedAccessTokens: [AccessToken] { state.withLock { $0.issued } }

    /// How many requests the token endpoint got (answered or refused).
    public var tokenRequests: Int { state.withLock { $0.tokenRequests } }

    // MARK: Answering

    private func answer(_ request: PeerRequest) -> PeerReply {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        if path == "/token" {
            state.withLock { $0.tokenRequests += 1 }
            guard request.method == "POST" else { return Self.errorReply(405, errorCode: nil, message: "Method not allowed.", fieldViolations: [], retryAfter: nil) }
            return issueAccessToken(request)
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "v1", parts[2] == "projects", !parts[3].isEmpty,
              parts[4] == "messages:send"
        else { return Self.errorReply(404, errorCode: nil, message: "Not found.", fieldViolations: [], retryAfter: nil) }
        guard request.method == "POST" else {
            return Self.errorReply(405, errorCode: nil, message: "Method not allowed.", fieldViolations: [], retryAfter: nil)
        }
        return send(request, projectID: String(parts[3]))
    }

    private func issueAccessToken(_ request: PeerRequest) -> PeerReply {
        func refuse(_ error: String, _ description: String) -> PeerReply {
            .json(400, ["error": error, "error_description": description])
        }
        let form = Self.form(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"], let jwt = JSONWebToken(assertion[...]) else {
            return refuse("invalid_request", "Invalid JWT: missing or malformed assertion.")
        }
        let now = self.now
        guard jwt.header["alg"] == "RS256", let email = jwt.strings["iss"],
              let account = state.withLock({ $0.accounts[email] })
        else { return refuse("invalid_grant", "Invalid grant: account not found") }
        if let kid = jwt.header["kid"], kid != account.privateKeyID {
            return refuse("invalid_grant", "Invalid JWT Signature.")
        }
        let alreadyVerified = state.withLock { $0.verifiedAssertions[assertion] != nil }
        if !alreadyVerified {
            let signature = _RSA.Signing.RSASignature(rawRepresentation: jwt.signature)
            guard account.publicKey.isValidSignature(signature, for: SHA256.hash(data: jwt.signingInput), padding: .insecurePKCS1v1_5)
            else { return refuse("invalid_grant", "Invalid JWT Signature.") }
        }
        guard let scope = jwt.strings["scope"], scope.split(separator: " ").contains(Substring(Self.messagingScope)) else {
            return refuse("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        guard jwt.strings["aud"] == tokenURI.absoluteString else {
            return refuse("invalid_grant", "Invalid JWT: Failed audience check. The right audience is \(tokenURI.absoluteString)")
        }
        guard let iat = jwt.seconds("iat"), let exp = jwt.seconds("exp"), exp > iat, exp - iat <= 3600,
              Double(exp) > now.timeIntervalSince1970, Double(iat) <= now.timeIntervalSince1970 + 300
        else {
            return refuse("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let lifetime = state.withLock { $0.accessTokenLifetime }
        let token = "ya29.strata-" + UUID().uuidString
        let issued = AccessToken(
            token: token, clientEmail: email, assertionIssuedAt: Date(timeIntervalSince1970: TimeInterval(iat)),
            expires: now.addingTimeInterval(TimeInterval(lifetime))
        )
        state.withLock { state in
            state.verifiedAssertions[assertion] = now
            state.accessTokens[token] = issued
            state.issued.append(issued)
        }
        return .json(200, ["access_token": token, "expires_in": lifetime, "token_type": "Bearer"])
    }

    private func send(_ request: PeerRequest, projectID: String) -> PeerReply {
        let now = self.now
        let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        // The token names the exchange in the records even when a check before the body's fails.
        let token = ((body?["message"] as? [String: Any])?["token"] as? String) ?? ""
        func refuse(_ status: Int, _ message: String, errorCode: String? = nil, fields: [String] = []) -> PeerReply {
            state.withLock { $0.note(Exchange(token: token, status: status, reason: errorCode ?? Self.canonicalStatus(status))) }
            return Self.errorReply(status, errorCode: errorCode, message: message, fieldViolations: fields, retryAfter: nil)
        }
        guard let authorization = request.headers.first(name: "authorization"),
              authorization.lowercased().hasPrefix("bearer ")
        else {
            return refuse(401, "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        }
        let accessToken = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let (live, account) = state.withLock { state -> (AccessToken?, ServiceAccount?) in
            let live = state.accessTokens[accessToken]
            return (live, live.flatMap { state.accounts[$0.clientEmail] })
        }
        guard let live, let account, live.expires > now else {
            return refuse(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        }
        guard account.projectID == projectID else {
            return refuse(403, "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(projectID)' (or it may not exist).")
        }
        guard let body, var message = body["message"] as? [String: Any] else {
            return refuse(400, "Invalid JSON payload received.", errorCode: "INVALID_ARGUMENT")
        }
        guard let target = message["token"] as? String, !target.isEmpty else {
            return refuse(400, "Request contains an invalid argument.", errorCode: "INVALID_ARGUMENT", fields: ["message.token"])
        }
        message.removeValue(forKey: "token")
        let size = (try? JSONSerialization.data(withJSONObject: message))?.count ?? 0
        guard size <= 4096 else { return refuse(400, "Message is too big", errorCode: "INVALID_ARGUMENT") }

        let scripted: Answer = state.withLock { state in
            guard var queue = state.scripts[target], !queue.isEmpty else { return .success }
            let next = queue.removeFirst()
            state.scripts[target] = queue
            return next
        }
        let messageText = state.withLock { $0.keepsRecords } ? Self.messageText(request.body) ?? Data() : Data()
        return perform(scripted, request: request, token: target, projectID: projectID, accessToken: accessToken, message: messageText)
    }

    private func perform(
        _ answer: Answer, request: PeerRequest, token: String, projectID: String, accessToken: String, message: Data
    ) -> PeerReply {
        switch answer {
        case .success:
            let name = state.withLock { state -> String in
                state.messageCounter += 1
                let name = "projects/\(projectID)/messages/0:\(state.messageCounter)%strata"
                state.acceptedCount += 1
                state.answeredCount += 1
                guard state.keepsRecords else { return name }
                state.receivedByToken[token, default: []].append(state.received.count)
                state.received.append(Message(
                    token: token, projectID: projectID, message: message, body: Data(request.body),
                    accessToken: accessToken, name: name, connection: request.connection
                ))
                state.exchanges.append(Exchange(token: token, status: 200, reason: nil))
                return name
            }
            return .json(200, ["name": name])
        case .status(let status, let errorCode, let text, let fields, let retryAfter):
            state.withLock { $0.note(Exchange(token: token, status: status, reason: errorCode ?? Self.canonicalStatus(status))) }
            return Self.errorReply(status, errorCode: errorCode, message: text, fieldViolations: fields, retryAfter: retryAfter)
        case .delay(let duration, let next):
            return .delay(duration, then: perform(next, request: request, token: token, projectID: projectID,
                                                  accessToken: accessToken, message: message))
        case .resetStream:
            state.withLock { $0.note(Exchange(token: token, status: 0, reason: "reset")) }
            return .reset
        case .noAnswer:
            state.withLock { $0.note(Exchange(token: token, status: 0, reason: "no answer")) }
            return .noAnswer
        }
    }

    /// The `message` member's JSON text, re-serialized with sorted keys.
    private static func messageText(_ body: [UInt8]) -> Data? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let message = object["message"]
        else { return nil }
        return try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])
    }

    /// Decodes `application/x-www-form-urlencoded` text.
    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
