extension FCMPeer {
    /// A scripted answer to one `messages:send` request for a registration token (see
    /// ``FCMPeer/script(token:answers:)``).
    ///
    /// Scripted answers are given only to requests that pass the peer's checks, in order, one per
    /// request; once a token's script is used up, its requests succeed.
    public indirect enum Answer: Sendable {
        /// 200 `{"name": "projects/<project>/messages/<id>"}`; the request is recorded.
        case success
        /// An error in Google's format: `{"error": {"code", "message", "status", "details"}}`, with
        /// the canonical `status` of the HTTP status (400 `INVALID_ARGUMENT`, 401 `UNAUTHENTICATED`,
        /// 403 `PERMISSION_DENIED`, 404 `NOT_FOUND`, 429 `RESOURCE_EXHAUSTED`, 500 `INTERNAL`, 503
        /// `UNAVAILABLE`), an `FcmError` detail carrying `errorCode` when given, a `BadRequest`
        /// detail naming each field of `fieldViolations`, and a `retry-after` header when given.
        case status(Int, errorCode: String? = nil, message: String? = nil, fieldViolations: [String] = [], retryAfter: Int? = nil)
        /// Waits, then gives the other answer.
        case delay(Duration, then: Answer)
        /// Resets the HTTP/2 stream (closes an HTTP/1.1 connection) instead of answering.
        case resetStream
        /// Never answers.
        case noAnswer

        /// 404 `NOT_FOUND`, errorCode `UNREGISTERED`: the app instance is gone.
        public static let unregistered = Answer.status(404, errorCode: "UNREGISTERED", message: "Requested entity was not found.")
        /// 400 `INVALID_ARGUMENT` naming `message.token`: the registration token is not valid.
        public static let invalidToken = Answer.status(
            400, errorCode: "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token",
            fieldViolations: ["message.token"]
        )
        /// 429 `RESOURCE_EXHAUSTED`, errorCode `QUOTA_EXCEEDED`.
        public static func quotaExceeded(retryAfter: Int? = nil) -> Answer {
            .status(429, errorCode: "QUOTA_EXCEEDED", message: "Quota exceeded.", retryAfter: retryAfter)
        }
        /// 500 `INTERNAL`.
        public static let internalError = Answer.status(500, errorCode: "INTERNAL", message: "Internal error encountered.")
        /// 503 `UNAVAILABLE`.
        public static let unavailable = Answer.status(503, errorCode: "UNAVAILABLE", message: "The service is currently unavailable.")
    }

    /// Google's canonical status name for an HTTP status.
    static func canonicalStatus(_ status: Int) -> String {
        switch status {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 409: "ABORTED"
        case 429: "RESOURCE_EXHAUSTED"
        case 501: "UNIMPLEMENTED"
        case 503: "UNAVAILABLE"
        case 504: "DEADLINE_EXCEEDED"
        default: status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
        }
    }

    /// The reply for an error answer.
    static func errorReply(
        _ status: Int, errorCode: String?, message: String?, fieldViolations: [String], retryAfter: Int?
    ) -> PeerReply {
        var details: [[String: Any]] = []
        if !fieldViolations.isEmpty {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": fieldViolations.map { ["field": $0, "description": "Invalid value"] },
            ])
        }
        if let errorCode {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode])
        }
        var error: [String: Any] = [
            "code": status,
            "message": message ?? "Request failed.",
            "status": canonicalStatus(status),
        ]
        if !details.isEmpty { error["details"] = details }
        var headers: [(String, String)] = []
        if let retryAfter { headers.append(("retry-after", String(retryAfter))) }
        return .json(status, ["error": error], headers: headers)
    }
}
