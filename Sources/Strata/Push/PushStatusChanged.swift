@_spi(Layers) import StrataEngine

/// Status changes a commit made (for ``PushNotifications/statusChanges(bufferSize:)``).
struct PushStatusChanged: CommitChange {
    let changes: [PushStatusChange]
}
