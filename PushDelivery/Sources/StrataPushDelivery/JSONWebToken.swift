import Crypto
import _CryptoExtras
import Foundation

/// The compact JSON Web Tokens (RFC 7519) the push services ask for: an APNs provider token
/// (ES256) and an FCM OAuth 2.0 assertion (RS256). Each is `base64url(header).base64url(claims)`
/// followed by `.` and the base64url signature of those first two parts; base64url has no padding.
enum JSONWebToken {
    /// `data` in base64url without padding (RFC 7515 §2).
    static func base64URL(_ data: some DataProtocol) -> String {
        var text = Data(data).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// The bytes of base64url `text` (padding optional), or nil when it is not base64url.
    static func decodeBase64URL(_ text: some StringProtocol) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard.append("=") }
        return Data(base64Encoded: standard)
    }

    /// The signing input of a token: the encoded header and claims joined by a dot.
    static func signingInput(header: some Encodable, claims: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return base64URL(try encoder.encode(header)) + "." + base64URL(try encoder.encode(claims))
    }

    /// An ES256 token: ECDSA P-256 with SHA-256, the signature as the raw `r‖s` (64 bytes).
    static func es256(header: some Encodable, claims: some Encodable, key: P256.Signing.PrivateKey) throws -> String {
        let input = try signingInput(header: header, claims: claims)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }

    /// An RS256 token: RSASSA-PKCS1-v1_5 with SHA-256.
    static func rs256(header: some Encodable, claims: some Encodable, key: _RSA.Signing.PrivateKey) throws -> String {
        let input = try signingInput(header: header, claims: claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }
}
