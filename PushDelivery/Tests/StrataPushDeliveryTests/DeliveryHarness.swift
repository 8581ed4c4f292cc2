import Crypto
import Foundation
import Strata
import StrataPushDelivery
import StrataPushPeers
import Synchronization
import Testing

/// A store with devices subscribed to one item, the two loopback peers (sharing one test CA), and
/// configurations that point at them: the set-up of the end-to-end and crash tests.
///
/// Every device has one DISTINCT subscription to ``item`` (field `value`), so each value appended
/// to it makes one notification per (non-suspended) device; Apple devices get
/// `{"aps":{"alert":"v ${value}"}}`, Google devices `{"notification":{"title":"t","body":"v ${value}"}}`.
final class DeliveryHarness: Sendable {
    static let applicationID = "com.example.app"
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    let item = "s/x"

    let directory: URL
    let store: Store
    let push: PushNotifications
    let authority: TestCertificateAuthority
    let apnsPeer: APNsPeer
    let fcmPeer: FCMPeer
    let apnsKey = P256.Signing.PrivateKey()
    let serviceAccount: FCMPeer.ServiceAccount
    private let appended = Mutex(0)

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try await Store.open(at: directory.appendingPathComponent("store"), options: StoreOptions(durability: .buffered))
        push = try await store.pushNotifications()
        authority = try TestCertificateAuthority()
        apnsPeer = try APNsPeer(authority: authority)
        fcmPeer = try FCMPeer(authority: authority)
        apnsPeer.register(publicKey: apnsKey.publicKey, keyID: Self.keyID, teamID: Self.teamID)
        try await apnsPeer.start()
        try await fcmPeer.start()
        serviceAccount = try fcmPeer.makeServiceAccount(projectID: "strata-test")
    }

    /// Stops the peers, closes the store and removes its directory.
    func tearDown() async {
        await apnsPeer.stop()
        await fcmPeer.stop()
        try? await store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Configurations

    func apns(key: P256.Signing.PrivateKey? = nil) throws -> APNsConfiguration {
        try APNsConfiguration(privateKeyPEM: (key ?? apnsKey).pemRepresentation, keyID: Self.keyID, teamID: Self.teamID,
                              environment: .custom(apnsPeer.url), trustedRootCertificatesPEM: authority.rootCertificatePEM)
    }

    func fcm(serviceAccountJSON: Data? = nil) throws -> FCMConfiguration {
        try FCMConfiguration(serviceAccountJSON: serviceAccountJSON ?? serviceAccount.json, endpoint: fcmPeer.url,
                             trustedRootCertificatesPEM: authority.rootCertificatePEM)
    }

    /// Options for tests: short retry delays and timeouts.
    static func options(
        maxInFlight: Int = 1_000, acknowledgementBatchSize: Int = 512, retryMaxDelay: Duration = .milliseconds(400),
        requestTimeout: Duration = .seconds(5), clock: (@Sendable () -> Date)? = nil
    ) -> PushDeliveryOptions {
        var options = PushDeliveryOptions(
            maxInFlight: maxInFlight, acknowledgementBatchSize: acknowledgementBatchSize,
            acknowledgementInterval: .milliseconds(5), retryBaseDelay: .milliseconds(20), retryMaxDelay: retryMaxDelay,
            requestTimeout: requestTimeout
        )
        if let clock { options.clock = clock }
        return options
    }

    // MARK: The store

    /// Registers a device and subscribes it to ``item``; returns its id.
    @discardableResult
    func device(_ platform: PushDevice.Platform, _ token: String, format: String? = nil) async throws -> String {
        let device = try await push.register(PushDevice(platform: platform, applicationID: Self.applicationID, deviceToken: token))
        var subscription = PushSubscription(mode: .distinct, items: [item], fields: ["value"])
        subscription.notificationFormat = format ?? (platform == .apple
            ? PushFormat.apple(alert: "v ${value}")
            : PushFormat.google(title: "t", body: "v ${value}"))
        _ = try await push.subscribe(subscription, device: device.id)
        return device.id
    }

    /// Appends the next values 1, 2, 3… to ``item``: one notification per subscribed device each.
    func append(_ count: Int = 1) async throws {
        let series = try await store.timeSeries(item, of: Int.self)
        for _ in 0..<count {
            let value = appended.withLock { n -> Int in n += 1; return n }
            _ = try await series.append(value)
        }
    }

    /// Appends one string value (for payloads of a given size).
    func append(text: String) async throws {
        _ = try await store.timeSeries(item, of: String.self).append(text)
    }

    /// The outbox's due, unacknowledged notifications.
    func pending() throws -> [PushNotification] {
        try push.pendingNotifications(limit: 100_000)
    }

    /// Runs `delivery` in a task.
    func run(_ delivery: PushDelivery) -> Task<Void, any Error> {
        Task { try await delivery.run() }
    }

    /// Waits until the outbox is empty (everything answered for good and acknowledged).
    func waitForEmptyOutbox(timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation) async throws {
        do {
            // limit 1: decoding the whole outbox every poll would take the CPU the delivery needs.
            try await waitUntil(timeout: timeout, "an empty outbox", every: .milliseconds(50), sourceLocation: sourceLocation) {
                try push.pendingNotifications(limit: 1).isEmpty
            }
        } catch {
            let left = (try? pending().count) ?? -1
            let message = "left in the outbox: \(left); accepted by the APNs peer \(apnsPeer.receivedCount), the FCM peer \(fcmPeer.receivedCount)"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
            throw error
        }
    }
}

/// The alert (Apple) or body (Google) texts of what a peer accepted for a token.
extension APNsPeer {
    func alerts(token: String) -> [String] {
        received(token: token).compactMap { ($0.payloadObject?["aps"] as? [String: Any])?["alert"] as? String }
    }
}

extension FCMPeer {
    func bodies(token: String) -> [String] {
        received(token: token).compactMap { message in
            let object = message.messageObject
            let notification = (object?["notification"] as? [String: Any])
                ?? ((object?["android"] as? [String: Any])?["notification"] as? [String: Any])
            return notification?["body"] as? String
        }
    }
}

/// Whether `error` is `StrataError.network` (a configuration error of the delivery).
func isNetworkError(_ error: any Error) -> Bool {
    if case StrataError.network = error { return true }
    return false
}
