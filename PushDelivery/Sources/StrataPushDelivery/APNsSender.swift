import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Strata

/// Sends notifications to APNs: `POST {base}/3/device/{token}` over HTTP/2, the provider token
/// reused across requests, one renewal and resend after `ExpiredProviderToken`.
final class APNsSender: NotificationSender {
    private let client: HTTPClient
    private let tokens: APNsProviderToken
    private let baseURL: String
    private let tls: TLSConfiguration?
    private let timeout: TimeAmount
    private let expiration: Duration
    private let countRetry: @Sendable () -> Void

    /// The largest error body read (APNs sends a few dozen bytes).
    static let maxBodySize = 64 * 1_024

    /// - Parameter tls: The request's TLS configuration, or nil for the client's.
    init(client: HTTPClient, configuration: APNsConfiguration, tls: TLSConfiguration?, options: PushDeliveryOptions,
         countRetry: @Sendable @escaping () -> Void) {
        self.client = client
        tokens = APNsProviderToken(configuration: configuration, clock: options.clock)
        var base = configuration.environment.baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        baseURL = base
        self.tls = tls
        timeout = TimeAmount(options.requestTimeout)
        expiration = options.expiration
        self.countRetry = countRetry
    }

    func send(_ notification: PushNotification) async -> DeliveryAnswer {
        var token: APNsProviderToken.Token
        do { token = try tokens.current() } catch { return .configurationError(Self.message(error)) }
        let pushType = APNsPushType(payload: notification.payload)
        let apnsID = APNsRequest.apnsID(applicationID: notification.applicationID, deviceToken: notification.deviceToken,
                                        notificationID: notification.id)
        let expiry = APNsRequest.expiration(created: notification.created, expiration: expiration)
        let body = ByteBuffer(string: notification.payload)
        for attempt in 0..<2 {
            var request = HTTPClientRequest(url: baseURL + APNsRequest.path(deviceToken: notification.deviceToken))
            request.method = .POST
            request.tlsConfiguration = tls
            APNsRequest.addHeaders(to: &request, authorization: token.authorization, topic: notification.applicationID,
                                   pushType: pushType, expiration: expiry, apnsID: apnsID)
            request.body = .bytes(body)
            let answer = await execute(request)
            guard case .renewToken(let reason) = answer else { return answer }
            guard attempt == 0, !Task.isCancelled else { return .retry(reason: reason, after: nil) }
            countRetry()
            do { token = try tokens.expired(token) } catch { return .configurationError(Self.message(error)) }
        }
        return .retry(reason: "ExpiredProviderToken", after: nil)
    }

    /// The message of a signing error (a ``StrataError/network(_:)`` naming APNs).
    private static func message(_ error: any Error) -> String {
        if case StrataError.network(let message) = error { return message }
        return "APNs: \(error)"
    }

    private func execute(_ request: HTTPClientRequest) async -> DeliveryAnswer {
        do {
            let response = try await client.execute(request, timeout: timeout)
            let status = Int(response.status.code)
            let body = try await response.body.collect(upTo: Self.maxBodySize)
            return DeliveryAnswer.apns(status: status, retryAfter: DeliveryAnswer.retryAfter(response.headers.first(name: "retry-after")),
                                       body: status == 200 ? Data() : Data(body.readableBytesView))
        } catch {
            return .retry(reason: "APNs connection: \(error)", after: nil)
        }
    }
}

extension TimeAmount {
    /// `duration` in nanoseconds (saturating).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = .nanoseconds(overflow ? .max : product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue)
    }
}
