import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A durable push-notification subscription to items of the store (Lightstreamer's
/// `MPNSubscription`): which updates, which fields, how they are formatted, filtered and limited.
public struct PushSubscription: Sendable, Hashable {
    /// MERGE keeps each item's state and sends it; DISTINCT sends each update.
    public enum Mode: String, Sendable, Hashable, Codable {
        /// Each item keeps its merged state (absent fields keep their values); notifications carry it.
        case merge = "MERGE"
        /// Each update is its own notification.
        case distinct = "DISTINCT"
    }

    /// Where the items are: time-series paths or history channel names.
    public enum DataAdapter: String, Sendable, Hashable, Codable {
        /// Items are time-series paths; an update is an event.
        case timeSeries
        /// Items are history channel names; an update is a message.
        case history
    }

    /// Lightstreamer's subscription status.
    public enum Status: String, Sendable, Hashable, Codable {
        /// Not subscribed (new, or unsubscribed).
        case unknown = "UNKNOWN"
        /// Submitted, not yet subscribed (a store subscribes at once: never returned by it).
        case active = "ACTIVE"
        /// Subscribed; a trigger, if any, has not held yet.
        case subscribed = "SUBSCRIBED"
        /// Its trigger held once: it sent its one notification and sends nothing more.
        case triggered = "TRIGGERED"
    }

    /// The buffer of updates that wait for the frequency limit, per item.
    public enum BufferSize: Sendable, Hashable {
        /// At most this many updates wait per item.
        case limited(Int)
        /// Every update waits.
        case unlimited
    }

    /// The most notifications per second per item.
    public enum MaxFrequency: Sendable, Hashable {
        /// At most this many notifications per second per item.
        case limited(Double)
        /// No limit.
        case unlimited
    }

    /// MERGE or DISTINCT.
    public var mode: Mode
    /// The items: series paths or channel names (non-empty, no spaces).
    public var items: [String]
    /// The fields, in the order `$[n]` counts them (non-empty, no spaces).
    public var fields: [String]
    /// Where the items are; time series by default.
    public var dataAdapter: DataAdapter = .timeSeries
    /// The JSON format of the notifications, with `${field}`, `$[n]`, `${LS_MPN_subscription_ID}`
    /// and the `"AUTO"` badge (see ``PushFormat``); required to subscribe.
    public var notificationFormat: String?
    /// A trigger: no notification until it holds, then exactly one.
    public var triggerExpression: String?
    /// The per-item buffer of updates waiting for the frequency limit; nil: 1 for MERGE,
    /// unlimited for DISTINCT. When it is full, a MERGE update's state replaces the newest
    /// waiting one (so the default buffer 1 keeps only the latest state) and a DISTINCT update
    /// drops the oldest waiting one. The store holds at most 1,000 waiting updates per item
    /// (`.unlimited` and larger sizes included), as a server caps its buffers.
    public var requestedBufferSize: BufferSize?
    /// The most notifications per second per item; nil: unlimited. Between two notifications of
    /// an item at least 1000 / f milliseconds pass (rounded up to the clock's millisecond),
    /// counted from the last one sent; a waiting update released later than it was due counts as
    /// sent when it was due. Triggered notifications ignore the limit.
    public var requestedMaxFrequency: MaxFrequency?
    /// The persistent id, once subscribed.
    public internal(set) var subscriptionID: String?
    /// The status.
    public internal(set) var status: Status = .unknown
    /// When the status last changed.
    public internal(set) var statusTimestamp: Date?

    /// A subscription of `fields` of `items`.
    public init(mode: Mode, items: [String], fields: [String]) {
        self.mode = mode
        self.items = items
        self.fields = fields
    }

    /// The items, space-separated (Lightstreamer's item group).
    public var itemGroup: String {
        get { items.joined(separator: " ") }
        set { items = newValue.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
    }

    /// The fields, space-separated (Lightstreamer's field schema).
    public var fieldSchema: String {
        get { fields.joined(separator: " ") }
        set { fields = newValue.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
    }

    /// Whether it was submitted (any status but `.unknown`).
    public var isActive: Bool { status != .unknown }
    /// Whether it is subscribed (`.subscribed` or `.triggered`).
    public var isSubscribed: Bool { status == .subscribed || status == .triggered }
    /// Whether its trigger held.
    public var isTriggered: Bool { status == .triggered }

    /// The buffer in effect: the requested one, else 1 for MERGE and unlimited for DISTINCT.
    var bufferSize: BufferSize { requestedBufferSize ?? (mode == .merge ? .limited(1) : .unlimited) }

    /// The most updates that wait per item: the buffer size, with ``unlimited`` (and any larger
    /// request) held to ``maxWaiting`` (as a Lightstreamer server caps buffers).
    var waitingCapacity: Int {
        switch bufferSize {
        case .limited(let n): return min(max(1, n), Self.maxWaiting)
        case .unlimited: return Self.maxWaiting
        }
    }

    /// The cap on waiting updates per subscription and item.
    static let maxWaiting = 1_000

    /// The frequency limit as the least milliseconds between two notifications of an item:
    /// 1000 / maxFrequency rounded up to the clock's whole millisecond; nil without a limit.
    var frequencyInterval: Int64? {
        guard case .limited(let f)? = requestedMaxFrequency, f > 0, f.isFinite else { return nil }
        let ms = (1_000 / f).rounded(.up)
        return ms >= 1e15 ? 1_000_000_000_000_000 : max(1, Int64(ms))
    }

    /// Refuses what cannot be subscribed: no items or fields, a name that is empty or holds a
    /// space, a missing format, a buffer below 1, a frequency that is not a positive number.
    func validate() throws {
        guard !items.isEmpty else { throw StrataError.invalidArgument(argument: "items", reason: "push subscription: no items") }
        guard !fields.isEmpty else { throw StrataError.invalidArgument(argument: "fields", reason: "push subscription: no fields") }
        for (what, names) in [("item", items), ("field", fields)] {
            for name in names where name.isEmpty || name.utf8.contains(UInt8(ascii: " ")) || name.utf8.count > 4_096 {
                throw StrataError.invalidArgument(argument: what + "s", reason: "push subscription: \(what) name \(name.debugDescription) is empty, holds a space or is over 4096 bytes")
            }
        }
        guard notificationFormat != nil else { throw StrataError.invalidArgument(argument: "notificationFormat", reason: "push subscription: a notification format is required") }
        if case .limited(let n)? = requestedBufferSize, n < 1 {
            throw StrataError.invalidArgument(argument: "requestedBufferSize", reason: "push subscription: buffer size \(n) is below 1")
        }
        if case .limited(let f)? = requestedMaxFrequency, !(f > 0 && f.isFinite) {
            throw StrataError.invalidArgument(argument: "requestedMaxFrequency", reason: "push subscription: maximum frequency \(f) is not a positive number")
        }
    }
}
