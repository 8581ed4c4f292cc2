import Crypto
import Foundation
import StrataPushPeers
import Testing

/// The APNs peer on its own, driven by a raw HTTP/2 client: what it checks, what it answers, what
/// it records, and its kill and restart.
@Suite struct APNsPeerTests {
    let key = P256.Signing.PrivateKey()
    let keyID = "KEY1234567"
    let teamID = "TEAM123456"

    func startedPeer() async throws -> APNsPeer {
        let peer = try APNsPeer()
        peer.register(publicKey: key.publicKey, keyID: keyID, teamID: teamID)
        try await peer.start()
        return peer
    }

    func headers(jwt: String, topic: String? = "com.example.app", extra: [(String, String)] = []) -> [(String, String)] {
        var headers = [("authorization", "bearer \(jwt)")]
        if let topic { headers.append(("apns-topic", topic)) }
        return headers + extra
    }

    let payload = Data(#"{"aps":{"alert":"hello"}}"#.utf8)

    @Test func acceptsAValidRequestEchoesItsIDAndRecordsIt() async throws {
        let peer = try await startedPeer()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let jwt = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID)
        let id = UUID().uuidString
        let response = try await client.send(.POST, "\(peer.url)/3/device/tok1", headers: headers(jwt: jwt, extra: [
            ("apns-push-type", "alert"), ("apns-priority", "10"), ("apns-expiration", "0"), ("apns-id", id),
        ]), body: payload)
        #expect(response.status == 200)
        #expect(response.headers.first(name: "apns-id") == id)
        let received = peer.received(token: "tok1")
        #expect(received.count == 1)
        #expect(received.first?.apnsID == id)
        #expect(received.first?.headers["apns-topic"] == "com.example.app")
        #expect(received.first?.headers["apns-push-type"] == "alert")
        #expect(received.first?.keyID == keyID)
        #expect(received.first?.teamID == teamID)
        #expect(received.first?.payload == payload)
        #expect(received.first?.connection == 1)
        #expect(peer.providerTokens.count == 1)

        // Without an apns-id, the peer makes one.
        let second = try await client.send(.POST, "\(peer.url)/3/device/tok1", headers: headers(jwt: jwt), body: payload)
        #expect(second.status == 200)
        #expect(UUID(uuidString: second.headers.first(name: "apns-id") ?? "") != nil)
    }

    @Test func refusesWhatAppleRefusesWithAppleReasons() async throws {
        let peer = try await startedPeer()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let jwt = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID)
        let url = "\(peer.url)/3/device/tok1"

        func expectRefusal(_ status: Int, _ reason: String, _ response: PeerTestClient.Response,
                           sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(response.status == status, sourceLocation: sourceLocation)
            #expect(response.reason == reason, sourceLocation: sourceLocation)
        }
        expectRefusal(405, "MethodNotAllowed", try await client.send(.PUT, url, headers: headers(jwt: jwt), body: payload))
        expectRefusal(404, "BadPath", try await client.send(.POST, "\(peer.url)/2/device/tok1", headers: headers(jwt: jwt), body: payload))
        expectRefusal(400, "MissingDeviceToken", try await client.send(.POST, "\(peer.url)/3/device/", headers: headers(jwt: jwt), body: payload))
        expectRefusal(403, "MissingProviderToken", try await client.send(.POST, url, headers: [("apns-topic", "t")], body: payload))

        let otherKey = P256.Signing.PrivateKey()
        let forged = try TestJWT.providerToken(key: otherKey, keyID: keyID, teamID: teamID)
        expectRefusal(403, "InvalidProviderToken", try await client.send(.POST, url, headers: headers(jwt: forged), body: payload))
        let wrongTeam = try TestJWT.providerToken(key: key, keyID: keyID, teamID: "OTHERTEAM1")
        expectRefusal(403, "InvalidProviderToken", try await client.send(.POST, url, headers: headers(jwt: wrongTeam), body: payload))
        expectRefusal(403, "InvalidProviderToken", try await client.send(.POST, url, headers: headers(jwt: "not.a.jwt"), body: payload))

