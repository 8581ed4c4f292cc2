@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A device that receives push notifications: the platform's push service, the application and
/// the token that service gave the application on that device (Lightstreamer's `MPNDevice`).
public struct PushDevice: Sendable, Hashable {
    /// The push service of a device.
    public enum Platform: String, Sendable, Hashable, Codable {
        /// Apple Push Notification service.
        case apple = "Apple"
        /// Firebase Cloud Messaging.
        case google = "Google"

        var code: UInt8 { self == .apple ? 1 : 2 }
        init?(code: UInt8) {
            switch code {
            case 1: self = .apple
            case 2: self = .google
            default: return nil
            }
        }
    }

    /// The device's push service.
    public var platform: Platform
    /// The application's identifier (bundle id, package name).
    public var applicationID: String
    /// The token the push service gave the application on the device.
    public var deviceToken: String

    /// A device of `platform` where the application `applicationID` got `deviceToken`.
    public init(platform: Platform, applicationID: String, deviceToken: String) {
        self.platform = platform
        self.applicationID = applicationID
        self.deviceToken = deviceToken
    }

    func validate() throws {
        guard !applicationID.isEmpty else { throw StrataError.invalidArgument(argument: "applicationID", reason: "push device: the application id is empty") }
        guard !deviceToken.isEmpty else { throw StrataError.invalidArgument(argument: "deviceToken", reason: "push device: the device token is empty") }
        for (what, s) in [("application id", applicationID), ("device token", deviceToken)] where s.utf8.count > 4_096 {
            throw StrataError.invalidArgument(argument: what == "device token" ? "deviceToken" : "applicationID", reason: "push device: the \(what) is \(s.utf8.count) bytes, over 4096")
        }
    }
}

/// A registered device: its persistent id and status.
public struct RegisteredDevice: Sendable, Hashable {
    /// A device's status.
    public enum Status: String, Sendable, Hashable, Codable {
        /// Notifications are created for it.
        case registered
        /// Suspended (the push service rejected its token): no notifications until it registers again.
        case suspended
    }

    /// The persistent id, never reused.
    public var id: String
    /// Whether notifications are created for it.
    public var status: Status
    /// The device.
    public var device: PushDevice
}
