import Crypto
import Foundation
import Strata
import StrataPushDelivery
import StrataPushPeers
import Synchronization
import Testing

/// The delivery loop against the loopback peers, one rule of API.md's "Answers" at a time: what
/// reaches the peers (headers, payloads, tokens), what the loop does with each answer, and what
/// stays in the outbox.
@Suite struct PushDeliveryEndToEndTests {
    @Test func successIsAcknowledgedWithAppleHeaders() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "tok1")
        try await h.device(.apple, "quiet", format: PushFormat.apple(contentAvailable: true))
        let before = Date()
        try await h.append(3)
        let delivery = PushDelivery(push: h.push, apns: try h.apns(), options: DeliveryHarness.options())
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.waitForEmptyOutbox()

        #expect(h.apnsPeer.alerts(token: "tok1") == ["v 1", "v 2", "v 3"], "in order, once each")
        let requests = h.apnsPeer.received(token: "tok1")
        for request in requests {
            #expect(request.headers["apns-topic"] == DeliveryHarness.applicationID)
            #expect(request.headers["apns-push-type"] == "alert")
            #expect(request.headers["apns-priority"] == "10")
            #expect(request.hadAPNsID && UUID(uuidString: request.apnsID) != nil)
            let expiration = TimeInterval(request.headers["apns-expiration"] ?? "") ?? 0
            #expect(abs(expiration - before.addingTimeInterval(86_400).timeIntervalSince1970) < 120,
                    "apns-expiration = created + the default expiration (a day)")
            #expect(request.keyID == DeliveryHarness.keyID && request.teamID == DeliveryHarness.teamID)
        }
        #expect(Set(requests.map(\.apnsID)).count == 3)
        let background = h.apnsPeer.received(token: "quiet")
        #expect(background.count == 3)
        #expect(background.allSatisfy { $0.headers["apns-push-type"] == "background" && $0.headers["apns-priority"] == "5" })
        #expect(delivery.statistics.delivered == 6)
        #expect(delivery.statistics.inFlight == 0)
        #expect(delivery.statistics.acknowledgementCommits >= 1)
        #expect(h.apnsPeer.connectionCount <= 2, "one HTTP/2 connection (two while the first is set up) carries every request")
        #expect(h.apnsPeer.providerTokens.count == 1, "one provider token, reused")
    }

    @Test func successIsAcknowledgedForGoogle() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.google, "reg1")
        try await h.append(3)
        let delivery = PushDelivery(push: h.push, fcm: try h.fcm(), options: DeliveryHarness.options())
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.waitForEmptyOutbox()
        #expect(h.fcmPeer.bodies(token: "reg1") == ["v 1", "v 2", "v 3"])
        #expect(h.fcmPeer.received.allSatisfy { $0.projectID == "strata-test" })
        #expect(h.fcmPeer.issuedAccessTokens.count == 1, "the access token is cached")
        #expect(delivery.statistics.delivered == 3)
    }

    @Test func refusedTokensSuspendTheirDeviceAndAreAcknowledged() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        for token in ["bad", "gone", "ok"] { try await h.device(.apple, token) }
        for token in ["g-gone", "g-invalid", "g-ok"] { try await h.device(.google, token) }
        h.apnsPeer.script(token: "bad", answers: [.badDeviceToken])
        h.apnsPeer.script(token: "gone", answers: [.unregistered])
        h.fcmPeer.script(token: "g-gone", answers: [.unregistered])
        h.fcmPeer.script(token: "g-invalid", answers: [.invalidToken])
        try await h.append()
        let delivery = PushDelivery(push: h.push, apns: try h.apns(), fcm: try h.fcm(), options: DeliveryHarness.options())
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.waitForEmptyOutbox()
        #expect(delivery.statistics.devicesSuspended == 4)
        #expect(delivery.statistics.delivered == 2)

        // Later updates make no notification for the suspended devices.
        try await h.append()
        try await h.waitForEmptyOutbox()
        #expect(h.apnsPeer.alerts(token: "ok") == ["v 1", "v 2"])
        #expect(h.fcmPeer.bodies(token: "g-ok") == ["v 1", "v 2"])
        for token in ["bad", "gone"] { #expect(h.apnsPeer.exchanges(token: token).count == 1, "\(token)") }
        for token in ["g-gone", "g-invalid"] { #expect(h.fcmPeer.exchanges(token: token).count == 1, "\(token)") }
    }

    @Test func transientFailuresAreRetriedWithoutHoldingBackOtherDevices() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "flaky")
        try await h.device(.google, "g-flaky")
        for i in 1...4 {
            try await h.device(.apple, "ok\(i)")
            try await h.device(.google, "g-ok\(i)")
        }
        h.apnsPeer.script(token: "flaky", answers: [
            .tooManyRequests(retryAfter: 1), .serviceUnavailable, .internalServerError, .resetStream, .noAnswer,
        ])
        h.fcmPeer.script(token: "g-flaky", answers: [
            .quotaExceeded(retryAfter: 1), .unavailable, .internalError, .resetStream, .noAnswer,
        ])
        try await h.append(5)
        let delivery = PushDelivery(push: h.push, apns: try h.apns(), fcm: try h.fcm(),
                                    options: DeliveryHarness.options(retryMaxDelay: .seconds(2), requestTimeout: .seconds(1)))
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.waitForEmptyOutbox()

        // At least once: under a loaded machine a slow answer can pass the request timeout and be
        // sent again, so each device's notifications are checked as a set, in the order first seen.
        let expected = ["v 1", "v 2", "v 3", "v 4", "v 5"]
        func firstSeen(_ texts: [String]) -> [String] { texts.reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }
        #expect(firstSeen(h.apnsPeer.alerts(token: "flaky")) == expected)
        #expect(firstSeen(h.fcmPeer.bodies(token: "g-flaky")) == expected)
        #expect(Array(h.apnsPeer.exchanges(token: "flaky").map(\.status).prefix(6)) == [429, 503, 500, 0, 0, 200])
        #expect(Array(h.fcmPeer.exchanges(token: "g-flaky").map(\.status).prefix(6)) == [429, 503, 500, 0, 0, 200])
        #expect(delivery.statistics.retried >= 10)
        #expect(delivery.statistics.delivered == 50)

        // The same apns-id on every attempt of a notification.
        let attempts = h.apnsPeer.exchanges(token: "flaky")
        #expect(Set(attempts.prefix(6).map(\.apnsID)).count == 1)

        // The other devices got everything while the flaky ones waited out Retry-After (1 s) and
        // their backoff.
        let firstFlakySuccess = try #require(h.apnsPeer.received(token: "flaky").first?.receivedAt)
        for i in 1...4 {
            let received = h.apnsPeer.received(token: "ok\(i)")
            #expect(firstSeen(h.apnsPeer.alerts(token: "ok\(i)")) == expected)
            let lastNew = try #require(received.first { $0.payloadText.contains("v 5") }?.receivedAt)
            #expect(lastNew < firstFlakySuccess, "ok\(i) was not held back by flaky")
            #expect(firstSeen(h.fcmPeer.bodies(token: "g-ok\(i)")) == expected)
        }
        let firstOK = try #require(h.apnsPeer.received(token: "ok1").first?.receivedAt)
        #expect(firstFlakySuccess.timeIntervalSince(firstOK) >= 0.9, "Retry-After: 1 is honoured")
    }

    @Test func expiredProviderTokensAndAccessTokensAreRenewed() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "tok1")
        try await h.device(.google, "reg1")
        let delivery = PushDelivery(push: h.push, apns: try h.apns(), fcm: try h.fcm(), options: DeliveryHarness.options())
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.append()
        try await h.waitForEmptyOutbox()

        h.apnsPeer.script(token: "tok1", answers: [.expiredProviderToken])
        h.fcmPeer.expireAccessTokens()
        try await h.append()
        try await h.waitForEmptyOutbox()

        #expect(h.apnsPeer.alerts(token: "tok1") == ["v 1", "v 2"])
        let tokens = h.apnsPeer.providerTokens
        #expect(tokens.count == 2)
        if tokens.count == 2 {
            #expect(tokens[1].issuedAt > tokens[0].issuedAt, "a renewed provider token has a later iat")
            #expect(h.apnsPeer.received(token: "tok1").last?.issuedAt == tokens[1].issuedAt)
        }
        #expect(h.apnsPeer.exchanges(token: "tok1").map(\.status) == [200, 403, 200])

        #expect(h.fcmPeer.bodies(token: "reg1") == ["v 1", "v 2"])
        let issued = h.fcmPeer.issuedAccessTokens
        #expect(issued.count == 2)
        #expect(h.fcmPeer.received(token: "reg1").last?.accessToken == issued.last?.token)
        #expect(h.fcmPeer.exchanges(token: "reg1").map(\.status) == [200, 401, 200], "one 401, then the renewed token")
    }

    @Test func theProviderTokenIsRenewedBeforeItIsAnHourOldWithoutTooManyUpdates() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "tok1")
        // The delivery's clock and the peer's move together.
        let offset = Mutex<TimeInterval>(0)
        let delivery = PushDelivery(push: h.push, apns: try h.apns(),
                                    options: DeliveryHarness.options(clock: { Date().addingTimeInterval(offset.withLock { $0 }) }))
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.append()
        try await h.waitForEmptyOutbox()
        for minutes in [10, 51] {
            offset.withLock { $0 = TimeInterval(minutes * 60) }
            h.apnsPeer.clockOffset = .seconds(minutes * 60)
            try await h.append()
            try await h.waitForEmptyOutbox()
        }
        #expect(h.apnsPeer.alerts(token: "tok1") == ["v 1", "v 2", "v 3"])
        #expect(h.apnsPeer.exchanges(token: "tok1").map(\.status) == [200, 200, 200], "no 403, no 429")
        let tokens = h.apnsPeer.providerTokens
        #expect(tokens.count == 2, "reused at 10 minutes, renewed at 51")
        if tokens.count == 2 { #expect(tokens[1].issuedAt.timeIntervalSince(tokens[0].issuedAt) >= 50 * 60) }
    }

    @Test func theFCMAccessTokenIsRenewedBeforeItExpires() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.google, "reg1")
        let offset = Mutex<TimeInterval>(0)
        let delivery = PushDelivery(push: h.push, fcm: try h.fcm(),
                                    options: DeliveryHarness.options(clock: { Date().addingTimeInterval(offset.withLock { $0 }) }))
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.append()
        try await h.waitForEmptyOutbox()
        // An hour later by both clocks, the first access token (3600 s) is dead.
        offset.withLock { $0 = 3_600 }
        h.fcmPeer.clockOffset = .seconds(3_600)
        try await h.append()
        try await h.waitForEmptyOutbox()
        #expect(h.fcmPeer.bodies(token: "reg1") == ["v 1", "v 2"])
        #expect(h.fcmPeer.exchanges(token: "reg1").map(\.status) == [200, 200], "renewed before use, no 401")
        #expect(h.fcmPeer.issuedAccessTokens.count == 2)
    }

    @Test func anAPNsProviderTokenTheServiceRefusesEndsRun() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "tok1")
        try await h.append()
        // A key the peer does not know: every provider token is InvalidProviderToken.
        let delivery = PushDelivery(push: h.push, apns: try h.apns(key: P256.Signing.PrivateKey()), options: DeliveryHarness.options())
        do {
            try await delivery.run()
            Issue.record("run() returned")
        } catch {
            #expect(isNetworkError(error), "\(error)")
        }
        #expect(try h.pending().count == 1, "the notification stays")
        #expect(h.apnsPeer.exchanges.allSatisfy { $0.reason == "InvalidProviderToken" })

        // A scripted InvalidProviderToken with the right key ends it too.
        h.apnsPeer.script(token: "tok1", answers: [.invalidProviderToken])
        let second = PushDelivery(push: h.push, apns: try h.apns(), options: DeliveryHarness.options())
        do {
            try await second.run()
            Issue.record("run() returned")
        } catch {
            #expect(isNetworkError(error), "\(error)")
        }
        #expect(try h.pending().count == 1)
    }

    @Test func aKeyThatDoesNotParseIsANetworkError() {
        do {
            _ = try APNsConfiguration(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                                      keyID: DeliveryHarness.keyID, teamID: DeliveryHarness.teamID,
                                      environment: .custom(URL(string: "https://127.0.0.1:1")!))
            Issue.record("a garbage key was accepted")
        } catch {
            #expect(isNetworkError(error), "\(error)")
        }
    }

    @Test func fcmPermissionDeniedAndARefusedAssertionEndRun() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.google, "reg1")
        try await h.append()

        // The token is the account's, the project another: 403 PERMISSION_DENIED.
        var object = try #require(try JSONSerialization.jsonObject(with: h.serviceAccount.json) as? [String: String])
        object["project_id"] = "someone-else"
        let otherProject = try JSONSerialization.data(withJSONObject: object)
        let denied = PushDelivery(push: h.push, fcm: try h.fcm(serviceAccountJSON: otherProject), options: DeliveryHarness.options())
        do {
            try await denied.run()
            Issue.record("run() returned")
        } catch {
            #expect(isNetworkError(error), "\(error)")
        }
        #expect(h.fcmPeer.exchanges(token: "reg1").map(\.status) == [403])

        // An account the token endpoint does not know.
        let stranger = try FCMPeer(authority: h.authority)
        try await stranger.start()
        let unknown = try stranger.makeServiceAccount(projectID: "strata-test", clientEmail: "nobody@strata-test.iam.gserviceaccount.com")
        await stranger.stop()
        var unknownObject = try #require(try JSONSerialization.jsonObject(with: unknown.json) as? [String: String])
        unknownObject["token_uri"] = h.fcmPeer.tokenURI.absoluteString
        let refused = PushDelivery(push: h.push, fcm: try h.fcm(serviceAccountJSON: try JSONSerialization.data(withJSONObject: unknownObject)),
                                   options: DeliveryHarness.options())
        do {
            try await refused.run()
            Issue.record("run() returned")
        } catch {
            #expect(isNetworkError(error), "\(error)")
        }
        #expect(try h.pending().count == 1, "the notification stays")
    }

    @Test func payloadsRefusedForGoodAreAcknowledgedAndCounted() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "tok1")
        try await h.device(.google, "reg1")
        try await h.append(text: String(repeating: "x", count: 5000))   // too big for both services
        try await h.append(text: "small")
        let delivery = PushDelivery(push: h.push, apns: try h.apns(), fcm: try h.fcm(), options: DeliveryHarness.options())
        let task = h.run(delivery)
        defer { task.cancel() }
        try await h.waitForEmptyOutbox()
        #expect(h.apnsPeer.alerts(token: "tok1") == ["v small"])
        #expect(h.fcmPeer.bodies(token: "reg1") == ["v small"])
        #expect(h.apnsPeer.exchanges(token: "tok1").map(\.reason) == ["PayloadTooLarge", nil])
        let rejected = delivery.statistics.rejected
        #expect(rejected["PayloadTooLarge"] == 1, "\(rejected)")
        #expect(rejected.values.reduce(0, +) == 2, "\(rejected)")
        #expect(delivery.statistics.delivered == 2)
    }

    @Test func aPlatformWithoutConfigurationStaysInTheOutbox() async throws {
        let h = try await DeliveryHarness()
        defer { Task { await h.tearDown() } }
        try await h.device(.apple, "tok1")
        try await h.device(.google, "reg1")
        try await h.append(2)
        let delivery = PushDelivery(push: h.push, apns: try h.apns(), options: DeliveryHarness.options())
        let task = h.run(delivery)
        defer { task.cancel() }
        try await waitUntil { h.apnsPeer.receivedCount == 2 && delivery.statistics.unconfigured >= 2 }
        try await waitUntil { try h.pending().count == 2 }
        #expect(try h.pending().allSatisfy { $0.platform == .google })
        #expect(h.fcmPeer.exchanges.isEmpty)
        #expect(delivery.statistics.delivered == 2)
    }
}
