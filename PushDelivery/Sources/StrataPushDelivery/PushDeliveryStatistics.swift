/// What a ``PushDelivery`` has done since it was made: a snapshot (``PushDelivery/statistics``).
public struct PushDeliveryStatistics: Sendable, Hashable {
    /// Notifications the services accepted (HTTP 200), acknowledged.
    public var delivered: Int = 0
    /// Sends scheduled again: after a 429, a 5xx, a connection failure or a timeout (with
    /// backoff), or after a renewed credential (at once).
    public var retried: Int = 0
    /// Devices suspended because the service refused their token (once per device, until a
    /// notification to it is delivered again).
    public var devicesSuspended: Int = 0
    /// Notifications sent and not answered yet.
    public var inFlight: Int = 0
    /// Notifications acknowledged unsent, by reason (the service's: `PayloadTooLarge`,
    /// `BadDeviceToken`, `UNREGISTERED`, `INVALID_ARGUMENT`, …; `InvalidPayload` for an FCM
    /// payload that is not a JSON object). The notifications of a device suspended while they
    /// waited are counted under the reason of the suspension.
    public var rejected: [String: Int] = [:]
    /// Notifications waiting because their platform has no configuration: they stay in the
    /// outbox (for a delivery loop that has one) and hold back nobody else. Counted as the
    /// current (or last) run reads them, so a new run starts it again from zero.
    public var unconfigured: Int = 0
    /// `acknowledge([...])` commits made.
    public var acknowledgementCommits: Int = 0

    /// Statistics with every count zero.
    public init() {}
}
