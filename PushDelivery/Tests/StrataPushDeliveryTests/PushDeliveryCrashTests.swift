import Foundation
import Strata
import StrataPushDelivery
import StrataPushPeers
import Testing

/// `kill -9` of a process that delivers a store's outbox (`strata-push-crash-helper`), in the middle
/// of a burst, then a restart: every notification arrives, and no more are sent twice than
/// `PushDeliveryOptions`' stated window, `maxInFlight + acknowledgementBatchSize` (counted by
/// `apns-id` for APNs, which a resent notification keeps, and by registration token and body for
/// FCM, where each notification's body is distinct).
extension HeavyDeliveryTests {
    @Suite struct PushDeliveryCrashTests {
        @Test func killDashNineMidBurstThenRestartDeliversEverythingWithinTheDuplicateWindow() async throws {
            let h = try await DeliveryHarness()
            defer { Task { await h.tearDown() } }
            let appleTokens = (0..<10).map { "crash-a\($0)" }
            let googleTokens = (0..<10).map { "crash-g\($0)" }
            // Slow answers: each device takes at least 0.6 s, so the kill lands mid-burst.
            let slow = Array(repeating: APNsPeer.Answer.delay(.milliseconds(10), then: .success), count: 60)
            for token in appleTokens {
                try await h.device(.apple, token)
                h.apnsPeer.script(token: token, answers: slow)
            }
            for token in googleTokens {
                try await h.device(.google, token)
                h.fcmPeer.script(token: token, answers: Array(repeating: .delay(.milliseconds(10), then: .success), count: 60))
            }
            try await h.append(60)
            let total = 1_200
            #expect(try h.pending().count == total)
            try await h.store.close()

            let keyFile = h.directory.appendingPathComponent("apns.p8")
            let caFile = h.directory.appendingPathComponent("ca.pem")
            try h.apnsKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            try h.authority.rootCertificatePEM.write(to: caFile, atomically: true, encoding: .utf8)
            let accountFile = h.directory.appendingPathComponent("service-account.json")
            try h.serviceAccount.json.write(to: accountFile)
            let maxInFlight = 64
            let batch = 32
            let arguments = [
                h.directory.appendingPathComponent("store").path,
                "--apns-url", h.apnsPeer.url.absoluteString, "--apns-key", keyFile.path,
                "--key-id", DeliveryHarness.keyID, "--team-id", DeliveryHarness.teamID, "--ca", caFile.path,
                "--fcm-account", accountFile.path, "--fcm-endpoint", h.fcmPeer.url.absoluteString,
                "--max-in-flight", String(maxInFlight), "--ack-batch", String(batch), "--retry-base-ms", "20",
            ]

            let first = try PushCrashHelperProcess(arguments)
            #expect(try await first.waitForLine { $0 == "ready" }, "the helper starts: \(first.lines)")
            try await waitUntil(timeout: .seconds(30)) { h.apnsPeer.receivedCount >= 150 && h.fcmPeer.receivedCount >= 150 }
            first.killAndWait()
            let atKill = h.apnsPeer.receivedCount + h.fcmPeer.receivedCount
            #expect(atKill < total, "the kill landed mid-burst")

            let second = try PushCrashHelperProcess(arguments)
            #expect(try await second.waitForLine { $0 == "ready" }, "the helper restarts: \(second.lines)")
            func distinctFCM() -> Int {
                Set(googleTokens.flatMap { token in h.fcmPeer.bodies(token: token).map { token + "|" + $0 } }).count
            }
            try await waitUntil(timeout: .seconds(60), "every notification", every: .milliseconds(50)) {
                Set(h.apnsPeer.received.map(\.apnsID)).count + distinctFCM() >= total
            }
            #expect(try await second.waitForLine(timeout: .seconds(30)) { $0.hasSuffix("pending=0") },
                    "the restarted helper acknowledges everything: \(second.lines.suffix(3))")
            second.killAndWait()

            let received = h.apnsPeer.receivedCount + h.fcmPeer.receivedCount
            let distinctAPNs = Set(h.apnsPeer.received.map(\.apnsID)).count
            let distinct = distinctAPNs + distinctFCM()
            #expect(distinctAPNs == total / 2)
            #expect(distinct == total)
            #expect(received - distinct <= maxInFlight + batch,
                    "duplicates \(received - distinct) within maxInFlight + acknowledgementBatchSize")
            let expected = Set((1...60).map { "v \($0)" })
            for token in appleTokens { #expect(Set(h.apnsPeer.alerts(token: token)) == expected, "\(token)") }
            for token in googleTokens { #expect(Set(h.fcmPeer.bodies(token: token)) == expected, "\(token)") }

            let reopened = try await Store.open(at: h.directory.appendingPathComponent("store"), options: StoreOptions(durability: .buffered))
            let left = try await reopened.pushNotifications().pendingNotifications(limit: 10_000)
            try await reopened.close()
            #expect(left.isEmpty, "the outbox is empty after the restart")
            print("crash: \(atKill) accepted before the kill, \(received - distinct) sent twice")
        }
    }
}
