import Crypto
import Foundation
import NIOHTTP1
import Synchronization

/// A protocol-faithful APNs provider API on loopback: HTTP/2 over TLS (ALPN `h2`) on 127.0.0.1,
/// checking what Apple's "Sending notification requests to APNs" asks for and answering as
/// "Handling notification responses from APNs" documents.
///
/// ```swift
/// let peer = try APNsPeer()
/// let key = P256.Signing.PrivateKey()
/// peer.register(publicKey: key.publicKey, keyID: "KEY1234567", teamID: "TEAM123456")
/// try await peer.start()                       // peer.url: https://127.0.0.1:<port>
/// peer.script(token: "tok1", answers: [.unregistered])
/// ```
///
/// The checks, in order, each with Apple's status and reason: `:method` POST (405
/// `MethodNotAllowed`); `:path` `/3/device/{token}` (404 `BadPath`, 400 `MissingDeviceToken`);
/// `authorization: bearer <jwt>` (403 `MissingProviderToken`); an ES256 JWT whose header has `alg`
/// and `kid` and whose claims have `iss` and `iat`, signed by the key registered for (`kid`, `iss`)
/// (403 `InvalidProviderToken`); `iat` at most an hour old by the peer's clock (403
/// `ExpiredProviderToken`); on a connection, a new provider token less than
/// ``tokenUpdateInterval`` after the previous one while that one is still good (429
/// `TooManyProviderTokenUpdates`); a single `apns-*` header of each name (400 `DuplicateHeaders`);
/// `apns-topic` (400 `MissingTopic`); `apns-push-type` one of Apple's types (400 `InvalidPushType`);
/// `apns-priority` 1, 5 or 10 (400 `BadPriority`); `apns-expiration` an integer (400
/// `BadExpirationDate`); `apns-id` a UUID (400 `BadMessageId`); `apns-collapse-id` at most 64 bytes
/// (400 `BadCollapseId`); a payload that is not empty and is a JSON object (400 `PayloadEmpty`: Apple
/// documents no other reason for it) of at most 4096 bytes, 5120 for `voip` (413 `PayloadTooLarge`).
/// A request that passes them gets the token's next scripted ``Answer``, else success. Device
/// tokens are not checked for Apple's format (tests use short names): script `.badDeviceToken` to
/// refuse one. Every answer echoes a valid `apns-id`; a success without one gets a new UUID.
///
/// Each distinct provider token is verified once and remembered, so that a request costs a
/// dictionary lookup: the peer keeps up with tens of thousands of requests a second.
public final class APNsPeer: Sendable {
    /// The push types Apple documents for `apns-push-type`.
    public static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm",
        "liveactivity", "pushtotalk", "widgets", "controls",
    ]

    private struct VerifiedToken {
        let keyID: String
        let teamID: String
        let issuedAt: Date
    }

    private struct ConnectionToken {
        let jwt: String
        let since: Date
    }

    private struct State {
        var publicKeys: [String: P256.Signing.PublicKey] = [:]
        var verified: [String: VerifiedToken] = [:]
        var refused: Set<String> = []
        var expired: Set<String> = []
        var connectionTokens: [Int: ConnectionToken] = [:]
        var providerTokens: [ProviderToken] = []
        var accepted: Set<String> = []
        var tokenUpdates = 0
        var scripts: [String: [Answer]] = [:]
        var received: [Request] = []
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
        var tokenUpdateInterval: Duration = .seconds(20 * 60)
    }

    /// The certificate authority whose server certificate the peer presents.
    public let authority: TestCertificateAuthority
    private let state = Mutex(State())
    private let server = Mutex<LoopbackServer?>(nil)

    /// Makes a stopped peer.
    /// - Parameters:
    ///   - port: the port of the first ``start()`` (0: any free port); every restart binds it again.
    ///   - authority: the CA that signs the peer's certificate; a new one when nil.
    public init(port: Int = 0, authority: TestCertificateAuthority? = nil) throws {
        self.authority = try authority ?? TestCertificateAuthority()
        let loopback = try LoopbackServer(port: port, authority: self.authority, allowHTTP1: false) { [weak self] request in
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

    /// `https://127.0.0.1:<port>`, for `APNsEnvironment.custom`.
    public var url: URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// How many connections the peer accepted, over all its starts.
    public var connectionCount: Int { loopback.connectionCount }

    /// How many connections are open now.
    public var openConnections: Int { loopback.openConnections }

    // MARK: Configuration

    /// Registers the public half of a provider key (`.p8`) for a key id and team id.
    public func register(publicKey: P256.Signing.PublicKey, keyID: String, teamID: String) {
        state.withLock { $0.publicKeys[Self.keyName(keyID: keyID, teamID: teamID)] = publicKey }
    }

    /// Queues answers for a device token's next requests, after any already queued.
    public func script(token: String, answers: [Answer]) {
        state.withLock { $0.scripts[token, default: []].append(contentsOf: answers) }
    }

    /// How far the peer's clock is ahead of the system clock (it judges `iat` by its clock).
    public var clockOffset: Duration {
        get { state.withLock { $0.clockOffset } }
        set { state.withLock { $0.clockOffset = newValue } }
    }

    /// The least time between two provider tokens on one connection (Apple: 20 minutes).
    public var tokenUpdateInterval: Duration {
        get { state.withLock { $0.tokenUpdateInterval } }
        set { state.withLock { $0.tokenUpdateInterval = newValue } }
    }

    /// The peer's clock: the system clock plus ``clockOffset``.
    public var now: Date { Date().addingTimeInterval(clockOffset.timeInterval) }

    // MARK: Records

    /// Every request answered 200, in the order answered.
    public var received: [Request] { state.withLock { $0.received } }

    /// How many requests were answered 200.
    public var receivedCount: Int { state.withLock { $0.acceptedCount } }

    /// How many requests the peer answered (or reset, or left unanswered), whatever the answer.
    public var answeredCount: Int { state.withLock { $0.answeredCount } }

    /// Whether the peer keeps every request and answer (``received``, ``exchanges``); true by
    /// default. A benchmark that sends millions of requests turns it off: the counts
    /// (``receivedCount``, ``answeredCount``) still move, and per-request work stays small.
    public var keepsRecords: Bool {
        get { state.withLock { $0.keepsRecords } }
        set { state.withLock { $0.keepsRecords = newValue } }
    }

    /// The requests for a device token answered 200, in order.
    public func received(token: String) -> [Request] {
        state.withLock { state in (state.receivedByToken[token] ?? []).map { state.received[$0] } }
    }

    /// Every answer the peer gave (or reset, or withheld), in order.
    public var exchanges: [Exchange] { state.withLock { $0.exchanges } }

    /// The answers given for a device token, in order.
    public func exchanges(token: String) -> [Exchange] { exchanges.filter { $0.token == token } }

    /// The distinct provider tokens accepted, in the order first seen.
    public var providerTokens: [ProviderToken] { state.withLock { $0.providerTokens } }

    /// How many times a connection's provider token changed (the first token of a connection is no change).
    public var tokenUpdates: Int { state.withLock { $0.tokenUpdates } }

    // MARK: Answering

    private static func keyName(keyID: String, teamID: String) -> String { teamID + "." + keyID }

    private func answer(_ request: PeerRequest) -> PeerReply {
        let now = self.now
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        let givenID = request.headers.first(name: "apns-id")
        var issuedAt: Date?
        func refuse(_ status: Int, _ reason: String) -> PeerReply {
            let exchange = Exchange(token: token, status: status, reason: reason, connection: request.connection,
                                    apnsID: givenID, issuedAt: issuedAt)
            state.withLock { $0.note(exchange) }
            return Self.reply(status: status, reason: reason, retryAfter: nil, now: now,
                              apnsID: givenID.flatMap { UUID(uuidString: $0) == nil ? nil : $0 })
        }

        guard request.method == "POST" else { return refuse(405, "MethodNotAllowed") }
        guard path.hasPrefix("/3/device/") else { return refuse(404, "BadPath") }
        guard !token.isEmpty else { return refuse(400, "MissingDeviceToken") }
        guard !token.contains("/") else { return refuse(404, "BadPath") }

        guard let authorization = request.headers.first(name: "authorization"),
              authorization.lowercased().hasPrefix("bearer "),
              authorization.count > 7
        else { return refuse(403, "MissingProviderToken") }
        let jwt = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let provider = verify(jwt) else { return refuse(403, "InvalidProviderToken") }
        issuedAt = provider.issuedAt

        let isExpired = state.withLock { $0.expired.contains(jwt) }
        if isExpired || now.timeIntervalSince(provider.issuedAt) > 3600 {
            return refuse(403, "ExpiredProviderToken")
        }
        if let refusal = noteToken(jwt, provider, connection: request.connection, now: now) {
            return refuse(429, refusal)
        }

        for name in ["apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-id", "apns-collapse-id"]
        where request.headers[name].count > 1 {
            return refuse(400, "DuplicateHeaders")
        }
        guard request.headers.first(name: "apns-topic")?.isEmpty == false else {
            return refuse(400, "MissingTopic")
        }
        let pushType = request.headers.first(name: "apns-push-type")
        if let pushType, !Self.pushTypes.contains(pushType) { return refuse(400, "InvalidPushType") }
        if let priority = request.headers.first(name: "apns-priority"), !["1", "5", "10"].contains(priority) {
            return refuse(400, "BadPriority")
        }
        if let expiration = request.headers.first(name: "apns-expiration"),
           expiration.isEmpty || !expiration.allSatisfy(\.isASCII) || Int(expiration) == nil || Int(expiration)! < 0 {
            return refuse(400, "BadExpirationDate")
        }
        if let givenID, UUID(uuidString: givenID) == nil { return refuse(400, "BadMessageId") }
        if let collapse = request.headers.first(name: "apns-collapse-id"), collapse.utf8.count > 64 {
            return refuse(400, "BadCollapseId")
        }
        guard !request.body.isEmpty else { return refuse(400, "PayloadEmpty") }
        let limit = pushType == "voip" ? 5120 : 4096
        guard request.body.count <= limit else { return refuse(413, "PayloadTooLarge") }
        guard (try? JSONSerialization.jsonObject(with: Data(request.body))) is [String: Any] else {
            return refuse(400, "PayloadEmpty")
        }

        let apnsID = givenID ?? UUID().uuidString
        let scripted: Answer = state.withLock { state in
            guard var queue = state.scripts[token], !queue.isEmpty else { return .success }
            let next = queue.removeFirst()
            state.scripts[token] = queue
            return next
        }
        return perform(scripted, request: request, token: token, jwt: jwt, provider: provider,
                       apnsID: apnsID, givenID: givenID, now: now)
    }

    private func perform(
        _ answer: Answer, request: PeerRequest, token: String, jwt: String, provider: VerifiedToken,
        apnsID: String, givenID: String?, now: Date
    ) -> PeerReply {
        switch answer {
        case .success:
            let keepsRecords = state.withLock { $0.keepsRecords }
            let record = keepsRecords ? Self.record(request, token: token, provider: provider, apnsID: apnsID,
                                                    givenID: givenID, now: now) : nil
            state.withLock { state in
                state.acceptedCount += 1
                state.answeredCount += 1
                guard state.keepsRecords, let record else { return }
                state.receivedByToken[token, default: []].append(state.received.count)
                state.received.append(record)
                state.exchanges.append(Exchange(token: token, status: 200, reason: nil, connection: request.connection,
                                                apnsID: givenID, issuedAt: provider.issuedAt))
            }
            return .respond(status: 200, headers: [("apns-id", apnsID)], body: [])
        case .status(let status, let reason, let retryAfter):
            state.withLock { state in
                if reason == "ExpiredProviderToken" { state.expired.insert(jwt) }
                state.note(Exchange(token: token, status: status, reason: reason, connection: request.connection,
                                    apnsID: givenID, issuedAt: provider.issuedAt))
            }
            return Self.reply(status: status, reason: reason, retryAfter: retryAfter, now: now, apnsID: apnsID)
        case .delay(let duration, let next):
            return .delay(duration, then: perform(next, request: request, token: token, jwt: jwt, provider: provider,
                                                  apnsID: apnsID, givenID: givenID, now: now))
        case .resetStream:
            state.withLock {
                $0.note(Exchange(token: token, status: 0, reason: "reset", connection: request.connection,
                                 apnsID: givenID, issuedAt: provider.issuedAt))
            }
            return .reset
        case .noAnswer:
            state.withLock {
                $0.note(Exchange(token: token, status: 0, reason: "no answer", connection: request.connection,
                                 apnsID: givenID, issuedAt: provider.issuedAt))
            }
            return .noAnswer
        }
    }

    /// The record of an accepted request.
    private static func record(
        _ request: PeerRequest, token: String, provider: VerifiedToken, apnsID: String, givenID: String?, now: Date
    ) -> Request {
        var headers: [String: String] = [:]
        for (name, value) in request.headers where name.lowercased() != "authorization" {
            headers[name.lowercased()] = value
        }
        return Request(
            token: token, headers: headers, payload: Data(request.body), apnsID: apnsID, hadAPNsID: givenID != nil,
            keyID: provider.keyID, teamID: provider.teamID, issuedAt: provider.issuedAt,
            connection: request.connection, receivedAt: now
        )
    }

    private static func reply(status: Int, reason: String, retryAfter: Int?, now: Date, apnsID: String? = nil) -> PeerReply {
        var body: [String: Any] = ["reason": reason]
        if status == 410 { body["timestamp"] = Int64(now.timeIntervalSince1970 * 1000) }
        var headers: [(String, String)] = []
        if let apnsID { headers.append(("apns-id", apnsID)) }
        if let retryAfter { headers.append(("retry-after", String(retryAfter))) }
        return .json(status, body, headers: headers)
    }

    /// The verified claims of a provider token, verifying it the first time it is seen.
    private func verify(_ jwt: String) -> VerifiedToken? {
        let cached: VerifiedToken?? = state.withLock { state in
            if let known = state.verified[jwt] { return .some(known) }
            if state.refused.contains(jwt) { return .some(nil) }
            return nil
        }
        if let cached { return cached }
        let result = Self.verify(jwt, keys: state.withLock { $0.publicKeys })
        state.withLock { state in
            if let result {
                state.verified[jwt] = result
            } else if state.refused.count < 100_000 {
                state.refused.insert(jwt)
            }
        }
        return result
    }

    private static func verify(_ jwt: String, keys: [String: P256.Signing.PublicKey]) -> VerifiedToken? {
        guard let token = JSONWebToken(jwt[...]),
              token.header["alg"] == "ES256",
              let keyID = token.header["kid"],
              let teamID = token.strings["iss"],
              let issuedAt = token.seconds("iat"),
              let key = keys[keyName(keyID: keyID, teamID: teamID)],
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature),
              key.isValidSignature(signature, for: token.signingInput)
        else { return nil }
        return VerifiedToken(keyID: keyID, teamID: teamID, issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt)))
    }

    /// Notes the provider token a connection uses; the reason to refuse it, if it is an update too soon.
    private func noteToken(_ jwt: String, _ provider: VerifiedToken, connection: Int, now: Date) -> String? {
        state.withLock { state in
            if let current = state.connectionTokens[connection] {
                if current.jwt == jwt { return nil }
                let previousIsGood = !state.expired.contains(current.jwt)
                    && (state.verified[current.jwt].map { now.timeIntervalSince($0.issuedAt) <= 3600 } ?? false)
                if previousIsGood && now.timeIntervalSince(current.since) < state.tokenUpdateInterval.timeInterval {
                    return "TooManyProviderTokenUpdates"
                }
                state.tokenUpdates += 1
            }
            state.connectionTokens[connection] = ConnectionToken(jwt: jwt, since: now)
            if state.accepted.insert(jwt).inserted {
                state.providerTokens.append(ProviderToken(keyID: provider.keyID, teamID: provider.teamID, issuedAt: provider.issuedAt))
            }
            return nil
        }
    }
}
