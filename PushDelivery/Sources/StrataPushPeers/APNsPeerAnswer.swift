extension APNsPeer {
    /// A scripted answer to one request for a device token (see ``APNsPeer/script(token:answers:)``).
    ///
    /// Scripted answers are given only to requests that pass the peer's protocol checks, in order,
    /// one per request; once a token's script is used up, its requests succeed.
    public indirect enum Answer: Sendable {
        /// 200 with the `apns-id` echoed; the request is recorded in ``APNsPeer/received``.
        case success
        /// This status with the JSON body `{"reason": reason}` (410 also carries Apple's `timestamp`,
        /// milliseconds since 1970), and a `retry-after` header (seconds) when given.
        case status(Int, reason: String, retryAfter: Int? = nil)
        /// Waits, then gives the other answer.
        case delay(Duration, then: Answer)
        /// Resets the HTTP/2 stream (`RST_STREAM`) instead of answering.
        case resetStream
        /// Never answers.
        case noAnswer

        /// 400 `BadDeviceToken`.
        public static let badDeviceToken = Answer.status(400, reason: "BadDeviceToken")
        /// 410 `Unregistered`.
        public static let unregistered = Answer.status(410, reason: "Unregistered")
        /// 403 `ExpiredProviderToken`: the provider token is treated as expired from then on.
        public static let expiredProviderToken = Answer.status(403, reason: "ExpiredProviderToken")
        /// 403 `InvalidProviderToken`.
        public static let invalidProviderToken = Answer.status(403, reason: "InvalidProviderToken")
        /// 413 `PayloadTooLarge`.
        public static let payloadTooLarge = Answer.status(413, reason: "PayloadTooLarge")
        /// 429 `TooManyRequests`, with a `retry-after` when given.
        public static func tooManyRequests(retryAfter: Int? = nil) -> Answer {
            .status(429, reason: "TooManyRequests", retryAfter: retryAfter)
        }
        /// 500 `InternalServerError`.
        public static let internalServerError = Answer.status(500, reason: "InternalServerError")
        /// 503 `ServiceUnavailable`.
        public static let serviceUnavailable = Answer.status(503, reason: "ServiceUnavailable")
    }
}
