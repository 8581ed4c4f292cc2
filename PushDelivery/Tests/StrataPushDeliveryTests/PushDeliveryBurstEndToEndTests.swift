import Foundation
import Strata
import StrataPushDelivery
import StrataPushPeers
import Testing

/// The heavy end-to-end tests (a burst, peers killed mid-burst, `kill -9` of the delivering
/// process), one at a time: each is CPU-bound (a debug build's HTTP/2 stack on both ends, in one
/// process), and run side by side on a small machine they would only slow each other down.
@Suite(.serialized) struct HeavyDeliveryTests {}

extension HeavyDeliveryTests {
    /// Many notifications at once: a burst over few connections, and a burst through peers that are
    /// killed and restarted in its middle.
    @Suite struct PushDeliveryBurstEndToEndTests {
        @Test func aBurstOf10000NotificationsTo100DevicesArrivesWhole() async throws {
            let h = try await DeliveryHarness()
            defer { Task { await h.tearDown() } }
            let tokens = (0..<100).map { "burst\($0)" }
            for token in tokens { try await h.device(.apple, token) }
            try await h.append(100)
            #expect(try h.pending().count == 10_000)

            let started = ContinuousClock.now
            let delivery = PushDelivery(push: h.push, apns: try h.apns(), options: DeliveryHarness.options(maxInFlight: 16))
            let task = h.run(delivery)
            defer { task.cancel() }
            try await h.waitForEmptyOutbox(timeout: .seconds(80))
            let elapsed = ContinuousClock.now - started

            let expected = (1...100).map { "v \($0)" }
            for token in tokens { #expect(h.apnsPeer.alerts(token: token) == expected, "\(token): all, in order, once") }
            #expect(h.apnsPeer.receivedCount == 10_000)
            #expect(Set(h.apnsPeer.received.map(\.apnsID)).count == 10_000)
            #expect(h.apnsPeer.connectionCount <= 2, "few connections: \(h.apnsPeer.connectionCount)")
            #expect(delivery.statistics.delivered == 10_000)
            #expect(delivery.statistics.acknowledgementCommits < 10_000, "acknowledgements are batched")
            print("burst: 10,000 notifications in \(elapsed), \(delivery.statistics.acknowledgementCommits) commits")
        }

        @Test func peersKilledAndRestartedMidBurstLoseNothing() async throws {
            let h = try await DeliveryHarness()
            defer { Task { await h.tearDown() } }
            let appleTokens = (0..<16).map { "a\($0)" }
            let googleTokens = (0..<16).map { "g\($0)" }
            for token in appleTokens {
                try await h.device(.apple, token)
                // Slow answers, so that the burst lasts over half a second and the kill lands in it.
                h.apnsPeer.script(token: token, answers: Array(repeating: .delay(.milliseconds(15), then: .success), count: 40))
            }
            for token in googleTokens {
                try await h.device(.google, token)
                h.fcmPeer.script(token: token, answers: Array(repeating: .delay(.milliseconds(15), then: .success), count: 40))
            }
            try await h.append(40)
            let delivery = PushDelivery(push: h.push, apns: try h.apns(), fcm: try h.fcm(),
                                        options: DeliveryHarness.options(retryMaxDelay: .milliseconds(200)))
            let task = h.run(delivery)
            defer { task.cancel() }

            try await waitUntil { h.apnsPeer.receivedCount >= 100 && h.fcmPeer.receivedCount >= 100 }
            await h.apnsPeer.stop()
            await h.fcmPeer.stop()
            let atKill = (h.apnsPeer.receivedCount, h.fcmPeer.receivedCount)
            #expect(atKill.0 < 640 && atKill.1 < 640, "the kill landed mid-burst: \(atKill)")
            try await Task.sleep(for: .milliseconds(100))
            try await h.apnsPeer.start()
            try await h.fcmPeer.start()
            try await h.waitForEmptyOutbox(timeout: .seconds(60))

            let expected = Set((1...40).map { "v \($0)" })
            for token in appleTokens { #expect(Set(h.apnsPeer.alerts(token: token)) == expected, "\(token)") }
            for token in googleTokens { #expect(Set(h.fcmPeer.bodies(token: token)) == expected, "\(token)") }
            #expect(h.apnsPeer.connectionCount >= 2)
            #expect(h.fcmPeer.connectionCount >= 2)
            #expect(delivery.statistics.retried > 0)
        }
    }
}
