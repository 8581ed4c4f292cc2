@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A session's push subscriptions, with its checks (Security/StoreSession.swift), and their
// `async` twin.
extension StoreSession {
    /// The store's push subscriptions, with the session's checks: ``PushNotifications/subscribe(_:device:coalescing:)``
    /// needs ``Permission/selectTopic`` on every item (Diffusion's permission for subscribing).
    /// Devices, the other subscription calls and the outbox are not checked: they are the
    /// delivery loop's side of push, which a program runs as the owner.
    public func pushNotifications(options: PushOptions = PushOptions()) throws -> PushNotifications {
        var push = try store.pushNotifications(options: options)
        push.access = access
        return push
    }

    /// The `async` twin of ``pushNotifications(options:)``.
    public func pushNotifications(options: PushOptions = PushOptions()) async throws -> PushNotifications {
        try await store.executor.run { try self.pushNotifications(options: options) }
    }
}
