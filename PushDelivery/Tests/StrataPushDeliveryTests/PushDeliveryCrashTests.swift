import Foundation
import Strata
import StrataPushDelivery
import StrataPushPeers
import Testing

/// `kill -9` of a process that delivers a store's outbox (`strata-push-crash-helper`), in the middle
/// of a burst, then a restart: every notification arrives, and no more are sent twice than
/// `PushDeliveryOptions`' stated window, `maxInFlight + acknowledgementBatchSize` (counted by
/// `apns-id`, which a resent notification keeps).
extension HeavyDeliveryTests {
    @Suite struct PushDeliveryCrashTests {
        @Test func killDashNineMidBurstThenRestartDeliversEverythingWithinTheDuplicateWindow() async throws {
            let h = try await DeliveryHarness()
            defer { Task { await h.tearDown() } }
            let tokens = (0..<20).map { "crash\($0)" }
            for token in tokens {
                try await h.device(.apple, token)
                // Slow answers: each device takes at least 0.6 s, so the kill lands mid-burst.
                h.apnsPeer.script(token: token, answers: Array(repeating: .delay(.milliseconds(10), then: .success), count: 60))
            }
            try await h.append(60)
            let total = 1_200
            #expect(try h.pending().count == total)
            try await h.store.close()

            let keyFile = h.directory.appendingPathComponent("apns.p8")
            let caFile = h.directory.appendingPathComponent("ca.pem")
            try h.apnsKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            try h.authority.rootCertificatePEM.write(to: caFile, atomically: true, encoding: .utf8)
            let maxInFlight = 64
            let batch = 32
            let arguments = [
                h.directory.appendingPathComponent("store").path,
                "--apns-url", h.apnsPeer.url.absoluteString, "--apns-key", keyFile.path,
                "--key-id", DeliveryHarness.keyID, "--team-id", DeliveryHarness.teamID, "--ca", caFile.path,
                "--max-in-flight", String(maxInFlight), "--ack-batch", String(batch), "--retry-base-ms", "20",
            ]

            let first = try PushCrashHelperProcess(arguments)
            #expect(try await first.waitForLine { $0 == "ready" }, "the helper starts: \(first.lines)")
            try await waitUntil(timeout: .seconds(30)) { h.apnsPeer.receivedCount >= 300 }
            first.killAndWait()
            let atKill = h.apnsPeer.receivedCount
            #expect(atKill < total, "the kill landed mid-burst")

            let second = try PushCrashHelperProcess(arguments)
            #expect(try await second.waitForLine { $0 == "ready" }, "the helper restarts: \(second.lines)")
            try await waitUntil(timeout: .seconds(60), "every apns-id") {
                Set(h.apnsPeer.received.map(\.apnsID)).count >= total
            }
            #expect(try await second.waitForLine(timeout: .seconds(30)) { $0.hasSuffix("pending=0") },
                    "the restarted helper acknowledges everything: \(second.lines.suffix(3))")
            second.killAndWait()

            let received = h.apnsPeer.received
            let distinct = Set(received.map(\.apnsID)).count
            #expect(distinct == total)
            #expect(received.count - distinct <= maxInFlight + batch,
                    "duplicates \(received.count - distinct) within maxInFlight + acknowledgementBatchSize")
            let expected = Set((1...60).map { "v \($0)" })
            for token in tokens { #expect(Set(h.apnsPeer.alerts(token: token)) == expected, "\(token)") }

            let reopened = try await Store.open(at: h.directory.appendingPathComponent("store"), options: StoreOptions(durability: .buffered))
            let left = try await reopened.pushNotifications().pendingNotifications(limit: 10_000)
            try await reopened.close()
            #expect(left.isEmpty, "the outbox is empty after the restart")
            print("crash: \(atKill) accepted before the kill, \(received.count - distinct) sent twice")
        }
    }
}
