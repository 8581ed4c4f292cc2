import Crypto
import Foundation
import NIOSSL
import Strata

/// How to reach Apple Push Notification service (APNs) with token-based authentication: the
/// signing key (the `.p8` file Apple issues), its key id, the team id, and the environment.
///
/// ```swift
/// let apns = try APNsConfiguration(privateKeyPEM: try String(contentsOfFile: "AuthKey_KEY1234567.p8", encoding: .utf8),
///                                  keyID: "KEY1234567", teamID: "TEAM123456", environment: .production)
/// ```
///
/// The key is parsed here, so a configuration that exists can sign provider tokens.
public struct APNsConfiguration: Sendable {
    /// Where APNs is.
    public enum Environment: Sendable, Hashable {
        /// `https://api.push.apple.com`, for apps signed for distribution.
        case production
        /// `https://api.sandbox.push.apple.com`, for development builds.
        case sandbox
        /// Any other base URL: a test peer, or a proxy (`/3/device/{token}` is appended).
        case custom(URL)

        /// The base URL, without a trailing slash.
        public var baseURL: URL {
            switch self {
            case .production: URL(string: "https://api.push.apple.com")!
            case .sandbox: URL(string: "https://api.sandbox.push.apple.com")!
            case .custom(let url): url
            }
        }
    }

    /// The id of the signing key (10 characters in Apple's developer account): the JWT's `kid`.
    public let keyID: String
    /// The team id: the JWT's `iss`.
    public let teamID: String
    /// Where requests go.
    public let environment: Environment
    /// The P-256 signing key.
    let privateKey: P256.Signing.PrivateKey
    /// The trusted roots given, or nil for the system's.
    let trustedRoots: [NIOSSLCertificate]?

    /// A configuration for APNs.
    ///
    /// - Parameters:
    ///   - privateKeyPEM: The signing key as PEM text: Apple's `.p8` file (PKCS#8,
    ///     `-----BEGIN PRIVATE KEY-----`) or a SEC1 `EC PRIVATE KEY`, on the P-256 curve.
    ///   - keyID: The key's id, sent as the provider token's `kid`.
    ///   - teamID: The team id, sent as the provider token's `iss`.
    ///   - environment: `.production`, `.sandbox` or `.custom(URL)`.
    ///   - trustedRootCertificatesPEM: Certificate authorities to trust instead of the system's.
    /// - Throws: ``StrataError/network(_:)`` naming the problem when the key or the certificates
    ///   do not parse; ``StrataError/invalidArgument(argument:reason:)`` for an empty id.
    public init(privateKeyPEM: String, keyID: String, teamID: String, environment: Environment,
                trustedRootCertificatesPEM: String? = nil) throws {
        guard !keyID.isEmpty else { throw StrataError.invalidArgument(argument: "keyID", reason: "APNs: the key id is empty") }
        guard !teamID.isEmpty else { throw StrataError.invalidArgument(argument: "teamID", reason: "APNs: the team id is empty") }
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw StrataError.network("APNs: the private key of key id \(keyID) does not parse as a P-256 key in PEM (PKCS#8 or SEC1): \(error)")
        }
        self.keyID = keyID
        self.teamID = teamID
        self.environment = environment
        trustedRoots = try trustedRootCertificatesPEM.map { try TrustedRoots.certificates($0, service: "APNs") }
    }
}
