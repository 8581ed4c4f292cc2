import Foundation

/// A notification in the store's outbox, due to be sent by the program's delivery loop.
struct PushNotification: Sendable, Hashable {
    /// Unique and increasing, in the order notifications were created.
    var id: UInt64
    var deviceID: String
    var platform: PushDevice.Platform
    var applicationID: String
    var deviceToken: String
    var subscriptionID: String
    /// The item whose update caused it.
    var item: String
    /// The JSON payload to send.
    var payload: String
    /// The clock's time at the commit that created it.
    var created: Date
}