        expectRefusal(400, "MissingTopic", try await client.send(.POST, url, headers: headers(jwt: jwt, topic: nil), body: payload))
        expectRefusal(400, "InvalidPushType", try await client.send(.POST, url, headers: headers(jwt: jwt, extra: [("apns-push-type", "shout")]), body: payload))
        expectRefusal(400, "BadPriority", try await client.send(.POST, url, headers: headers(jwt: jwt, extra: [("apns-priority", "7")]), body: payload))
        expectRefusal(400, "BadExpirationDate", try await client.send(.POST, url, headers: headers(jwt: jwt, extra: [("apns-expiration", "soon")]), body: payload))
        expectRefusal(400, "BadMessageId", try await client.send(.POST, url, headers: headers(jwt: jwt, extra: [("apns-id", "42")]), body: payload))
        expectRefusal(400, "PayloadEmpty", try await client.send(.POST, url, headers: headers(jwt: jwt), body: Data()))
        expectRefusal(400, "PayloadEmpty", try await client.send(.POST, url, headers: headers(jwt: jwt), body: Data("[1]".utf8)))
        let big = Data(("{\"aps\":{\"alert\":\"" + String(repeating: "x", count: 4100) + "\"}}").utf8)
        expectRefusal(413, "PayloadTooLarge", try await client.send(.POST, url, headers: headers(jwt: jwt), body: big))
        #expect(peer.receivedCount == 0)

        // An hour-old token, by the peer's clock.
        peer.clockOffset = .seconds(3601)
        expectRefusal(403, "ExpiredProviderToken", try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload))
    }

    @Test func aNewProviderTokenOnAConnectionTooSoonIsRefused() async throws {
        let peer = try await startedPeer()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let url = "\(peer.url)/3/device/tok1"
        let first = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID, issuedAt: Date().addingTimeInterval(-60))
        let second = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID)
        #expect(try await client.send(.POST, url, headers: headers(jwt: first), body: payload).status == 200)
        let tooSoon = try await client.send(.POST, url, headers: headers(jwt: second), body: payload)
        #expect(tooSoon.status == 429)
        #expect(tooSoon.reason == "TooManyProviderTokenUpdates")

        // Once the first token is answered ExpiredProviderToken, a new one is welcome.
        peer.script(token: "tok1", answers: [.expiredProviderToken])
        #expect(try await client.send(.POST, url, headers: headers(jwt: first), body: payload).reason == "ExpiredProviderToken")
        #expect(try await client.send(.POST, url, headers: headers(jwt: second), body: payload).status == 200)
        #expect(peer.tokenUpdates == 1)
        #expect(peer.providerTokens.map(\.issuedAt).count == 2)
        #expect(peer.connectionCount == 1)
    }

    @Test func scriptedAnswersComeInOrderPerToken() async throws {
        let peer = try await startedPeer()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let jwt = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID)
        peer.script(token: "tok1", answers: [
            .unregistered, .tooManyRequests(retryAfter: 3), .delay(.milliseconds(200), then: .serviceUnavailable), .resetStream,
        ])
        let url = "\(peer.url)/3/device/tok1"
        let gone = try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload)
        #expect(gone.status == 410)
        #expect(gone.reason == "Unregistered")
        #expect(gone.json?["timestamp"] is NSNumber)
        // Another token is not held back by tok1's script.
        #expect(try await client.send(.POST, "\(peer.url)/3/device/tok2", headers: headers(jwt: jwt), body: payload).status == 200)
        let busy = try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload)
        #expect(busy.status == 429)
        #expect(busy.headers.first(name: "retry-after") == "3")
        let started = ContinuousClock.now
        let unavailable = try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload)
        #expect(unavailable.status == 503)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        await #expect(throws: (any Error).self) {
            _ = try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload)
        }
        #expect(try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload).status == 200)
        #expect(peer.exchanges(token: "tok1").map(\.status) == [410, 429, 503, 0, 200])
        #expect(peer.received(token: "tok1").count == 1)

        peer.script(token: "tok3", answers: [.noAnswer])
        await #expect(throws: (any Error).self) {
            _ = try await client.send(.POST, "\(peer.url)/3/device/tok3", headers: headers(jwt: jwt), body: payload, timeout: .milliseconds(300))
        }
    }

    @Test func aKilledPeerRestartsOnTheSamePort() async throws {
        let peer = try await startedPeer()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let jwt = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID)
        let url = "\(peer.url)/3/device/tok1"
        let port = peer.port
        #expect(try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload).status == 200)
        peer.script(token: "slow", answers: [.noAnswer])
        let slowHeaders = headers(jwt: jwt)
        let slowURL = "\(peer.url)/3/device/slow"
        let payload = self.payload
        let pending = Task { try await client.send(.POST, slowURL, headers: slowHeaders, body: payload) }
        try await waitUntil { peer.exchanges(token: "slow").count == 1 }
        await peer.stop()
        await #expect(throws: (any Error).self) { _ = try await pending.value }
        await #expect(throws: (any Error).self) {
            _ = try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload, timeout: .seconds(2))
        }
        try await peer.start()
        #expect(peer.port == port)
        #expect(try await client.send(.POST, url, headers: headers(jwt: jwt), body: payload).status == 200)
        #expect(peer.received(token: "tok1").map(\.connection) == [1, 2])
    }
}

