import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A notification in the store's outbox, due to be sent by the program's delivery loop.
public struct PushNotification: Sendable, Hashable {
    /// Unique and increasing, in the order notifications were created.
    public var id: UInt64
    /// The device's id.
    public var deviceID: String
    /// The device's push service.
    public var platform: PushDevice.Platform
    /// The application to notify.
    public var applicationID: String
    /// The device token to send to.
    public var deviceToken: String
    /// The subscription that matched.
    public var subscriptionID: String
    /// The item whose update caused it.
    public var item: String
    /// The JSON payload to send.
    public var payload: String
    /// The clock's time at the commit that created it.
    public var created: Date
}
