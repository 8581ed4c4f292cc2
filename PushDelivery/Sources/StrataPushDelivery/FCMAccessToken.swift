import Foundation
import Strata
import Synchronization

/// The OAuth 2.0 access tokens of one FCM configuration (the JWT-bearer grant, RFC 7523).
///
/// An access token is asked for with an RS256 assertion (``assertion(now:)``) posted to
/// `token_uri` as `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`; the
/// answer `{"access_token", "expires_in", "token_type"}` is kept and reused until
/// ``renewalMargin`` before it expires (by `clock`). At most one request for a token is in
/// flight: callers that need a token while one is being fetched wait for that one. After a 401
/// from `messages:send`, ``invalidate(_:)`` drops the token (if it is still the current one) and
/// the next caller fetches a new one.
///
/// The token endpoint's answers: 200 with a token → cached; 400 and 401 (`invalid_grant`,
/// `invalid_client`, …: the assertion was refused) → ``Failure/configuration(_:)``; anything
/// else (429, 5xx, a connection failure, an answer that does not parse) →
/// ``Failure/transient(_:retryAfter:)``, which retries the notification with backoff.
final class FCMAccessToken: Sendable {
    /// A token in use.
    struct Token: Sendable, Equatable {
        /// `Bearer <access token>`: the `authorization` header value.
        let authorization: String
        /// When to fetch a new one.
        let renewAt: Date
        /// Counts the tokens fetched, from 1.
        let generation: Int
    }

    /// Why no token could be had.
    enum Failure: Error, Sendable, Equatable {
        /// The token endpoint refused the assertion: a configuration error (the message names it).
        case configuration(String)
        /// The token endpoint could not be reached or failed: try again later.
        case transient(String, retryAfter: Duration?)
    }

    /// What the token endpoint answered: its status, `Retry-After` (seconds) and body.
    struct Answer: Sendable {
        var status: Int
        var retryAfter: Duration?
        var body: Data
    }

    /// Posts a form-encoded body to `token_uri`.
    typealias Post = @Sendable (_ formBody: String) async throws -> Answer

    /// The assertion's header.
    struct Header: Encodable { let alg = "RS256"; let typ = "JWT"; let kid: String? }
    /// The assertion's claims.
    struct Claims: Encodable { let iss: String; let scope: String; let aud: String; let iat: Int64; let exp: Int64 }

    /// The OAuth scope of FCM's HTTP v1 API.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// How long before its expiry a token is replaced (at most half its lifetime).
    static let renewalMargin: TimeInterval = 300

    private struct State {
        var token: Token?
        var fetch: Task<Token, any Error>?
        var generation = 0
    }

    private let configuration: FCMConfiguration
    private let clock: @Sendable () -> Date
    private let post: Post
    private let state = Mutex(State())

    init(configuration: FCMConfiguration, clock: @Sendable @escaping () -> Date, post: @escaping Post) {
        self.configuration = configuration
        self.clock = clock
        self.post = post
    }

    /// A signed assertion for `now`: `iss` = client email, `scope`, `aud` = token URI,
    /// `iat` = now, `exp` = now + 1 hour; `kid` = the private key id when the file has one.
    func assertion(now: Date) throws -> String {
        let iat = Int64(now.timeIntervalSince1970.rounded(.down))
        return try JSONWebToken.rs256(
            header: Header(kid: configuration.privateKeyID),
            claims: Claims(iss: configuration.clientEmail, scope: Self.scope, aud: configuration.tokenURI.absoluteString,
                           iat: iat, exp: iat + 3_600),
            key: configuration.privateKey)
    }

    /// The token to send with: the cached one, or one fetched now (or being fetched).
    /// - Throws: ``Failure``.
    func current() async throws -> Token {
        let now = clock()
        enum Step { case ready(Token), wait(Task<Token, any Error>) }
        let step: Step = state.withLock { state in
            if let token = state.token, now < token.renewAt { return .ready(token) }
            if let fetch = state.fetch { return .wait(fetch) }
            let fetch = Task { try await self.fetchToken() }
            state.fetch = fetch
            return .wait(fetch)
        }
        switch step {
        case .ready(let token): return token
        case .wait(let fetch): return try await fetch.value
        }
    }

    /// Drops `rejected` if it is still the current token (FCM answered 401 to it).
    func invalidate(_ rejected: Token) {
        state.withLock { state in
            if state.token?.generation == rejected.generation { state.token = nil }
        }
    }

    private func fetchToken() async throws -> Token {
        do {
            let token = try await requestToken()
            state.withLock { state in
                state.token = token
                state.fetch = nil
            }
            return token
        } catch {
            state.withLock { $0.fetch = nil }
            throw error
        }
    }

    private func requestToken() async throws -> Token {
        let now = clock()
        let assertion: String
        do {
            assertion = try self.assertion(now: now)
        } catch {
            throw Failure.configuration("FCM: the assertion of \(configuration.clientEmail) cannot be signed: \(error)")
        }
        let answer: Answer
        do {
            answer = try await post("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion)
        } catch {
            throw Failure.transient("FCM token endpoint \(configuration.tokenURI.absoluteString): \(error)", retryAfter: nil)
        }
        let generation = state.withLock { state in
            state.generation += 1
            return state.generation
        }
        return try Self.token(from: answer, now: now, generation: generation, tokenURI: configuration.tokenURI.absoluteString)
    }

    /// The token in a token endpoint's answer, or the failure it means.
    static func token(from answer: Answer, now: Date, generation: Int, tokenURI: String) throws -> Token {
        let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any]
        switch answer.status {
        case 200:
            guard let object, let accessToken = object["access_token"] as? String, !accessToken.isEmpty else {
                throw Failure.transient("FCM token endpoint \(tokenURI): the answer has no access_token", retryAfter: nil)
            }
            if let type = object["token_type"] as? String, type.lowercased() != "bearer" {
                throw Failure.configuration("FCM token endpoint \(tokenURI): token_type \(type.debugDescription), not Bearer")
            }
            let expiresIn = (object["expires_in"] as? NSNumber)?.doubleValue ?? 3_600
            let margin = min(renewalMargin, expiresIn / 2)
            return Token(authorization: "Bearer " + accessToken, renewAt: now.addingTimeInterval(expiresIn - margin), generation: generation)
        case 400, 401, 403:
            let error = object?["error"] as? String ?? "HTTP \(answer.status)"
            let description = (object?["error_description"] as? String).map { " (\($0))" } ?? ""
            throw Failure.configuration("FCM token endpoint \(tokenURI) refused the service account's assertion: \(error)\(description)")
        default:
            throw Failure.transient("FCM token endpoint \(tokenURI): HTTP \(answer.status)", retryAfter: answer.retryAfter)
        }
    }
}
