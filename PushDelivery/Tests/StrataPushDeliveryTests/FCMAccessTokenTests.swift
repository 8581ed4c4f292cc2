import _CryptoExtras
import Foundation
import Synchronization
import Testing
@testable import StrataPushDelivery

@Suite struct FCMAccessTokenTests {
    static func configuration(_ changes: [String: String?] = [:]) throws -> FCMConfiguration {
        try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount(changes))
    }

    static func answer(_ status: Int, _ json: String, retryAfter: Duration? = nil) -> FCMAccessToken.Answer {
        FCMAccessToken.Answer(status: status, retryAfter: retryAfter, body: Data(json.utf8))
    }

    @Test("the assertion: RS256 with typ and kid; iss, scope, aud = token_uri, iat, exp = iat + 3600; signed by the key")
    func assertion() throws {
        let clock = TestClock()
        let tokens = FCMAccessToken(configuration: try Self.configuration(), clock: clock.function) { _ in Self.answer(500, "") }
        let parts = try #require(TestKeys.parts(try tokens.assertion(now: clock.now)))
        #expect(parts.header.count == 3 && parts.header["alg"] as? String == "RS256" && parts.header["typ"] as? String == "JWT"
            && parts.header["kid"] as? String == "kid-0123")
        let iat = Int64(clock.now.timeIntervalSince1970)
        #expect(parts.claims["iss"] as? String == "delivery@strata-test.iam.gserviceaccount.com")
        #expect(parts.claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(parts.claims["aud"] as? String == "https://oauth2.example.test/token")
        #expect((parts.claims["iat"] as? NSNumber)?.int64Value == iat && (parts.claims["exp"] as? NSNumber)?.int64Value == iat + 3_600)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature)
        #expect(TestKeys.rsaKey.publicKey.isValidSignature(signature, for: parts.input, padding: .insecurePKCS1v1_5))
    }

    @Test("without private_key_id the header has no kid")
    func noKid() throws {
        let tokens = FCMAccessToken(configuration: try Self.configuration(["private_key_id": nil]), clock: { Date() }) { _ in Self.answer(500, "") }
        #expect(TestKeys.parts(try tokens.assertion(now: Date()))?.header["kid"] == nil)
    }

    @Test("the grant is form-encoded; the token is cached until shortly before it expires; one fetch in flight")
    func caching() async throws {
        let clock = TestClock()
        let bodies = Mutex<[String]>([])
        let tokens = FCMAccessToken(configuration: try Self.configuration(), clock: clock.function) { body in
            let n = bodies.withLock { $0.append(body); return $0.count }
            try await Task.sleep(for: .milliseconds(20))
            return Self.answer(200, #"{"access_token":"at-\#(n)","expires_in":3600,"token_type":"Bearer"}"#)
        }
        let first = try await withThrowingTaskGroup(of: FCMAccessToken.Token.self) { group in
            for _ in 0..<8 { group.addTask { try await tokens.current() } }
            var all: [FCMAccessToken.Token] = []
            for try await t in group { all.append(t) }
            return all
        }
        #expect(Set(first.map(\.authorization)) == ["Bearer at-1"], "eight callers, one fetch")
        let body = try #require(bodies.withLock { $0.first })
        #expect(body.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="))
        #expect(TestKeys.parts(String(body.split(separator: "=").last!)) != nil)
        clock.advance(seconds: 3_600 - 301)
        #expect(try await tokens.current().authorization == "Bearer at-1")
        clock.advance(seconds: 2)
        #expect(try await tokens.current().authorization == "Bearer at-2", "renewed 5 minutes before expiry")
    }

    @Test("invalidate drops only the token it names")
    func invalidate() async throws {
        let count = Mutex(0)
        let tokens = FCMAccessToken(configuration: try Self.configuration(), clock: { Date() }) { _ in
            let n = count.withLock { $0 += 1; return $0 }
            return Self.answer(200, #"{"access_token":"at-\#(n)","expires_in":3600,"token_type":"Bearer"}"#)
        }
        let first = try await tokens.current()
        tokens.invalidate(first)
        let second = try await tokens.current()
        #expect(second.authorization == "Bearer at-2")
        tokens.invalidate(first)
        #expect(try await tokens.current() == second)
    }

    @Test("token endpoint answers: 400/401 invalid_grant is a configuration error; 5xx and 429 are transient")
    func answers() throws {
        let now = Date()
        #expect(throws: FCMAccessToken.Failure.configuration("FCM token endpoint u refused the service account's assertion: invalid_grant (Invalid JWT Signature.)")) {
            try FCMAccessToken.token(from: Self.answer(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#),
                                     now: now, generation: 1, tokenURI: "u")
        }
        #expect(throws: FCMAccessToken.Failure.self) {
            try FCMAccessToken.token(from: Self.answer(401, "{}"), now: now, generation: 1, tokenURI: "u")
        }
        #expect(throws: FCMAccessToken.Failure.transient("FCM token endpoint u: HTTP 503", retryAfter: .seconds(7))) {
            try FCMAccessToken.token(from: Self.answer(503, "", retryAfter: .seconds(7)), now: now, generation: 1, tokenURI: "u")
        }
        let token = try FCMAccessToken.token(from: Self.answer(200, #"{"access_token":"x","expires_in":120,"token_type":"Bearer"}"#),
                                             now: now, generation: 3, tokenURI: "u")
        #expect(token.authorization == "Bearer x" && token.renewAt == now.addingTimeInterval(60) && token.generation == 3)
    }
}
