import Foundation
import Testing
@testable import StrataPushDelivery

@Suite struct DeliveryAnswerTests {
    static func apns(_ status: Int, _ reason: String?, retryAfter: Duration? = nil) -> DeliveryAnswer {
        DeliveryAnswer.apns(status: status, retryAfter: retryAfter, body: Data((reason.map { #"{"reason":"\#($0)"}"# } ?? "").utf8))
    }

    static func fcmError(_ code: Int, _ status: String, errorCode: String? = nil, message: String = "", field: String? = nil) -> Data {
        var details: [[String: Any]] = []
        if let errorCode { details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode]) }
        if let field { details.append(["@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [["field": field, "description": "bad"]]]) }
        return try! JSONSerialization.data(withJSONObject: ["error": ["code": code, "message": message, "status": status, "details": details]])
    }

    @Test("APNs: the table")
    func apnsTable() {
        #expect(Self.apns(200, nil) == .delivered)
        #expect(Self.apns(400, "BadDeviceToken") == .suspendDevice(reason: "BadDeviceToken"))
        #expect(Self.apns(400, "DeviceTokenNotForTopic") == .suspendDevice(reason: "DeviceTokenNotForTopic"))
        #expect(Self.apns(410, "Unregistered") == .suspendDevice(reason: "Unregistered"))
        #expect(Self.apns(410, "ExpiredToken") == .suspendDevice(reason: "ExpiredToken"))
        #expect(Self.apns(410, nil) == .suspendDevice(reason: "Unregistered"))
        for reason in ["BadPayload", "PayloadEmpty", "BadExpirationDate", "BadPriority", "MissingTopic", "TopicDisallowed", "BadTopic", "BadCollapseId"] {
            #expect(Self.apns(400, reason) == .rejected(reason: reason))
        }
        #expect(Self.apns(413, "PayloadTooLarge") == .rejected(reason: "PayloadTooLarge"))
        #expect(Self.apns(404, "BadPath") == .rejected(reason: "BadPath"))
        #expect(Self.apns(400, "IdleTimeout") == .retry(reason: "IdleTimeout", after: nil))
        #expect(Self.apns(403, "ExpiredProviderToken") == .renewToken(reason: "ExpiredProviderToken"))
        for reason in ["InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment", "Forbidden"] {
            guard case .configurationError(let message) = Self.apns(403, reason) else { Issue.record("403 \(reason)"); continue }
            #expect(message.contains("APNs") && message.contains(reason))
        }
        #expect(Self.apns(429, "TooManyRequests", retryAfter: .seconds(3)) == .retry(reason: "TooManyRequests", after: .seconds(3)))
        #expect(Self.apns(429, "TooManyProviderTokenUpdates") == .retry(reason: "TooManyProviderTokenUpdates", after: nil))
        #expect(Self.apns(500, "InternalServerError") == .retry(reason: "InternalServerError", after: nil))
        #expect(Self.apns(503, "ServiceUnavailable") == .retry(reason: "ServiceUnavailable", after: nil))
        #expect(Self.apns(502, nil) == .retry(reason: "HTTP 502", after: nil))
    }

    @Test("FCM: the table")
    func fcmTable() {
        func fcm(_ status: Int, _ body: Data, retryAfter: Duration? = nil) -> DeliveryAnswer {
            DeliveryAnswer.fcm(status: status, retryAfter: retryAfter, body: body)
        }
        #expect(fcm(200, Data(#"{"name":"projects/p/messages/1"}"#.utf8)) == .delivered)
        #expect(fcm(404, Self.fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED")) == .suspendDevice(reason: "UNREGISTERED"))
        #expect(fcm(404, Self.fcmError(404, "NOT_FOUND")) == .suspendDevice(reason: "UNREGISTERED"))
        if case .configurationError(let m) = fcm(404, Data("<html>".utf8)) { #expect(m.contains("FCM")) } else { Issue.record("404 without a body") }
        #expect(fcm(400, Self.fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.token"))
            == .suspendDevice(reason: "INVALID_ARGUMENT"))
        #expect(fcm(400, Self.fcmError(400, "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token"))
            == .suspendDevice(reason: "INVALID_ARGUMENT"))
        #expect(fcm(400, Self.fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", message: "Invalid JSON payload received.",
                                      field: "message.data")) == .rejected(reason: "INVALID_ARGUMENT"))
        #expect(fcm(401, Self.fcmError(401, "UNAUTHENTICATED")) == .renewToken(reason: "UNAUTHENTICATED"))
        if case .configurationError = fcm(401, Self.fcmError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR")) {} else { Issue.record("THIRD_PARTY_AUTH_ERROR") }
        if case .configurationError(let m) = fcm(403, Self.fcmError(403, "PERMISSION_DENIED")) {
            #expect(m.contains("FCM") && m.contains("PERMISSION_DENIED"))
        } else { Issue.record("403") }
        if case .configurationError = fcm(403, Self.fcmError(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH")) {} else {
            Issue.record("FCM 403 SENDER_ID_MISMATCH is a configuration error (API.md: every FCM 403)")
        }
        #expect(fcm(429, Self.fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"), retryAfter: .seconds(9))
            == .retry(reason: "QUOTA_EXCEEDED", after: .seconds(9)))
        #expect(fcm(503, Self.fcmError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE")) == .retry(reason: "UNAVAILABLE", after: nil))
        #expect(fcm(500, Data()) == .retry(reason: "HTTP 500", after: nil))
    }

    @Test("Retry-After in seconds; an HTTP date or garbage is not honoured")
    func retryAfter() {
        #expect(DeliveryAnswer.retryAfter("120") == .seconds(120))
        #expect(DeliveryAnswer.retryAfter(" 0 ") == .zero)
        #expect(DeliveryAnswer.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
        #expect(DeliveryAnswer.retryAfter("-1") == nil && DeliveryAnswer.retryAfter(nil) == nil)
    }

    @Test("only delivered, suspended and rejected leave the outbox")
    func definitive() {
        #expect(DeliveryAnswer.delivered.isDefinitive && DeliveryAnswer.rejected(reason: "x").isDefinitive
            && DeliveryAnswer.suspendDevice(reason: "x").isDefinitive)
        #expect(!DeliveryAnswer.retry(reason: "x", after: nil).isDefinitive && !DeliveryAnswer.renewToken(reason: "x").isDefinitive
            && !DeliveryAnswer.configurationError("x").isDefinitive)
    }
}
