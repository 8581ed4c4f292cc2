import Foundation
import _CryptoExtras

extension FCMPeer {
    /// A Google service account made for the peer: an RSA key and the JSON a Firebase console gives
    /// (`type`, `project_id`, `private_key_id`, `private_key`, `client_email`, `token_uri`, …), whose
    /// `token_uri` is the peer's ``FCMPeer/tokenURI``.
    public struct ServiceAccount: Sendable {
        /// The Firebase project id.
        public let projectID: String
        /// The service account's e-mail address (the assertion's `iss`).
        public let clientEmail: String
        /// The key's id (the assertion's `kid`).
        public let privateKeyID: String
        /// The private key, PKCS#8 PEM text (`-----BEGIN PRIVATE KEY-----`).
        public let privateKeyPEM: String
        /// The token endpoint.
        public let tokenURI: URL
        /// The service-account JSON file's bytes (`FCMConfiguration(serviceAccountJSON:)`).
        public let json: Data
        /// The public key the peer verifies assertions with.
        let publicKey: _RSA.Signing.PublicKey

        init(projectID: String, clientEmail: String, tokenURI: URL) throws {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            self.projectID = projectID
            self.clientEmail = clientEmail
            self.privateKeyID = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            self.privateKeyPEM = key.pkcs8PEMRepresentation
            self.tokenURI = tokenURI
            self.publicKey = key.publicKey
            let object: [String: String] = [
                "type": "service_account",
                "project_id": projectID,
                "private_key_id": privateKeyID,
                "private_key": privateKeyPEM,
                "client_email": clientEmail,
                "client_id": "100000000000000000000",
                "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                "token_uri": tokenURI.absoluteString,
                "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
                "universe_domain": "googleapis.com",
            ]
            self.json = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        }
    }
}
