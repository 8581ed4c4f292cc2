import Crypto
import Foundation
import Testing
@testable import StrataPushDelivery

@Suite struct APNsProviderTokenTests {
    static func tokens(_ clock: TestClock) throws -> APNsProviderToken {
        let configuration = try APNsConfiguration(privateKeyPEM: TestKeys.apnsKey.pemRepresentation, keyID: "KEY1234567",
                                                  teamID: "TEAM123456", environment: .sandbox)
        return APNsProviderToken(configuration: configuration, clock: clock.function)
    }

    @Test("the provider token: ES256, kid = key id, iss = team id, iat = the clock, signed by the key")
    func shape() throws {
        let clock = TestClock()
        let token = try Self.tokens(clock).current()
        #expect(token.authorization.hasPrefix("bearer "))
        let parts = try #require(TestKeys.parts(String(token.authorization.dropFirst("bearer ".count))))
        #expect(parts.header.count == 2 && parts.header["alg"] as? String == "ES256" && parts.header["kid"] as? String == "KEY1234567")
        #expect(parts.claims.count == 2 && parts.claims["iss"] as? String == "TEAM123456")
        #expect((parts.claims["iat"] as? NSNumber)?.int64Value == Int64(clock.now.timeIntervalSince1970))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: parts.signature)
        #expect(TestKeys.apnsKey.publicKey.isValidSignature(signature, for: parts.input))
    }

    @Test("reused until it is 50 minutes old, then renewed with a later iat")
    func renewal() throws {
        let clock = TestClock()
        let tokens = try Self.tokens(clock)
        let first = try tokens.current()
        clock.advance(seconds: 49 * 60 + 59)
        #expect(try tokens.current() == first)
        clock.advance(seconds: 1)
        let second = try tokens.current()
        #expect(second.generation == 2 && second.issuedAt == first.issuedAt + 50 * 60)
        #expect(try tokens.current() == second)
    }

    @Test("ExpiredProviderToken renews at once, whatever its age, and only once for the requests that carried it")
    func expired() throws {
        let clock = TestClock()
        let tokens = try Self.tokens(clock)
        let first = try tokens.current()
        let renewed = try tokens.expired(first)
        #expect(renewed.generation == 2 && renewed.issuedAt > first.issuedAt, "a later iat even within the same second")
        #expect(try tokens.expired(first) == renewed, "a second answer about the old token takes the renewed one")
        #expect(try tokens.current() == renewed)
        clock.advance(seconds: 10 * 60)
        #expect(try tokens.current() == renewed, "never renewed by age under 20 minutes")
    }

    @Test("a clock moved back keeps the token")
    func clockBack() throws {
        let clock = TestClock()
        let tokens = try Self.tokens(clock)
        let first = try tokens.current()
        clock.advance(seconds: -3_600)
        #expect(try tokens.current() == first)
    }
}
