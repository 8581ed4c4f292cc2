import Foundation

/// What a push service's answer means for a notification: the one place that decides.
///
/// APNs (the `reason` of the JSON error body, `{"reason":"BadDeviceToken"}`):
///
/// | Status | Reason | Outcome |
/// |---|---|---|
/// | 200 | — | ``delivered``: acknowledged |
/// | 400 | `BadDeviceToken`, `DeviceTokenNotForTopic` | ``suspendDevice(reason:)``: `suspend(device:)`, acknowledged |
/// | 410 | `Unregistered`, `ExpiredToken` (or any 410) | ``suspendDevice(reason:)`` |
/// | 400 | `IdleTimeout` | ``retry(reason:after:)`` |
/// | 400 | any other (`BadPayload`, `PayloadEmpty`, `BadExpirationDate`, `BadPriority`, `MissingTopic`, `BadTopic`, `TopicDisallowed`, `BadCollapseId`, `BadMessageId`, `InvalidPushType`, `DuplicateHeaders`, …) | ``rejected(reason:)``: acknowledged unsent, counted, logged |
/// | 403 | `ExpiredProviderToken` | ``renewToken(reason:)``: a new provider token, sent again |
/// | 403 | `InvalidProviderToken`, `MissingProviderToken`, `BadCertificate`, `BadCertificateEnvironment`, `Forbidden`, or none | ``configurationError(_:)``: `run()` throws, the notification stays |
/// | 404 | `BadPath` | ``rejected(reason:)`` |
/// | 405 | `MethodNotAllowed` | ``rejected(reason:)`` |
/// | 413 | `PayloadTooLarge` | ``rejected(reason:)`` |
/// | 408, 429 | `TooManyRequests`, `TooManyProviderTokenUpdates`, … | ``retry(reason:after:)`` (honouring `Retry-After`) |
/// | 5xx | `InternalServerError`, `ServiceUnavailable`, `Shutdown`, … | ``retry(reason:after:)`` |
/// | other 4xx | any | ``rejected(reason:)`` (a definitive refusal of this notification) |
/// | other | — | ``retry(reason:after:)`` |
///
/// FCM HTTP v1 (the error body `{"error":{"code","message","status","details":[…]}}`; the reason
/// counted is the `errorCode` of the `FcmError` detail, else the `status`):
///
/// | Status | Error | Outcome |
/// |---|---|---|
/// | 200 | — | ``delivered`` |
/// | 404 | `UNREGISTERED`, or `NOT_FOUND` with an error body | ``suspendDevice(reason:)`` |
/// | 404 | no JSON error body (a wrong endpoint or project) | ``configurationError(_:)`` |
/// | 400 | `INVALID_ARGUMENT` whose message or field violations name the token (`message.token`, "registration token") | ``suspendDevice(reason:)`` |
/// | 400 | any other (`INVALID_ARGUMENT` about the payload, …) | ``rejected(reason:)`` |
/// | 401 | `THIRD_PARTY_AUTH_ERROR` (the project's APNs credentials) | ``configurationError(_:)`` |
/// | 401 | any other (`UNAUTHENTICATED`) | ``renewToken(reason:)``: a new access token, sent again |
/// | 403 | any (`PERMISSION_DENIED`, `SENDER_ID_MISMATCH` too: API.md makes every FCM 403 a configuration error, and a sender mismatch usually means the wrong service account) | ``configurationError(_:)`` |
/// | 408, 429, 5xx | `QUOTA_EXCEEDED`, `UNAVAILABLE`, `INTERNAL`, … | ``retry(reason:after:)`` |
/// | other 4xx | any | ``rejected(reason:)`` |
///
/// A connection failure, a reset stream or a timeout is ``retry(reason:after:)`` for either
/// service (the request may have arrived: the resend carries the same `apns-id`).
enum DeliveryAnswer: Sendable, Equatable {
    /// The service took the notification.
    case delivered
    /// The service refused the device's token for good: suspend the device, acknowledge.
    case suspendDevice(reason: String)
    /// The service refused this notification for good (its payload or headers): acknowledge
    /// it unsent.
    case rejected(reason: String)
    /// Try again later (after at least `after` when the service said so).
    case retry(reason: String, after: Duration?)
    /// The credential expired: renew it and send again.
    case renewToken(reason: String)
    /// The configuration is wrong (the message names the service and the reason): stop.
    case configurationError(String)

    /// Whether the notification leaves the outbox.
    var isDefinitive: Bool {
        switch self {
        case .delivered, .suspendDevice, .rejected: true
        case .retry, .renewToken, .configurationError: false
        }
    }

    /// The answer of APNs: its status, `Retry-After` (seconds) and body.
    static func apns(status: Int, retryAfter: Duration?, body: Data) -> DeliveryAnswer {
        if status == 200 { return .delivered }
        let reason = ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["reason"] as? String
        let named = reason ?? "HTTP \(status)"
        switch (status, reason) {
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): return .suspendDevice(reason: named)
        case (410, _): return .suspendDevice(reason: reason ?? "Unregistered")
        case (400, "IdleTimeout"): return .retry(reason: named, after: retryAfter)
        case (403, "ExpiredProviderToken"): return .renewToken(reason: named)
        case (403, _): return .configurationError("APNs refused the provider token or credentials: 403 \(named)")
        case (408, _), (429, _), (500...599, _): return .retry(reason: named, after: retryAfter)
        case (400...499, _): return .rejected(reason: named)
        default: return .retry(reason: named, after: retryAfter)
        }
    }

    /// The answer of FCM's `messages:send`: its status, `Retry-After` (seconds) and body.
    static func fcm(status: Int, retryAfter: Duration?, body: Data) -> DeliveryAnswer {
        if status == 200 { return .delivered }
        let error = ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["error"] as? [String: Any]
        let details = error?["details"] as? [[String: Any]] ?? []
        let errorCode = details.lazy.compactMap { $0["errorCode"] as? String }.first
        let statusName = error?["status"] as? String
        let message = error?["message"] as? String ?? ""
        let named = errorCode ?? statusName ?? "HTTP \(status)"
        switch status {
        case 404:
            guard error != nil else { return .configurationError("FCM: messages:send answered 404 without an error body (is the endpoint or project id right?)") }
            return .suspendDevice(reason: errorCode ?? "UNREGISTERED")
        case 400:
            let fields = details.flatMap { ($0["fieldViolations"] as? [[String: Any]]) ?? [] }.compactMap { $0["field"] as? String }
            let namesToken = fields.contains("message.token") || message.contains("message.token")
                || message.lowercased().contains("registration token")
            return namesToken ? .suspendDevice(reason: named) : .rejected(reason: named)
        case 401:
            if errorCode == "THIRD_PARTY_AUTH_ERROR" {
                return .configurationError("FCM refused the project's third-party (APNs or web push) credentials: 401 THIRD_PARTY_AUTH_ERROR \(message)")
            }
            return .renewToken(reason: named)
        case 403:
            return .configurationError("FCM refused the service account: 403 \(named) \(message)")
        case 408, 429, 500...599: return .retry(reason: named, after: retryAfter)
        case 400...499: return .rejected(reason: named)
        default: return .retry(reason: named, after: retryAfter)
        }
    }

    /// `Retry-After` as seconds (an HTTP date is not honoured: nil).
    static func retryAfter(_ header: String?) -> Duration? {
        guard let header, let seconds = Int(header.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(seconds)
    }
}
