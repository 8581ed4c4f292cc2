import _CryptoExtras
import Foundation
import NIOSSL
import Strata

/// How to reach Firebase Cloud Messaging (the HTTP v1 API) as a service account: the account's
/// JSON key file, as the Firebase console downloads it.
///
/// ```swift
/// let fcm = try FCMConfiguration(serviceAccountJSON: try Data(contentsOf: serviceAccountURL))
/// ```
///
/// Read from the file: `project_id` (the messages go to `/v1/projects/{project_id}/messages:send`),
/// `client_email` (the assertion's `iss`), `private_key` (an RSA key in PEM, PKCS#8 or PKCS#1),
/// `private_key_id` (the assertion's `kid`, when present) and `token_uri` (where access tokens
/// come from; `https://oauth2.googleapis.com/token` when absent). Other members are ignored.
public struct FCMConfiguration: Sendable {
    /// The Firebase project.
    public let projectID: String
    /// The service account's e-mail address.
    public let clientEmail: String
    /// The key's id, sent as the assertion's `kid` (nil when the file has none).
    public let privateKeyID: String?
    /// The OAuth 2.0 token endpoint (also the assertion's `aud`).
    public let tokenURI: URL
    /// The FCM base URL (`https://fcm.googleapis.com` unless given).
    public let endpoint: URL
    /// The RS256 signing key.
    let privateKey: _RSA.Signing.PrivateKey
    /// The trusted roots given (for the endpoint and `token_uri`), or nil for the system's.
    let trustedRoots: [NIOSSLCertificate]?

    /// A configuration for FCM.
    ///
    /// - Parameters:
    ///   - serviceAccountJSON: The service account's JSON key file.
    ///   - endpoint: The FCM base URL; nil for `https://fcm.googleapis.com` (a test peer otherwise).
    ///   - trustedRootCertificatesPEM: Certificate authorities to trust instead of the system's,
    ///     for both the endpoint and the token endpoint.
    /// - Throws: ``StrataError/network(_:)`` naming the problem: JSON that does not parse, a
    ///   missing or empty field, a key that is not an RSA key in PEM, certificates that do not parse.
    public init(serviceAccountJSON: Data, endpoint: URL? = nil, trustedRootCertificatesPEM: String? = nil) throws {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: serviceAccountJSON) as? [String: Any] else {
                throw StrataError.network("FCM: the service account JSON is not a JSON object")
            }
            object = parsed
        } catch let error as StrataError {
            throw error
        } catch {
            throw StrataError.network("FCM: the service account JSON does not parse (\(error.localizedDescription))")
        }
        func field(_ name: String) throws -> String {
            guard let value = object[name] else { throw StrataError.network("FCM: the service account JSON has no \"\(name)\"") }
            guard let text = value as? String, !text.isEmpty else {
                throw StrataError.network("FCM: the service account JSON's \"\(name)\" is not a non-empty string")
            }
            return text
        }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        let pem = try field("private_key")
        privateKeyID = object["private_key_id"] == nil ? nil : try field("private_key_id")
        let tokenText = object["token_uri"] == nil ? "https://oauth2.googleapis.com/token" : try field("token_uri")
        guard let tokenURI = URL(string: tokenText), let scheme = tokenURI.scheme, ["https", "http"].contains(scheme.lowercased()),
              tokenURI.host != nil else {
            throw StrataError.network("FCM: the service account JSON's \"token_uri\" \(tokenText.debugDescription) is not an http(s) URL")
        }
        self.tokenURI = tokenURI
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw StrataError.network("FCM: the service account's \"private_key\" (of \(clientEmail)) does not parse as an RSA key in PEM: \(error)")
        }
        self.endpoint = endpoint ?? URL(string: "https://fcm.googleapis.com")!
        trustedRoots = try trustedRootCertificatesPEM.map { try TrustedRoots.certificates($0, service: "FCM") }
    }
}
