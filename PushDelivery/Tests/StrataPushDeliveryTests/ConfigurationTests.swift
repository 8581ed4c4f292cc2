import Foundation
import Strata
import Testing
@testable import StrataPushDelivery

@Suite struct ConfigurationTests {
    static func networkMessage(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch StrataError.network(let message) { return message } catch { return "unexpected \(error)" }
    }

    @Test("APNs: a P-256 key in PKCS#8 or SEC1 PEM; the environments' URLs")
    func apns() throws {
        let key = TestKeys.apnsKey
        let pkcs8 = try APNsConfiguration(privateKeyPEM: key.pemRepresentation, keyID: "K", teamID: "T", environment: .production)
        #expect(pkcs8.privateKey.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(pkcs8.environment.baseURL.absoluteString == "https://api.push.apple.com")
        #expect(APNsConfiguration.Environment.sandbox.baseURL.absoluteString == "https://api.sandbox.push.apple.com")
        #expect(APNsConfiguration.Environment.custom(URL(string: "https://localhost:8443")!).baseURL.absoluteString == "https://localhost:8443")
    }

    @Test("APNs: a key that does not parse is a network error naming APNs and the key")
    func apnsBadKey() {
        let message = Self.networkMessage {
            _ = try APNsConfiguration(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----", keyID: "KEY1", teamID: "T", environment: .sandbox)
        }
        #expect(message?.hasPrefix("APNs: the private key of key id KEY1") == true)
        #expect(Self.networkMessage {
            _ = try APNsConfiguration(privateKeyPEM: TestKeys.rsaKey.pemRepresentation, keyID: "K", teamID: "T", environment: .sandbox)
        }?.hasPrefix("APNs:") == true, "an RSA key is not a P-256 key")
        #expect(Self.networkMessage {
            _ = try APNsConfiguration(privateKeyPEM: TestKeys.apnsKey.pemRepresentation, keyID: "K", teamID: "T", environment: .sandbox,
                                      trustedRootCertificatesPEM: "garbage")
        }?.hasPrefix("APNs: trustedRootCertificatesPEM") == true)
        #expect(throws: StrataError.self) {
            _ = try APNsConfiguration(privateKeyPEM: TestKeys.apnsKey.pemRepresentation, keyID: "", teamID: "T", environment: .sandbox)
        }
    }

    @Test("FCM: reads the service account's fields; token_uri has a default; the endpoint too")
    func fcm() throws {
        let c = try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount())
        #expect(c.projectID == "strata-test" && c.clientEmail == "delivery@strata-test.iam.gserviceaccount.com" && c.privateKeyID == "kid-0123")
        #expect(c.tokenURI.absoluteString == "https://oauth2.example.test/token" && c.endpoint.absoluteString == "https://fcm.googleapis.com")
        let d = try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount(["token_uri": nil, "private_key_id": nil]),
                                     endpoint: URL(string: "https://127.0.0.1:9443"))
        #expect(d.tokenURI.absoluteString == "https://oauth2.googleapis.com/token" && d.privateKeyID == nil)
        #expect(d.endpoint.absoluteString == "https://127.0.0.1:9443")
    }

    @Test("FCM: bad JSON, a missing field, a bad key are network errors naming them")
    func fcmErrors() {
        #expect(Self.networkMessage { _ = try FCMConfiguration(serviceAccountJSON: Data("{".utf8)) }?.hasPrefix("FCM: the service account JSON does not parse") == true)
        #expect(Self.networkMessage { _ = try FCMConfiguration(serviceAccountJSON: Data("[1]".utf8)) } == "FCM: the service account JSON is not a JSON object")
        for field in ["project_id", "client_email", "private_key"] {
            #expect(Self.networkMessage { _ = try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount([field: nil])) }
                == "FCM: the service account JSON has no \"\(field)\"")
        }
        #expect(Self.networkMessage { _ = try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount(["private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"])) }?
            .contains("\"private_key\"") == true)
        #expect(Self.networkMessage { _ = try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount(["private_key": TestKeys.apnsKey.pemRepresentation])) }?
            .hasPrefix("FCM: the service account's \"private_key\"") == true, "a P-256 key is not an RSA key")
        #expect(Self.networkMessage { _ = try FCMConfiguration(serviceAccountJSON: TestKeys.serviceAccount(["token_uri": "not a url"])) }?
            .contains("token_uri") == true)
    }
}
