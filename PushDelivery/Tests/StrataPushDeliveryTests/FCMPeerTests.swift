import Foundation
import NIOCore
import StrataPushPeers
import Testing

/// The FCM peer on its own, driven by a raw HTTPS client: the OAuth token endpoint, `messages:send`,
/// its error format, its scripts, and its kill and restart.
@Suite struct FCMPeerTests {
    func started() async throws -> (FCMPeer, FCMPeer.ServiceAccount, PeerTestClient) {
        let peer = try FCMPeer()
        try await peer.start()
        let account = try peer.makeServiceAccount(projectID: "strata-test")
        return (peer, account, try PeerTestClient(trusting: peer.authority))
    }

    func accessToken(_ client: PeerTestClient, _ peer: FCMPeer, assertion: String) async throws -> PeerTestClient.Response {
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        return try await client.send(.POST, peer.tokenURI.absoluteString,
                                     headers: [("content-type", "application/x-www-form-urlencoded")], body: Data(form.utf8))
    }

    func send(_ client: PeerTestClient, _ peer: FCMPeer, project: String = "strata-test", bearer: String, token: String,
              data: String = "hello", timeout: TimeAmount = .seconds(10)) async throws -> PeerTestClient.Response {
        let body = try JSONSerialization.data(withJSONObject: [
            "message": ["token": token, "notification": ["title": "t", "body": data]],
        ])
        return try await client.send(.POST, "\(peer.url)/v1/projects/\(project)/messages:send",
                                     headers: [("authorization", "Bearer \(bearer)"), ("content-type", "application/json")], body: body,
                                     timeout: timeout)
    }

    @Test func serviceAccountJSONHasWhatGoogleGives() async throws {
        let (peer, account, client) = try await started()
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let object = try #require(try JSONSerialization.jsonObject(with: account.json) as? [String: String])
        #expect(object["type"] == "service_account")
        #expect(object["project_id"] == "strata-test")
        #expect(object["client_email"] == account.clientEmail)
        #expect(object["private_key_id"] == account.privateKeyID)
        #expect(object["private_key"]?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
        #expect(object["token_uri"] == "https://127.0.0.1:\(peer.port)/token")
    }

