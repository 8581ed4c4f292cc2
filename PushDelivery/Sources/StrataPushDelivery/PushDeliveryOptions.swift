import Foundation
import Logging
import Strata

/// How a ``PushDelivery`` paces itself.
///
/// ## The duplicate window
/// A notification leaves the outbox only after a definitive answer, and only when its
/// acknowledgement commits. After a crash (`kill -9`), what was sent but not acknowledged yet
/// is sent again: at most `maxInFlight` notifications sent and unanswered, plus at most
/// `acknowledgementBatchSize` answered and waiting for (or in) their acknowledgement commit —
/// **at most `maxInFlight + acknowledgementBatchSize` duplicates** (1,512 with the defaults). The
/// delivery loop holds that bound: it sends nothing new while the answered, uncommitted
/// notifications fill a batch. A resent APNs notification carries the same `apns-id`.
public struct PushDeliveryOptions: Sendable {
    /// The most notifications sent and unanswered, over all devices. At least 1.
    public var maxInFlight: Int
    /// The most notifications sent and unanswered for one device. At least 1; 1 (the default)
    /// keeps each device's notifications in order.
    public var maxInFlightPerDevice: Int
    /// The most acknowledgements committed in one `acknowledge([...])` commit, and the most
    /// answered notifications waiting for their commit. At least 1.
    public var acknowledgementBatchSize: Int
    /// How long an acknowledgement waits for others to share its commit (a full batch commits
    /// at once). Not negative.
    public var acknowledgementInterval: Duration
    /// The first retry's delay; each further retry of the same device doubles it, up to
    /// `retryMaxDelay`, and a random jitter takes up to half of it off. Positive.
    public var retryBaseDelay: Duration
    /// The longest retry delay, `Retry-After` included. At least `retryBaseDelay`.
    public var retryMaxDelay: Duration
    /// How long one request may take before it is abandoned and retried. Positive.
    public var requestTimeout: Duration
    /// How long APNs keeps trying a notification it could not deliver at once:
    /// `apns-expiration` = the notification's `created` + this. Positive.
    public var expiration: Duration
    /// The time of token ages and renewals (tests move it).
    public var clock: @Sendable () -> Date
    /// Where the delivery loop logs: info for suspensions and rejections, debug per
    /// notification, error for configuration errors.
    public var logger: Logger
    /// Called after each acknowledgement commit with the notifications it took out of the outbox
    /// (for an operator's metrics; `strata-bench push-deliver` measures the time from a
    /// notification's commit to its acknowledgement with it). It runs on the delivery's own task
    /// between commits: keep it short.
    public var onAcknowledged: (@Sendable ([PushNotification]) -> Void)? = nil
    /// The outbox stream's buffer (`notifications(bufferSize:)`); nil: `max(4096, 4 × maxInFlight)`.
    /// Tests make it small to make the stream overflow.
    var streamBufferSize: Int? = nil

    /// Options with the given values (each has a default).
    public init(maxInFlight: Int = 1_000, maxInFlightPerDevice: Int = 1, acknowledgementBatchSize: Int = 512,
                acknowledgementInterval: Duration = .milliseconds(5), retryBaseDelay: Duration = .seconds(1),
                retryMaxDelay: Duration = .seconds(300), requestTimeout: Duration = .seconds(30),
                expiration: Duration = .seconds(86_400), clock: @Sendable @escaping () -> Date = { Date() },
                logger: Logger = Logger(label: "strata.push-delivery")) {
        self.maxInFlight = maxInFlight
        self.maxInFlightPerDevice = maxInFlightPerDevice
        self.acknowledgementBatchSize = acknowledgementBatchSize
        self.acknowledgementInterval = acknowledgementInterval
        self.retryBaseDelay = retryBaseDelay
        self.retryMaxDelay = retryMaxDelay
        self.requestTimeout = requestTimeout
        self.expiration = expiration
        self.clock = clock
        self.logger = logger
    }

    /// Throws ``StrataError/invalidArgument(argument:reason:)`` naming the first option out of range.
    func validate() throws {
        func check(_ holds: Bool, _ argument: String, _ reason: String) throws {
            if !holds { throw StrataError.invalidArgument(argument: argument, reason: "PushDeliveryOptions: \(reason)") }
        }
        try check(maxInFlight >= 1, "maxInFlight", "maxInFlight \(maxInFlight) must be at least 1")
        try check(maxInFlightPerDevice >= 1, "maxInFlightPerDevice", "maxInFlightPerDevice \(maxInFlightPerDevice) must be at least 1")
        try check(acknowledgementBatchSize >= 1, "acknowledgementBatchSize", "acknowledgementBatchSize \(acknowledgementBatchSize) must be at least 1")
        try check(acknowledgementInterval >= .zero, "acknowledgementInterval", "acknowledgementInterval \(acknowledgementInterval) must not be negative")
        try check(retryBaseDelay > .zero, "retryBaseDelay", "retryBaseDelay \(retryBaseDelay) must be positive")
        try check(retryMaxDelay >= retryBaseDelay, "retryMaxDelay", "retryMaxDelay \(retryMaxDelay) must be at least retryBaseDelay \(retryBaseDelay)")
        try check(requestTimeout > .zero, "requestTimeout", "requestTimeout \(requestTimeout) must be positive")
        try check(expiration > .zero, "expiration", "expiration \(expiration) must be positive")
    }
}
