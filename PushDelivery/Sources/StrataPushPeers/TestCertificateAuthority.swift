import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A certificate authority made at run time for the loopback peers: a self-signed P-256 root and a
/// server certificate for `127.0.0.1` and `localhost` (subject alternative names) signed by it.
///
/// A client trusts the peers by adding ``rootCertificatePEM`` to its trust roots (what
/// `trustedRootCertificatesPEM` of the delivery configurations takes); the peers present
/// ``serverCertificate`` with ``serverPrivateKey``. Never for production: the keys live in memory
/// and the certificates are valid for one day.
public struct TestCertificateAuthority: Sendable {
    /// The root certificate, PEM text (`-----BEGIN CERTIFICATE-----`).
    public let rootCertificatePEM: String
    /// The server certificate, PEM text.
    public let serverCertificatePEM: String
    /// The server certificate's private key, PKCS#8 PEM text.
    public let serverPrivateKeyPEM: String

    /// Makes a new root and server certificate.
    public init() throws {
        let now = Date()
        let notBefore = now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(86_400)

        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            OrganizationName("Strata")
            CommonName("Strata loopback test CA")
        }
        let rootKeyIdentifier = Self.keyIdentifier(rootKey.publicKey)
        let root = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(rootKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(keyIdentifier: rootKeyIdentifier)
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey)
        )

        let serverKey = P256.Signing.PrivateKey()
        let serverName = try DistinguishedName {
            OrganizationName("Strata")
            CommonName("localhost")
        }
        let server = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: rootName,
            subject: serverName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
                SubjectKeyIdentifier(keyIdentifier: Self.keyIdentifier(serverKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: rootKeyIdentifier)
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey)
        )

        self.rootCertificatePEM = try root.serializeAsPEM().pemString
        self.serverCertificatePEM = try server.serializeAsPEM().pemString
        self.serverPrivateKeyPEM = serverKey.pemRepresentation
    }

    /// The TLS configuration of a peer: the server certificate and key, and the given ALPN protocols
    /// (`h2` first).
    func serverTLSConfiguration(applicationProtocols: [String]) throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: Array(serverCertificatePEM.utf8), format: .pem)
        let key = try NIOSSLPrivateKey(bytes: Array(serverPrivateKeyPEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)],
            privateKey: .privateKey(key)
        )
        configuration.applicationProtocols = applicationProtocols
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// RFC 5280's method 1: the SHA-1 of the subject public key (here, its X9.63 bytes).
    private static func keyIdentifier(_ key: P256.Signing.PublicKey) -> ArraySlice<UInt8> {
        ArraySlice(Insecure.SHA1.hash(data: key.x963Representation))
    }
}
