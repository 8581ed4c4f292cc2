import Foundation

/// A durable push-notification subscription to items of the store (Lightstreamer's
/// `MPNSubscription`): which updates, which fields, how they are formatted, filtered and limited.
struct PushSubscription: Sendable, Hashable {
    /// MERGE keeps each item's state and sends it; DISTINCT sends each update.
    enum Mode: String, Sendable, Hashable, Codable {
        case merge = "MERGE"
        case distinct = "DISTINCT"
    }

    /// Where the items are: time-series paths or history channel names.
    enum DataAdapter: String, Sendable, Hashable, Codable {
        case timeSeries
        case history
    }

    /// Lightstreamer's subscription status.
    enum Status: String, Sendable, Hashable, Codable {
        case unknown = "UNKNOWN"
        case active = "ACTIVE"
        case subscribed = "SUBSCRIBED"
        case triggered = "TRIGGERED"
    }

    /// The buffer of updates that wait for the frequency limit, per item.
    enum BufferSize: Sendable, Hashable {
        case limited(Int)
        case unlimited
    }

    /// The most notifications per second per item.
    enum MaxFrequency: Sendable, Hashable {
        case limited(Double)
        case unlimited
    }

    var mode: Mode
    var items: [String]
    var fields: [String]
    var dataAdapter: DataAdapter = .timeSeries
    var notificationFormat: String?
    var triggerExpression: String?
    var requestedBufferSize: BufferSize?
    var requestedMaxFrequency: MaxFrequency?
    var subscriptionID: String?
    var status: Status = .unknown
    var statusTimestamp: Date?

    init(mode: Mode, items: [String], fields: [String]) {
        self.mode = mode
        self.items = items
        self.fields = fields
    }

    /// The items, space-separated (Lightstreamer's item group).
    var itemGroup: String {
        get { items.joined(separator: " ") }
        set { items = newValue.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
    }

    /// The fields, space-separated (Lightstreamer's field schema).
    var fieldSchema: String {
        get { fields.joined(separator: " ") }
        set { fields = newValue.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
    }

    var isActive: Bool { status != .unknown }
    var isSubscribed: Bool { status == .subscribed || status == .triggered }
    var isTriggered: Bool { status == .triggered }

    /// The buffer in effect: the requested one, else 1 for MERGE and unlimited for DISTINCT.
    var bufferSize: BufferSize { requestedBufferSize ?? (mode == .merge ? .limited(1) : .unlimited) }

    /// Refuses what cannot be subscribed: no items or fields, a name that is empty or holds a
    /// space, a missing format, a buffer below 1, a frequency that is not a positive number.
    func validate() throws {
        guard !items.isEmpty else { throw StrataError.invalidArgument("push subscription: no items") }
        guard !fields.isEmpty else { throw StrataError.invalidArgument("push subscription: no fields") }
        for (what, names) in [("item", items), ("field", fields)] {
            for name in names where name.isEmpty || name.contains(" ") || name.utf8.count > 4_096 {
                throw StrataError.invalidArgument("push subscription: \(what) name \(name.debugDescription) is empty, holds a space or is over 4096 bytes")
            }
        }
        guard notificationFormat != nil else { throw StrataError.invalidArgument("push subscription: a notification format is required") }
        if case .limited(let n)? = requestedBufferSize, n < 1 {
            throw StrataError.invalidArgument("push subscription: buffer size \(n) is below 1")
        }
        if case .limited(let f)? = requestedMaxFrequency, !(f > 0 && f.isFinite) {
            throw StrataError.invalidArgument("push subscription: maximum frequency \(f) is not a positive number")
        }
    }
}
