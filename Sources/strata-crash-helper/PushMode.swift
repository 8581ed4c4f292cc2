// Mode `push` of the crash helper (Tests/StrataTests/Push/PushCrashTests.swift):
//
//   strata-crash-helper push <directory> <seed>
//
// Opens the store (small memtable, so that flushes and compactions run), registers a device and
// subscribes it to `crash/push` unless the store has its subscriptions already — S1 DISTINCT, a
// payload naming each event's sequence; S2 MERGE of the sequence at most every 2 s, whose later
// updates wait in the item's state — then appends forever batches of 1…20 events to
// `crash/push` and, in between, to `crash/quiet` (which nobody subscribes to). Some batches are
// transactions writing both series. Before each write it prints `BEGIN`, after it returns
// `ACK <first sequence> <count>` for the events of `crash/push`.

import Foundation
import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

func runPush(directory: URL, arguments: [String]) -> Never {
    guard arguments.count == 1, let seed = UInt64(arguments[0]) else { fail("usage: strata-crash-helper push <directory> <seed>") }
    var options = StoreOptions()
    options.memtableSize = 64 << 10
    options.segmentSize = 256 << 10
    options.blockSize = 4 << 10
    let store: Store
    let pushed: TimeSeries<Double>
    let quiet: TimeSeries<Double>
    do {
        store = try Store.open(at: directory, options: options)
        pushed = try store.timeSeries("crash/push", of: Double.self)
        quiet = try store.timeSeries("crash/quiet", of: Double.self)
        let push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .apple, applicationID: "crash", deviceToken: "token"))
        if try push.subscriptions(device: device.id).isEmpty {
            var sub = PushSubscription(mode: .distinct, items: ["crash/push"], fields: ["sequence", "value"])
            sub.notificationFormat = #"{"seq":"${sequence}","value":"${value}"}"#
            _ = try push.subscribe(sub, device: device.id)
            // S2: the merged state at most every 2 s; the rest waits, durably, in the item's state.
            var limited = PushSubscription(mode: .merge, items: ["crash/push"], fields: ["sequence"])
            limited.notificationFormat = #"{"merged":"${sequence}"}"#
            limited.requestedMaxFrequency = .limited(0.5)
            _ = try push.subscribe(limited, device: device.id)
        }
    } catch {
        fail("open failed: \(error)")
    }
    var random = SplitMix64(state: seed ^ 0x9054)
    while true {
        exitIfOrphaned()
        let n = 1 + random.below(20)
        emit("BEGIN")
        do {
            let values = (0..<n).map { _ in Double(random.below(1_000)) }
            let metadata: [EventMetadata]
            switch random.below(3) {
            case 0:
                metadata = try store.transaction { tx in
                    _ = try tx.timeSeries("crash/quiet", of: Double.self).append(1)
                    return try tx.timeSeries("crash/push", of: Double.self).append(contentsOf: values)
                }
            case 1:
                try quiet.append(contentsOf: values)
                metadata = try pushed.append(contentsOf: values)
            default:
                metadata = try pushed.append(contentsOf: values)
            }
            emit("ACK \(metadata[0].sequence) \(metadata.count)")
        } catch {
            fail("write failed: \(error)")
        }
    }
}
