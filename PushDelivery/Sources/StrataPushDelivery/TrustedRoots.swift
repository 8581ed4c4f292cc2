import NIOSSL
import Strata

/// The certificate authorities a configuration trusts instead of the system's (a test peer's CA,
/// or a private PKI in front of the push service).
enum TrustedRoots {
    /// The certificates of `pem` (one or more `CERTIFICATE` blocks). Text that holds none, or a
    /// block that does not parse, is a configuration error naming `service`.
    static func certificates(_ pem: String, service: String) throws -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        } catch {
            throw StrataError.network("\(service): trustedRootCertificatesPEM does not parse as PEM certificates (\(error))")
        }
        guard !certificates.isEmpty else {
            throw StrataError.network("\(service): trustedRootCertificatesPEM holds no certificate")
        }
        return certificates
    }

    /// A client TLS configuration trusting `roots`, or the system's roots when nil. HTTP/2 is
    /// negotiated by ALPN (the HTTP client offers `h2` and `http/1.1`).
    static func tlsConfiguration(_ roots: [NIOSSLCertificate]?) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let roots { tls.trustRoots = .certificates(roots) }
        return tls
    }
}
