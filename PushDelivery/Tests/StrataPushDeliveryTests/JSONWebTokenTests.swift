import Crypto
import _CryptoExtras
import Foundation
import Testing
@testable import StrataPushDelivery

@Suite struct JSONWebTokenTests {
    struct Header: Encodable { let alg: String; let kid: String }
    struct Claims: Encodable { let iss: String; let iat: Int64 }

    @Test("base64url has no padding and uses - and _")
    func base64URL() {
        #expect(JSONWebToken.base64URL(Data([0xFB, 0xFF])) == "-_8")
        #expect(JSONWebToken.base64URL(Data("a".utf8)) == "YQ")
        #expect(JSONWebToken.decodeBase64URL("-_8") == Data([0xFB, 0xFF]))
    }

    @Test("ES256: the signature is the raw r‖s (64 bytes) over header.claims, verified with the public key")
    func es256() throws {
        let jwt = try JSONWebToken.es256(header: Header(alg: "ES256", kid: "KEY1234567"), claims: Claims(iss: "TEAM", iat: 1_700_000_000),
                                         key: TestKeys.apnsKey)
        let parts = try #require(TestKeys.parts(jwt))
        #expect(parts.header["alg"] as? String == "ES256" && parts.header["kid"] as? String == "KEY1234567")
        #expect(parts.claims["iss"] as? String == "TEAM" && (parts.claims["iat"] as? NSNumber)?.int64Value == 1_700_000_000)
        #expect(parts.signature.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: parts.signature)
        #expect(TestKeys.apnsKey.publicKey.isValidSignature(signature, for: parts.input))
    }

    @Test("RS256: PKCS#1 v1.5 with SHA-256 over header.claims, verified with the public key")
    func rs256() throws {
        let jwt = try JSONWebToken.rs256(header: Header(alg: "RS256", kid: "k"), claims: Claims(iss: "me", iat: 5), key: TestKeys.rsaKey)
        let parts = try #require(TestKeys.parts(jwt))
        #expect(parts.signature.count == 256)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature)
        #expect(TestKeys.rsaKey.publicKey.isValidSignature(signature, for: parts.input, padding: .insecurePKCS1v1_5))
        #expect(!TestKeys.rsaKey.publicKey.isValidSignature(signature, for: parts.input + Data([0]), padding: .insecurePKCS1v1_5))
    }
}
