// strata-push-bench: the measurement behind `strata-bench push-deliver` (Benchmarks/ runs this
// program, so that strata-bench itself resolves none of SwiftNIO): notifications from a store's
// outbox through PushDelivery to the loopback APNs peer (StrataPushPeers, in this process, HTTP/2
// over TLS with a test CA), acknowledgements included. Two phases on one store:
//
//   drain    `--count` notifications (one DISTINCT subscription per device, each append makes
//            one notification per device) wait in the outbox; the delivery starts, and the phase
//            ends when the last acknowledgement commits: notifications per second.
//   paced    appends at `--rate` notifications per second for `--seconds` while the delivery
//            runs: the time from each notification's commit (`created`, in ms) to the commit of
//            its acknowledgement (PushDeliveryOptions.onAcknowledged), p50 and p99.
//
// Usage: strata-push-bench <empty-store-directory> [--count N] [--devices D] [--rate R] [--seconds S]
// Prints one line of JSON on standard output; progress and errors on standard error.
import Crypto
import Foundation
import Strata
import StrataPushDelivery
import StrataPushPeers
import Synchronization

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("strata-push-bench: " + message + "\n").utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let directory = arguments.first, !directory.hasPrefix("--") else {
    fail("usage: strata-push-bench <empty-store-directory> [--count N] [--devices D] [--rate R] [--seconds S]")
}
arguments.removeFirst()
var flags: [String: Int] = [:]
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    guard name.hasPrefix("--"), let value = arguments.first.flatMap(Int.init), value > 0 else { fail("expected --name <positive number> at \(name)") }
    arguments.removeFirst()
    flags[String(name.dropFirst(2))] = value
}
let devices = flags["devices"] ?? 100
let count = max(devices, (flags["count"] ?? 100_000) / devices * devices)
let seconds = flags["seconds"] ?? 3

/// Acknowledged notifications and the latencies of the paced phase, shared with the callback.
struct Tally {
    var acknowledged = 0
    var measuring = false
    var latencies: [Double] = []   // ms
}
let tally = Mutex(Tally())

let peer = try APNsPeer()
peer.keepsRecords = false
let key = P256.Signing.PrivateKey()
peer.register(publicKey: key.publicKey, keyID: "BENCHKEY01", teamID: "BENCHTEAM1")
try await peer.start()

let store = try Store.open(at: URL(fileURLWithPath: directory), options: StoreOptions(durability: .buffered))
let push = try store.pushNotifications()
for d in 0..<devices {
    let device = try push.register(PushDevice(platform: .apple, applicationID: "com.example.bench", deviceToken: "token-\(d)"))
    var subscription = PushSubscription(mode: .distinct, items: ["bench/deliver"], fields: ["value"])
    subscription.notificationFormat = PushFormat.apple(alert: "value ${value}")
    _ = try push.subscribe(subscription, device: device.id)
}
let series = try store.timeSeries("bench/deliver", of: Double.self)
for i in 0..<(count / devices) { _ = try series.append(Double(i)) }

var options = PushDeliveryOptions()
options.onAcknowledged = { batch in
    let now = Date()
    tally.withLock { t in
        t.acknowledged += batch.count
        if t.measuring { for n in batch { t.latencies.append(now.timeIntervalSince(n.created) * 1_000) } }
    }
}
let apns = try APNsConfiguration(privateKeyPEM: key.pemRepresentation, keyID: "BENCHKEY01", teamID: "BENCHTEAM1",
                                 environment: .custom(peer.url), trustedRootCertificatesPEM: peer.authority.rootCertificatePEM)
let delivery = PushDelivery(push: push, apns: apns, options: options)

/// Waits until `acknowledged` reaches `target`, or fails after `limit` seconds.
func waitForAcknowledgements(_ target: Int, limit: Double) async throws {
    let deadline = Date().addingTimeInterval(limit)
    while tally.withLock({ $0.acknowledged }) < target {
        guard Date() < deadline else {
            fail("only \(tally.withLock { $0.acknowledged }) of \(target) notifications acknowledged after \(limit) s; statistics: \(delivery.statistics)")
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

let started = ContinuousClock.now
let running = Task { try await delivery.run() }
try await waitForAcknowledgements(count, limit: 600)
let drain = ContinuousClock.now - started
let drainSeconds = Double(drain.components.seconds) + Double(drain.components.attoseconds) / 1e18
let perSecond = Double(count) / drainSeconds

// Paced: the measured rate's 80%, or --rate; one append (one notification per device) per tick.
let rate = flags["rate"] ?? max(devices, Int(perSecond * 0.8))
let appendsPerSecond = max(1.0, Double(rate) / Double(devices))
let interval = 1.0 / appendsPerSecond
let appends = Int(appendsPerSecond * Double(seconds))
tally.withLock { $0.measuring = true }
let pacedStart = Date()
for i in 0..<appends {
    let due = pacedStart.addingTimeInterval(Double(i) * interval)
    let wait = due.timeIntervalSinceNow
    if wait > 0 { try await Task.sleep(for: .milliseconds(Int((wait * 1_000).rounded(.up)))) }
    _ = try series.append(Double(i))
}
try await waitForAcknowledgements(count + appends * devices, limit: 600)
running.cancel()
_ = try? await running.value
let statistics = delivery.statistics
try store.close()
await peer.stop()

let latencies = tally.withLock { $0.latencies }.sorted()
func percentile(_ p: Double) -> Double {
    latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)]
}
let result: [String: Any] = [
    "count": count, "devices": devices, "drainSeconds": drainSeconds, "perSecond": perSecond,
    "pacedRate": Int(appendsPerSecond * Double(devices)), "pacedNotifications": appends * devices,
    "p50Ms": percentile(0.50), "p99Ms": percentile(0.99), "maxMs": latencies.last ?? 0,
    "connections": peer.connectionCount, "acknowledgementCommits": statistics.acknowledgementCommits,
    "delivered": statistics.delivered, "retried": statistics.retried,
]
let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
