import Crypto
import _CryptoExtras
import Foundation

/// Keys and service accounts made for the tests (never real credentials).
enum TestKeys {
    /// A P-256 key, as Apple's `.p8` file holds one (PKCS#8 PEM).
    static let apnsKey = P256.Signing.PrivateKey()
    /// An RSA key, as a service account file holds one.
    static let rsaKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    /// A service account JSON file with `rsaKey`, and the members given replaced (nil removes).
    static func serviceAccount(_ changes: [String: String?] = [:]) -> Data {
        var object: [String: String] = [
            "type": "service_account",
            "project_id": "strata-test",
            "private_key_id": "kid-0123",
            "private_key": rsaKey.pemRepresentation,
            "client_email": "delivery@strata-test.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.example.test/token",
        ]
        for (name, value) in changes { object[name] = value }
        return try! JSONSerialization.data(withJSONObject: object)
    }

    /// The header and claims of a compact JWT, and its signing input and signature bytes.
    static func parts(_ jwt: String) -> (header: [String: Any], claims: [String: Any], input: Data, signature: Data)? {
        let pieces = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let h = decode(pieces[0]), let c = decode(pieces[1]), let s = decode(pieces[2]),
              let header = (try? JSONSerialization.jsonObject(with: h)) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: c)) as? [String: Any] else { return nil }
        return (header, claims, Data((pieces[0] + "." + pieces[1]).utf8), s)
    }

    /// base64url without padding, decoded (nil if it has padding or a character outside the alphabet).
    static func decode(_ text: Substring) -> Data? {
        guard !text.contains("="), !text.contains("+"), !text.contains("/") else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard.append("=") }
        return Data(base64Encoded: standard)
    }
}
