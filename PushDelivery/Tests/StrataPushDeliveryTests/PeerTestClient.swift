import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import StrataPushPeers
import _CryptoExtras

/// A raw HTTPS client for the peers' own tests: it trusts a peer's test CA and speaks whatever
/// ALPN gives (h2 for the APNs peer).
struct PeerTestClient {
    let client: HTTPClient

    init(trusting authority: TestCertificateAuthority, http1Only: Bool = false) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(authority.rootCertificatePEM.utf8), format: .pem)])
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = http1Only ? .http1Only : .automatic
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    struct Response {
        let status: Int
        let headers: HTTPHeaders
        let body: Data
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
        var reason: String? { json?["reason"] as? String }
    }

    func send(
        _ method: HTTPMethod = .POST, _ url: String, headers: [(String, String)] = [], body: Data? = nil,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> Response {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Response(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }

    func shutdown() async throws { try await client.shutdown() }
}

/// JWTs as the delivery library makes them, for the peers' own tests.
enum TestJWT {
    static func encode(_ object: [String: Any]) -> String {
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// An APNs provider token.
    static func providerToken(key: P256.Signing.PrivateKey, keyID: String, teamID: String, issuedAt: Date = Date()) throws -> String {
        let input = encode(["alg": "ES256", "kid": keyID]) + "." + encode(["iss": teamID, "iat": Int(issuedAt.timeIntervalSince1970)])
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }

    /// A Google OAuth assertion for a service account.
    static func assertion(
        account: FCMPeer.ServiceAccount, scope: String = FCMPeer.messagingScope, audience: String? = nil,
        issuedAt: Date = Date(), lifetime: Int = 3600
    ) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let input = encode(["alg": "RS256", "typ": "JWT", "kid": account.privateKeyID]) + "." + encode([
            "iss": account.clientEmail, "scope": scope, "aud": audience ?? account.tokenURI.absoluteString,
            "iat": iat, "exp": iat + lifetime,
        ])
        let key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKeyPEM)
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }
}