/// Polls `condition` until it holds, failing after `timeout`.
func waitUntil(
    timeout: Duration = .seconds(20), _ what: String = "condition", every interval: Duration = .milliseconds(10),
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: interval)
    }
}

/// Many concurrent requests over one HTTP/2 connection: each is verified (one JWT check, cached),
/// answered and recorded. No rate is asserted: in a debug build the in-process AsyncHTTPClient's
/// HTTP/2 stack takes most of the CPU (perf: ~60% client, stream-map scans and HPACK encoding);
/// the rate is printed.
@Suite struct APNsPeerThroughputTests {
    @Test func manyConcurrentRequestsOverOneConnection() async throws {
        let key = P256.Signing.PrivateKey()
        let peer = try APNsPeer()
        peer.register(publicKey: key.publicKey, keyID: "KEY1234567", teamID: "TEAM123456")
        try await peer.start()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let jwt = try TestJWT.providerToken(key: key, keyID: "KEY1234567", teamID: "TEAM123456")
        let url = "\(peer.url)/3/device/"
        let headers = [("authorization", "bearer \(jwt)"), ("apns-topic", "com.example.app")]
        let payload = Data(#"{"aps":{"alert":"hello"}}"#.utf8)
        let count = 400
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    var ok = 0
                    for i in stride(from: worker, to: count, by: 10) {
                        ok += try await client.send(.POST, url + "tok\(i % 50)", headers: headers, body: payload).status == 200 ? 1 : 0
                    }
                    return ok
                }
            }
            var ok = 0
            for try await n in group { ok += n }
            #expect(ok == count)
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("APNs peer: \(count) requests in \(elapsed), \(Int(Double(count) / seconds))/s")
        #expect(peer.receivedCount == count)
        #expect(peer.connectionCount <= 2)
    }
}

extension APNsPeerTests {
    @Test func withoutRecordsOnlyTheCountsMove() async throws {
        let peer = try await startedPeer()
        let client = try PeerTestClient(trusting: peer.authority)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        peer.keepsRecords = false
        let jwt = try TestJWT.providerToken(key: key, keyID: keyID, teamID: teamID)
        peer.script(token: "tok1", answers: [.serviceUnavailable])
        for _ in 0..<3 {
            _ = try await client.send(.POST, "\(peer.url)/3/device/tok1", headers: headers(jwt: jwt), body: payload)
        }
        #expect(peer.receivedCount == 2)
        #expect(peer.answeredCount == 3)
        #expect(peer.received.isEmpty && peer.exchanges.isEmpty)
    }
}