    @Test func issuesAccessTokensForValidAssertionsOnly() async throws {
        let (peer, account, client) = try await started()
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        peer.accessTokenLifetime = 1234
        let good = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account))
        #expect(good.status == 200)
        #expect(good.json?["token_type"] as? String == "Bearer")
        #expect(good.json?["expires_in"] as? Int == 1234)
        #expect((good.json?["access_token"] as? String)?.isEmpty == false)

        let wrongScope = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account, scope: "https://www.googleapis.com/auth/cloud-platform.read-only"))
        #expect(wrongScope.status == 400)
        #expect(wrongScope.json?["error"] as? String == "invalid_scope")
        let wrongAudience = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account, audience: "https://127.0.0.1:1/token"))
        #expect(wrongAudience.json?["error"] as? String == "invalid_grant")
        let tooLong = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account, lifetime: 7200))
        #expect(tooLong.json?["error"] as? String == "invalid_grant")
        let expired = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account, issuedAt: Date().addingTimeInterval(-4000)))
        #expect(expired.json?["error"] as? String == "invalid_grant")

        // An assertion signed by another key for the same account.
        let stranger = try FCMPeer().makeServiceAccount(projectID: "strata-test", clientEmail: account.clientEmail)
        let forged = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: stranger))
        #expect(forged.status == 400)
        #expect(forged.json?["error_description"] as? String == "Invalid JWT Signature.")
        #expect(peer.issuedAccessTokens.count == 1)
    }

    @Test func sendsWithALiveTokenAndAnswersInGooglesErrorFormat() async throws {
        let (peer, account, client) = try await started()
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let grant = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account))
        let bearer = try #require(grant.json?["access_token"] as? String)

        let sent = try await send(client, peer, bearer: bearer, token: "reg1")
        #expect(sent.status == 200)
        #expect((sent.json?["name"] as? String)?.hasPrefix("projects/strata-test/messages/") == true)
        let message = try #require(peer.received(token: "reg1").first)
        #expect((message.messageObject?["notification"] as? [String: String])?["title"] == "t")
        #expect(message.accessToken == bearer)

        let unauthenticated = try await send(client, peer, bearer: "ya29.nope", token: "reg1")
        #expect(unauthenticated.status == 401)
        #expect((unauthenticated.json?["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED")
        let denied = try await send(client, peer, project: "someone-else", bearer: bearer, token: "reg1")
        #expect(denied.status == 403)
        #expect((denied.json?["error"] as? [String: Any])?["status"] as? String == "PERMISSION_DENIED")
        let big = try await send(client, peer, bearer: bearer, token: "reg1", data: String(repeating: "x", count: 4100))
        #expect(big.status == 400)
        #expect((big.json?["error"] as? [String: Any])?["message"] as? String == "Message is too big")

        peer.script(token: "reg1", answers: [.unregistered, .invalidToken, .quotaExceeded(retryAfter: 2), .unavailable])
        let gone = try await send(client, peer, bearer: bearer, token: "reg1")
        #expect(gone.status == 404)
        let goneError = try #require(gone.json?["error"] as? [String: Any])
        #expect(goneError["status"] as? String == "NOT_FOUND")
        let details = try #require(goneError["details"] as? [[String: Any]])
        #expect(details.first?["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
        #expect(details.first?["errorCode"] as? String == "UNREGISTERED")
        let invalid = try await send(client, peer, bearer: bearer, token: "reg1")
        #expect(invalid.status == 400)
        let invalidDetails = try #require((invalid.json?["error"] as? [String: Any])?["details"] as? [[String: Any]])
        let violations = invalidDetails.compactMap { $0["fieldViolations"] as? [[String: String]] }.flatMap { $0 }
        #expect(violations.map { $0["field"] } == ["message.token"])
        let quota = try await send(client, peer, bearer: bearer, token: "reg1")
        #expect(quota.status == 429)
        #expect(quota.headers.first(name: "retry-after") == "2")
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 503)
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 200)

        peer.expireAccessTokens()
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 401)
        #expect(peer.received(token: "reg1").count == 2)

        // Without records, only the counts move.
        peer.keepsRecords = false
        let grant2 = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account))
        let bearer2 = try #require(grant2.json?["access_token"] as? String)
        #expect(try await send(client, peer, bearer: bearer2, token: "reg1").status == 200)
        #expect(peer.received(token: "reg1").count == 2)
        #expect(peer.receivedCount == 3)
        #expect(peer.answeredCount == peer.exchanges.count + 1)
    }

    @Test func speaksHTTP1WhenTheClientAsksForIt() async throws {
        let (peer, account, h2Client) = try await started()
        try await h2Client.shutdown()
        let client = try PeerTestClient(trusting: peer.authority, http1Only: true)
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let grant = try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account))
        let bearer = try #require(grant.json?["access_token"] as? String)
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 200)
        peer.script(token: "reg1", answers: [.unregistered])
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 404)
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 200, "the connection goes on")
        #expect(peer.received(token: "reg1").count == 2)
    }

    @Test func aKilledPeerRestartsOnTheSamePort() async throws {
        let (peer, account, client) = try await started()
        defer { Task { try? await client.shutdown(); await peer.stop() } }
        let port = peer.port
        let bearer = try #require(try await accessToken(client, peer, assertion: try TestJWT.assertion(account: account)).json?["access_token"] as? String)
        await peer.stop()
        await #expect(throws: (any Error).self) {
            _ = try await send(client, peer, bearer: bearer, token: "reg1", timeout: .seconds(2))
        }
        try await peer.start()
        #expect(peer.port == port)
        #expect(try await send(client, peer, bearer: bearer, token: "reg1").status == 200)
    }
}
