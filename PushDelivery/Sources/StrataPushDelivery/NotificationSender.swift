import Strata

/// Sends one notification to its push service and says what the answer means. Implementations
/// renew their credentials themselves (a `renewToken` answer is resent once at once, counted
/// by `countRetry`), so the delivery loop sees every other ``DeliveryAnswer``.
protocol NotificationSender: Sendable {
    func send(_ notification: PushNotification) async -> DeliveryAnswer
}

/// The senders of one run, by platform; nil for a platform without a configuration.
struct NotificationSenders: Sendable {
    var apple: (any NotificationSender)?
    var google: (any NotificationSender)?

    func sender(for platform: PushDevice.Platform) -> (any NotificationSender)? {
        switch platform {
        case .apple: apple
        case .google: google
        }
    }
}
