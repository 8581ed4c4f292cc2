import Foundation

extension APNsPeer {
    /// A request the peer accepted (answered 200).
    public struct Request: Sendable {
        /// The device token from `:path` (`/3/device/{token}`).
        public let token: String
        /// The header fields, names lowercased (`apns-topic`, `apns-push-type`, …; not `authorization`).
        public let headers: [String: String]
        /// The payload bytes.
        public let payload: Data
        /// The `apns-id` answered: the request's own, or one the peer made (a UUID).
        public let apnsID: String
        /// Whether the request carried its own `apns-id`.
        public let hadAPNsID: Bool
        /// The provider token's `kid`.
        public let keyID: String
        /// The provider token's `iss` (the team id).
        public let teamID: String
        /// The provider token's `iat`.
        public let issuedAt: Date
        /// The number of the connection that carried it (1 for the peer's first connection).
        public let connection: Int
        /// The peer's clock when it was answered.
        public let receivedAt: Date

        /// The payload as text.
        public var payloadText: String { String(decoding: payload, as: UTF8.self) }
        /// The payload as a JSON object.
        public var payloadObject: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any]
        }
    }

    /// One answer the peer gave, whatever it was.
    public struct Exchange: Sendable {
        /// The device token of the request (empty when the path held none).
        public let token: String
        /// The status answered; 0 for a reset stream or no answer.
        public let status: Int
        /// The `reason` answered, nil for a success.
        public let reason: String?
        /// The number of the connection.
        public let connection: Int
        /// The request's `apns-id` header, if it had one.
        public let apnsID: String?
        /// The provider token's `iat`, when the token was verified.
        public let issuedAt: Date?
    }

    /// A provider token the peer accepted for the first time.
    public struct ProviderToken: Sendable {
        /// The token's `kid`.
        public let keyID: String
        /// The token's `iss`.
        public let teamID: String
        /// The token's `iat`.
        public let issuedAt: Date
    }
}
