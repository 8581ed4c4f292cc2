@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The `async` twins of the push methods (see Store+Async.swift for the rules): each runs its
// synchronous twin on the store's executor. `notifications()` and `statusChanges()` are streams
// and have no twin (API.md: `for try await n in push.notifications()` in any context).
extension PushNotifications {
    private var executor: StoreExecutor { state.executor }

    /// The `async` twin of ``register(_:)``.
    public func register(_ device: PushDevice) async throws -> RegisteredDevice {
        try await executor.run { try self.register(device) }
    }

    /// The `async` twin of ``suspend(device:)``.
    public func suspend(device id: String) async throws {
        try await executor.run { try self.suspend(device: id) }
    }

    /// The `async` twin of ``updateToken(device:to:)``.
    public func updateToken(device id: String, to token: String) async throws -> RegisteredDevice {
        try await executor.run { try self.updateToken(device: id, to: token) }
    }

    /// The `async` twin of ``resetBadge(device:)``.
    public func resetBadge(device id: String) async throws {
        try await executor.run { try self.resetBadge(device: id) }
    }

    /// The `async` twin of ``subscribe(_:device:coalescing:)``.
    public func subscribe(_ subscription: PushSubscription, device id: String, coalescing: Bool = false) async throws -> PushSubscription {
        try await executor.run { try self.subscribe(subscription, device: id, coalescing: coalescing) }
    }

    /// The `async` twin of ``modify(_:triggerExpression:notificationFormat:)``.
    public func modify(_ id: String, triggerExpression: String?, notificationFormat: String?) async throws -> PushSubscription {
        try await executor.run { try self.modify(id, triggerExpression: triggerExpression, notificationFormat: notificationFormat) }
    }

    /// The `async` twin of ``unsubscribe(_:)``.
    public func unsubscribe(_ id: String) async throws {
        try await executor.run { try self.unsubscribe(id) }
    }

    /// The `async` twin of ``unsubscribeAll(device:status:)``.
    @discardableResult
    public func unsubscribeAll(device id: String, status: PushSubscription.Status? = nil) async throws -> Int {
        try await executor.run { try self.unsubscribeAll(device: id, status: status) }
    }

    /// The `async` twin of ``subscriptions(device:status:)``.
    public func subscriptions(device id: String, status: PushSubscription.Status? = nil) async throws -> [PushSubscription] {
        try await executor.run { try self.subscriptions(device: id, status: status) }
    }

    /// The `async` twin of ``pendingNotifications(limit:)``.
    public func pendingNotifications(limit: Int = 100) async throws -> [PushNotification] {
        try await executor.run { try self.pendingNotifications(limit: limit) }
    }

    /// The `async` twin of ``acknowledge(_:)``.
    public func acknowledge(_ notification: PushNotification) async throws {
        try await executor.run { try self.acknowledge(notification) }
    }

    /// The `async` twin of ``acknowledge(_:)-([PushNotification])``.
    public func acknowledge(_ notifications: [PushNotification]) async throws {
        try await executor.run { try self.acknowledge(notifications) }
    }
}

extension Store {
    /// The `async` twin of ``pushNotifications(options:)``.
    public func pushNotifications(options: PushOptions = PushOptions()) async throws -> PushNotifications {
        try await executor.run { try self.pushNotifications(options: options) }
    }
}
