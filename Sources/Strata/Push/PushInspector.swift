import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A store's push subscriptions as `strata-dump push` prints them (FORMAT.md §18).
public struct InspectedPush: Codable, Sendable, Equatable {
    /// One registered device.
    public struct Device: Codable, Sendable, Equatable {
        /// The persistent id (`D1`, `D2`…).
        public var id: String
        /// `Apple` or `Google`.
        public var platform: String
        /// The application's identifier.
        public var applicationID: String
        /// The token the push service gave the application on the device.
        public var deviceToken: String
        /// `registered` or `suspended`.
        public var status: String
        /// The last badge number given (0: none since the last reset).
        public var badge: UInt64
    }

    /// One subscription.
    public struct Subscription: Codable, Sendable, Equatable {
        /// The persistent id (`S1`, `S2`…).
        public var id: String
        /// Its device's id.
        public var device: String
        /// `MERGE` or `DISTINCT`.
        public var mode: String
        /// `timeSeries` or `history`.
        public var adapter: String
        /// The items: series paths or channel names.
        public var items: [String]
        /// The fields, in `$[n]` order.
        public var fields: [String]
        /// `SUBSCRIBED` or `TRIGGERED`.
        public var status: String
        /// When the status last changed, in milliseconds since 1970.
        public var statusTime: Int64?
        /// The trigger expression, if any.
        public var trigger: String?
        /// The notification format.
        public var format: String
        /// The requested buffer size: `default`, `unlimited` or a number.
        public var bufferSize: String
        /// The requested maximum frequency: `default`, `unlimited` or notifications per second.
        public var maxFrequency: String
        /// Its notifications in the outbox (not acknowledged yet).
        public var pending: Int
    }

    /// One notification in the outbox.
    public struct Notification: Codable, Sendable, Equatable {
        /// Its id (increasing in creation order).
        public var id: UInt64
        /// The device's id.
        public var device: String
        /// The subscription's id.
        public var subscription: String
        /// The item whose update created it.
        public var item: String
        /// The clock's time at the commit that created it, in milliseconds since 1970.
        public var created: Int64
        /// The JSON payload to send.
        public var payload: String
    }

    /// The number the next device gets (its id is `D` and the number).
    public var nextDevice: UInt64
    /// The number the next subscription gets.
    public var nextSubscription: UInt64
    /// The id the next notification gets, as a reopen recovers it.
    public var nextNotification: UInt64
    /// Every device, in id order.
    public var devices: [Device]
    /// Every subscription, in id order.
    public var subscriptions: [Subscription]
    /// Notifications in the outbox, all of them (`pending` counts them).
    public var pending: Int
    /// The oldest notifications of the outbox, at most the limit asked for.
    public var outbox: [Notification]
}

/// Reads a store's push subscriptions from its files, without opening the store (FORMAT.md §18):
/// the library side of `strata-dump push`.
///
/// ```swift
/// let push = try PushInspector.push(ofStoreAt: "/var/lib/app/data.strata", limit: 20)
/// for s in push.subscriptions { print(s.id, s.status, s.pending) }
/// ```
public enum PushInspector {
    /// The devices, the subscriptions with their pending counts, and the oldest `limit`
    /// notifications of the outbox (all if nil).
    ///
    /// - Throws: `StrataError.corrupted` or `StrataError.unsupportedFormatVersion` for a record
    ///   that does not decode;
    ///   the errors of reading the store's files.
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func push(ofStoreAt directory: String, limit: Int? = nil, key: EncryptionKey? = nil) throws -> InspectedPush {
        let snapshot = try StoreImage.snapshot(directory: directory, key: key ?? InspectionKey.current)
        var counters = (device: UInt64(1), subscription: UInt64(1), notification: UInt64(1))
        if let bytes = try snapshot.get(PushLayout.countersKey) { counters = try PushRecords.decodeCounters(bytes) }

        var devices: [InspectedPush.Device] = []
        try PushLayout.scan(snapshot, kind: 1) { n, bytes in
            let d = try PushRecords.decodeDeviceRecord(bytes, number: n)
            devices.append(.init(id: PushLayout.deviceID(n), platform: d.device.platform.rawValue,
                                 applicationID: d.device.applicationID, deviceToken: d.device.deviceToken,
                                 status: d.suspended ? "suspended" : "registered", badge: d.badge))
            counters.device = max(counters.device, try CounterLimit.next(after: n, "device number", file: "push device \(n)"))
        }
        var subscriptions: [InspectedPush.Subscription] = []
        try PushLayout.scan(snapshot, kind: 2) { n, bytes in
            let (device, s) = try PushRecords.decodeSubscriptionRecord(bytes, number: n)
            subscriptions.append(.init(
                id: PushLayout.subscriptionID(n), device: PushLayout.deviceID(device), mode: s.mode.rawValue,
                adapter: s.dataAdapter.rawValue, items: s.items, fields: s.fields, status: s.status.rawValue,
                statusTime: try s.statusTimestamp.map { try InspectedTime.milliseconds($0, "push subscription \(n)") },
                trigger: s.triggerExpression, format: s.notificationFormat ?? "",
                bufferSize: describe(s.requestedBufferSize), maxFrequency: describe(s.requestedMaxFrequency), pending: 0))
            counters.subscription = max(counters.subscription, try CounterLimit.next(after: n, "subscription number", file: "push subscription \(n)"))
        }
        var outbox: [InspectedPush.Notification] = []
        var pendingBySubscription: [String: Int] = [:]
        var pending = 0
        try PushLayout.scan(snapshot, kind: 4) { id, bytes in
            pending += 1
            let n = try PushRecords.decodeNotification(bytes, id: id)
            pendingBySubscription[n.subscriptionID, default: 0] += 1
            if limit.map({ outbox.count < $0 }) ?? true {
                outbox.append(.init(id: id, device: n.deviceID, subscription: n.subscriptionID, item: n.item,
                                    created: try InspectedTime.milliseconds(n.created, "push notification \(id)"), payload: n.payload))
            }
            counters.notification = max(counters.notification, try CounterLimit.next(after: id, "notification number", file: "push notification \(id)"))
        }
        for i in subscriptions.indices { subscriptions[i].pending = pendingBySubscription[subscriptions[i].id] ?? 0 }
        return InspectedPush(nextDevice: counters.device, nextSubscription: counters.subscription,
                             nextNotification: counters.notification, devices: devices, subscriptions: subscriptions,
                             pending: pending, outbox: outbox)
    }

    private static func describe(_ b: PushSubscription.BufferSize?) -> String {
        switch b {
        case nil: "default"
        case .unlimited?: "unlimited"
        case .limited(let n)?: String(n)
        }
    }

    private static func describe(_ f: PushSubscription.MaxFrequency?) -> String {
        switch f {
        case nil: "default"
        case .unlimited?: "unlimited"
        case .limited(let x)?: String(x)
        }
    }

}
