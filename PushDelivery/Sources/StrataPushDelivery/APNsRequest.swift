import Crypto
import Foundation
import AsyncHTTPClient

/// The parts of an APNs request that come from the notification: its path, `apns-id`,
/// `apns-expiration`, and the headers (`POST /3/device/{token}`).
enum APNsRequest {
    /// The bytes a device token may hold in a path without percent-encoding (RFC 3986's
    /// unreserved characters; hex tokens are always among them).
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `/3/device/{token}`, the token as the store holds it, percent-encoded only where it holds
    /// a character that is not unreserved.
    static func path(deviceToken: String) -> String {
        let plain = deviceToken.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
        }
        if plain { return "/3/device/" + deviceToken }
        return "/3/device/" + (deviceToken.addingPercentEncoding(withAllowedCharacters: unreserved) ?? deviceToken)
    }

    /// The notification's `apns-id`: a UUID that is the same every time this notification is
    /// sent, so that a resend (a retry, or after a crash) is recognisable. It is the first 16
    /// bytes of SHA-256 over the application id, a zero byte, the device token, a zero byte and
    /// the notification id (8 bytes, big-endian), with the version nibble set to 8 (RFC 9562's
    /// custom, name-based UUID) and the variant bits to `10`. Lower case, as APNs writes it.
    static func apnsID(applicationID: String, deviceToken: String, notificationID: UInt64) -> String {
        var hasher = SHA256()
        hasher.update(data: Data(applicationID.utf8))
        hasher.update(data: [0])
        hasher.update(data: Data(deviceToken.utf8))
        hasher.update(data: [0])
        withUnsafeBytes(of: notificationID.bigEndian) { hasher.update(bufferPointer: $0) }
        var bytes = Array(hasher.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return uuid.uuidString.lowercased()
    }

    /// `apns-expiration`: `created + expiration`, in whole seconds since 1970 (at least 1: 0
    /// would tell APNs not to store the notification at all).
    static func expiration(created: Date, expiration: Duration) -> String {
        let seconds = created.timeIntervalSince1970 + Double(expiration.components.seconds)
            + Double(expiration.components.attoseconds) / 1e18
        return String(max(1, Int64(seconds.rounded(.down))))
    }

    /// Adds the request headers to `request`: `authorization`, `apns-topic`, `apns-push-type`,
    /// `apns-priority`, `apns-expiration`, `apns-id`, and the content type.
    static func addHeaders(to request: inout HTTPClientRequest, authorization: String, topic: String,
                           pushType: APNsPushType, expiration: String, apnsID: String) {
        request.headers.reserveCapacity(7)
        request.headers.add(name: "authorization", value: authorization)
        request.headers.add(name: "apns-topic", value: topic)
        request.headers.add(name: "apns-push-type", value: pushType.rawValue)
        request.headers.add(name: "apns-priority", value: pushType.priority)
        request.headers.add(name: "apns-expiration", value: expiration)
        request.headers.add(name: "apns-id", value: apnsID)
        request.headers.add(name: "content-type", value: "application/json")
    }
}
