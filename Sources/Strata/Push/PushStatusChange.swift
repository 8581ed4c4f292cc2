@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A change of a push subscription's or device's status, as Lightstreamer's MPN delegates report
/// it (see ``PushNotifications/statusChanges(bufferSize:)``).
public enum PushStatusChange: Sendable, Hashable {
    /// A subscription was made (its status is `.subscribed`).
    case subscribed(subscriptionID: String, deviceID: String)
    /// A subscription's trigger held: it sent its one notification and became `.triggered`.
    case triggered(subscriptionID: String, deviceID: String)
    /// A subscription's trigger or format changed (``PushNotifications/modify(_:triggerExpression:notificationFormat:)``,
    /// or a coalescing subscribe); it is `.subscribed` again.
    case modified(subscriptionID: String, deviceID: String)
    /// A subscription was deleted (unsubscribed).
    case deleted(subscriptionID: String, deviceID: String)
    /// A device was suspended: no notifications are created for it until it registers again.
    case suspended(deviceID: String)
    /// A suspended device registered again: notifications are created for it again.
    case resumed(deviceID: String)
}
