import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How a replication identifies itself to its gateway.
///
/// ```swift
/// var config = ReplicationConfiguration.repeatingBidirectionalReplication(with: url)
/// config.authentication = .basic(user: "alice", password: "secret")
/// ```
public enum ReplicationAuthentication: Sendable, Hashable {
    /// No credentials (only for a gateway that asks for none).
    case none
    /// HTTP Basic credentials, sent with every request (the gateway's users, `Gateway/PROTOCOL.md`).
    case basic(user: String, password: String)

    /// The `Authorization` header value, or nil for ``none``.
    var headerValue: String? {
        switch self {
        case .none: return nil
        case .basic(let user, let password):
            return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
    }
}
