import Foundation
import Strata
import Synchronization
@testable import StrataPushDelivery

/// A store in a temporary directory whose outbox the tests fill: each device subscribes to its
/// own item, and each update of that item is one notification.
final class TestOutbox: Sendable {
    struct Tick: Codable, Sendable { var n: Int }

    let url: URL
    let store: Store
    let push: PushNotifications

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-push-delivery-\(UUID().uuidString)")
        store = try Store.open(at: url, options: StoreOptions(durability: .buffered))
        push = try store.pushNotifications()
    }

    deinit {
        try? store.close()
        try? FileManager.default.removeItem(at: url)
    }

    /// Registers a device (token `token`) subscribed to the item `items/<item ?? token>`; returns its id.
    @discardableResult
    func device(_ token: String, platform: PushDevice.Platform = .apple, format: String = #"{"aps":{"alert":"n=${n}"}}"#,
                item: String? = nil) throws -> String {
        let device = try push.register(PushDevice(platform: platform, applicationID: "com.example.app", deviceToken: token))
        var subscription = PushSubscription(mode: .distinct, items: ["items/\(item ?? token)"], fields: ["n"])
        subscription.notificationFormat = format
        _ = try push.subscribe(subscription, device: device.id)
        return device.id
    }

    /// Appends `count` updates to the device's item: `count` notifications.
    func notify(_ token: String, count: Int = 1, from first: Int = 0) throws {
        let series = try store.timeSeries("items/\(token)", of: Tick.self)
        for n in first..<(first + count) { _ = try series.append(Tick(n: n)) }
    }

    /// Every notification in the outbox.
    func pending() throws -> [PushNotification] { try push.pendingNotifications(limit: 1_000_000) }
}

/// A sender that answers as its script says, recording what it was sent.
final class ScriptedSender: NotificationSender {
    struct Record: Sendable { var sent: [PushNotification] = []; var concurrent = 0; var maxConcurrent = 0 }

    let record = Mutex(Record())
    let delay: Duration
    let answer: @Sendable (_ notification: PushNotification, _ attempt: Int) -> DeliveryAnswer

    init(delay: Duration = .zero, answer: @Sendable @escaping (_ notification: PushNotification, _ attempt: Int) -> DeliveryAnswer = { _, _ in .delivered }) {
        self.delay = delay
        self.answer = answer
    }

    func send(_ notification: PushNotification) async -> DeliveryAnswer {
        let attempt = record.withLock { r in
            r.sent.append(notification)
            r.concurrent += 1
            r.maxConcurrent = max(r.maxConcurrent, r.concurrent)
            return r.sent.filter { $0.id == notification.id }.count
        }
        if delay > .zero { try? await Task.sleep(for: delay) } else { await Task.yield() }
        record.withLock { $0.concurrent -= 1 }
        return answer(notification, attempt)
    }

    var sent: [PushNotification] { record.withLock { $0.sent } }
}

extension PushDelivery {
    /// A delivery through scripted senders.
    static func scripted(_ outbox: TestOutbox, apple: ScriptedSender? = nil, google: ScriptedSender? = nil,
                         options: PushDeliveryOptions = PushDeliveryOptions()) -> PushDelivery {
        PushDelivery(push: outbox.push, options: options) { _ in NotificationSenders(apple: apple, google: google) }
    }

    /// Runs until `condition` holds (or `timeout` passes), then cancels the run and returns its
    /// error, if it threw.
    func run(until condition: @Sendable @escaping (PushDeliveryStatistics) throws -> Bool,
             timeout: Duration = .seconds(20)) async throws -> (any Error)? {
        let task = Task { try await self.run() }
        let start = ContinuousClock.now
        while ContinuousClock.now - start < timeout {
            if try condition(statistics) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        task.cancel()
        do { try await task.value; return nil } catch { return error }
    }
}
