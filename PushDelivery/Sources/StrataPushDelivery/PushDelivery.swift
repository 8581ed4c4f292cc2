import AsyncHTTPClient
import Foundation
import Logging
import NIOSSL
import Strata
import Synchronization

/// Drains a store's push outbox to Apple's (APNs) and Google's (FCM HTTP v1) push services, in
/// the process that owns the store: what Lightstreamer's MPN module does with its outbox.
///
/// ```swift
/// import Strata
/// import StrataPushDelivery
///
/// let store = try Store.open(at: url)
/// let apns = try APNsConfiguration(privateKeyPEM: p8Text, keyID: "KEY1234567", teamID: "TEAM123456",
///                                  environment: .production)
/// let fcm = try FCMConfiguration(serviceAccountJSON: serviceAccountData)
/// let delivery = PushDelivery(push: try store.pushNotifications(), apns: apns, fcm: fcm)
/// let task = Task { try await delivery.run() }   // until cancelled or the store closes
/// // …
/// print(delivery.statistics.delivered, delivery.statistics.rejected)
/// task.cancel()
/// ```
///
/// The loop, in a few lines: read the outbox as a stream (pending notifications first, then
/// each new one as its update commits); queue each by device, in id order; send while fewer
/// than ``PushDeliveryOptions/maxInFlight`` are unanswered (one per device by default, which
/// keeps each device's order), over one HTTP/2 connection per service; classify each answer
/// (``DeliveryAnswer``'s table): delivered or refused for good → acknowledged, in batches of
/// one commit each; a refused device token → `suspend(device:)`; a transient failure → that
/// device waits out an exponential backoff while the others go on; a configuration error →
/// `run()` throws.
///
/// At least once: a notification leaves the outbox only after a definitive answer; after a
/// crash at most `maxInFlight + acknowledgementBatchSize` notifications are sent again
/// (``PushDeliveryOptions``).
public final class PushDelivery: Sendable {
    private let push: PushNotifications
    private let apns: APNsConfiguration?
    private let fcm: FCMConfiguration?
    private let options: PushDeliveryOptions
    /// Senders given by the tests instead of the HTTP ones.
    private let injectedSenders: (@Sendable (_ countRetry: @Sendable @escaping () -> Void) -> NotificationSenders)?
    private let state: DeliveryLoop.Shared

    /// A delivery of `push`'s outbox.
    ///
    /// - Parameters:
    ///   - push: The store's push notifications (`store.pushNotifications()`).
    ///   - apns: How to reach APNs; nil leaves Apple devices' notifications in the outbox
    ///     (counted in ``PushDeliveryStatistics/unconfigured``).
    ///   - fcm: How to reach FCM; nil leaves Google devices' notifications in the outbox.
    ///   - options: Pacing, retries, timeouts, the clock and the logger. They are checked by
    ///     ``run()``.
    public init(push: PushNotifications, apns: APNsConfiguration? = nil, fcm: FCMConfiguration? = nil,
                options: PushDeliveryOptions = PushDeliveryOptions()) {
        self.push = push
        self.apns = apns
        self.fcm = fcm
        self.options = options
        injectedSenders = nil
        state = DeliveryLoop.Shared(DeliveryLoop.State(queue: Self.queue(options)))
    }

    /// A delivery through the senders `makeSenders` gives (tests: no network).
    init(push: PushNotifications, options: PushDeliveryOptions,
         senders makeSenders: @Sendable @escaping (_ countRetry: @Sendable @escaping () -> Void) -> NotificationSenders) {
        self.push = push
        apns = nil
        fcm = nil
        self.options = options
        injectedSenders = makeSenders
        state = DeliveryLoop.Shared(DeliveryLoop.State(queue: Self.queue(options)))
    }

    private static func queue(_ options: PushDeliveryOptions) -> DeliveryQueue {
        DeliveryQueue(maxInFlight: max(1, options.maxInFlight), maxInFlightPerDevice: max(1, options.maxInFlightPerDevice),
                      batchSize: max(1, options.acknowledgementBatchSize))
    }

    /// What this delivery has done since it was made (a snapshot; `inFlight` is now).
    public var statistics: PushDeliveryStatistics {
        state.withLock { s in
            var statistics = s.statistics
            statistics.inFlight = s.queue.inFlight
            return statistics
        }
    }

    /// Delivers the outbox until the task is cancelled or the store closes, then returns (after
    /// committing the acknowledgements it holds, when the store is still open).
    ///
    /// One `HTTPClient` (on `HTTPClient.defaultEventLoopGroup`, the process's shared NIO event
    /// loops; HTTP/2 negotiated by ALPN, so requests to one service share one connection) is
    /// made here and shut down before this returns.
    ///
    /// - Throws: ``StrataError/network(_:)`` for a configuration error, naming the service and
    ///   the reason (APNs `InvalidProviderToken` and the other 403s but `ExpiredProviderToken`,
    ///   FCM 403, the token endpoint refusing the assertion); the notification concerned stays
    ///   in the outbox. ``StrataError/invalidArgument(argument:reason:)`` for options out of
    ///   range, or when this delivery is running already. Nothing else.
    public func run() async throws {
        try options.validate()
        try state.withLock { s in
            guard !s.running else {
                throw StrataError.invalidArgument(argument: "run", reason: "PushDelivery.run(): this delivery is running already")
            }
            s.running = true
            s.stopping = false
            s.queue = Self.queue(options)
            s.statistics.unconfigured = 0   // counted again as the new run's stream yields them
            s.unconfiguredPlatforms = []
        }
        defer { state.withLock { $0.running = false } }
        let countRetry: @Sendable () -> Void = { [state] in state.withLock { $0.statistics.retried += 1 } }
        if let injectedSenders {
            try await DeliveryLoop(push: push, senders: injectedSenders(countRetry), options: options, state: state).run()
            return
        }
        // The client's TLS configuration is APNs's (the busy path needs no per-request
        // configuration); FCM's requests carry their own when their roots differ.
        let apnsTLS = TrustedRoots.tlsConfiguration(apns?.trustedRoots)
        let fcmRoots = fcm?.trustedRoots
        let fcmNeedsOwn = apns != nil && fcmRoots != apns?.trustedRoots
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .automatic
        configuration.tlsConfiguration = apns != nil ? apnsTLS : TrustedRoots.tlsConfiguration(fcmRoots)
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let senders = NotificationSenders(
            apple: apns.map { APNsSender(client: client, configuration: $0, tls: nil, options: options, countRetry: countRetry) },
            google: fcm.map { FCMSender(client: client, configuration: $0, tls: fcmNeedsOwn ? TrustedRoots.tlsConfiguration(fcmRoots) : nil,
                                        options: options, countRetry: countRetry) })
        do {
            try await DeliveryLoop(push: push, senders: senders, options: options, state: state).run()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
    }
}
