@_spi(Layers) import StrataEngine

/// Notifications a commit added to the outbox, in id order (for ``PushNotifications/notifications(bufferSize:)``).
struct NotificationsAdded: CommitChange {
    let notifications: [PushNotification]
}
