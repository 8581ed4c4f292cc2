import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Strata

/// Sends notifications to FCM: `POST {endpoint}/v1/projects/{project_id}/messages:send` with an
/// OAuth 2.0 access token, one renewal and resend after a 401.
final class FCMSender: NotificationSender {
    private let client: HTTPClient
    let tokens: FCMAccessToken
    private let url: String
    private let tls: TLSConfiguration?
    private let timeout: TimeAmount
    private let countRetry: @Sendable () -> Void

    /// - Parameter tls: The requests' TLS configuration (messages and token endpoint), or nil for the client's.
    init(client: HTTPClient, configuration: FCMConfiguration, tls: TLSConfiguration?, options: PushDeliveryOptions,
         countRetry: @Sendable @escaping () -> Void) {
        self.client = client
        var base = configuration.endpoint.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        url = base + "/v1/projects/" + (configuration.projectID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? configuration.projectID)
            + "/messages:send"
        self.tls = tls
        let timeout = TimeAmount(options.requestTimeout)
        self.timeout = timeout
        self.countRetry = countRetry
        let tokenURI = configuration.tokenURI.absoluteString
        tokens = FCMAccessToken(configuration: configuration, clock: options.clock) { form in
            var request = HTTPClientRequest(url: tokenURI)
            request.method = .POST
            request.tlsConfiguration = tls
            request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
            request.headers.add(name: "accept", value: "application/json")
            request.body = .bytes(ByteBuffer(string: form))
            let response = try await client.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 1 << 20)
            return FCMAccessToken.Answer(status: Int(response.status.code),
                                         retryAfter: DeliveryAnswer.retryAfter(response.headers.first(name: "retry-after")),
                                         body: Data(body.readableBytesView))
        }
    }

    func send(_ notification: PushNotification) async -> DeliveryAnswer {
        guard let message = FCMMessage.body(deviceToken: notification.deviceToken, payload: notification.payload) else {
            return .rejected(reason: "InvalidPayload")
        }
        let body = ByteBuffer(bytes: message)
        for attempt in 0..<2 {
            let token: FCMAccessToken.Token
            do {
                token = try await tokens.current()
            } catch FCMAccessToken.Failure.configuration(let message) {
                return .configurationError(message)
            } catch FCMAccessToken.Failure.transient(let message, let retryAfter) {
                return .retry(reason: message, after: retryAfter)
            } catch {
                return .retry(reason: "FCM token endpoint: \(error)", after: nil)
            }
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.tlsConfiguration = tls
            request.headers.add(name: "authorization", value: token.authorization)
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(body)
            let answer = await execute(request)
            guard case .renewToken(let reason) = answer else { return answer }
            tokens.invalidate(token)
            guard attempt == 0, !Task.isCancelled else { return .retry(reason: reason, after: nil) }
            countRetry()
        }
        return .retry(reason: "UNAUTHENTICATED", after: nil)
    }

    private func execute(_ request: HTTPClientRequest) async -> DeliveryAnswer {
        do {
            let response = try await client.execute(request, timeout: timeout)
            let status = Int(response.status.code)
            let body = try await response.body.collect(upTo: 1 << 20)
            return DeliveryAnswer.fcm(status: status, retryAfter: DeliveryAnswer.retryAfter(response.headers.first(name: "retry-after")),
                                      body: status == 200 ? Data() : Data(body.readableBytesView))
        } catch {
            return .retry(reason: "FCM connection: \(error)", after: nil)
        }
    }
}
