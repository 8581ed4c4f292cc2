import Foundation
import Strata
import CBenchMalloc

/// `push-open`: a store holding `--count` push subscriptions (on 1,000 devices and 1,000 series,
/// four distinct formats, half with a trigger) is closed, compacted, and opened `trials` times;
/// each open loads every subscription (the store starts push matching at open). Prints the open
/// time and the memory the open store holds (heap bytes in use, and the resident set's growth),
/// per subscription. Strata only.
struct PushOpen: Workload {
    let name = "push-open"
    let summary = "open a store holding --count push subscriptions; memory per subscription"
    let defaultCount = 1_000_000
    let quickCount = 50_000
    static let devices = 1_000
    static let series = 1_000

    func operationUnit(_ run: RunContext) -> String { "open with every subscription loaded" }

    func unavailability(on engine: EngineKind) -> String? {
        engine == .strata ? nil : "push subscriptions are Strata's only"
    }

    /// The resident set size of this process, in bytes (Linux `/proc/self/statm`; 0 elsewhere).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The bytes the C heap has handed out and not taken back (glibc's `mallinfo2`: small blocks
    /// in use plus mmapped ones); 0 elsewhere. Unlike the resident set, it is not hidden by
    /// memory an earlier phase of this process freed and the allocator kept.
    static func heapBytes() -> Int {
        Int(bench_heap_in_use())
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let options = StrataSettings.options(run.config)
        do {
            let store = try Store.open(at: run.directory, options: options)
            let push = try store.pushNotifications()
            var devices: [String] = []
            for d in 0..<Self.devices {
                devices.append(try push.register(PushDevice(platform: d % 2 == 0 ? .apple : .google, applicationID: "com.example.bench",
                                                            deviceToken: "token-\(d)")).id)
            }
            for i in 0..<run.count {
                var s = PushSubscription(mode: i % 3 == 0 ? .distinct : .merge, items: ["bench/series-\(i % Self.series)"],
                                         fields: ["value", "sequence"])
                s.notificationFormat = i % 2 == 0
                    ? PushFormat.apple(alert: "now ${value} (${sequence})", badge: "AUTO", sound: "default")
                    : PushFormat.google(title: "bench", body: "now ${value}")
                if i % 4 >= 2 { s.triggerExpression = "Double.parseDouble(${value}) > 500.0" }
                _ = try push.subscribe(s, device: devices[i % Self.devices])
                if i % 1_000 == 0 { recorder.preparing(done: i, of: run.count) }
            }
            try store.compact()
            try store.close()
        }
        let trials = run.config.openTrials ?? (run.config.quick ? 2 : 3)
        recorder.expect(trials)
        var added: [Int] = []
        var held: [Int] = []
        var closeSeconds = 0.0
        for _ in 0..<trials {
            let before = Self.residentBytes()
            let heapBefore = Self.heapBytes()
            let store = try recorder.measure(items: 1, bytes: 0) { try Store.open(at: run.directory, options: options) }
            added.append(Self.residentBytes() - before)
            held.append(Self.heapBytes() - heapBefore)
            let loaded = try store.pushNotifications().subscriptions(device: "D1").count
            let expected = (run.count + Self.devices - 1) / Self.devices
            guard loaded == expected else {
                throw BenchError("device D1 has \(loaded) subscriptions after the open, not \(expected)")
            }
            closeSeconds = try Clock.seconds { try store.close() }
        }
        var outcome = RunOutcome(records: run.count, closeSeconds: closeSeconds)
        let perSubscription = (added.max() ?? 0) / max(1, run.count)
        let heapPerSubscription = (held.max() ?? 0) / max(1, run.count)
        outcome.notes = ["memory the open holds: \(TableReport.grouped(held.max() ?? 0)) bytes of heap, "
                         + "\(TableReport.grouped(heapPerSubscription)) bytes per subscription (the largest of \(trials) opens); "
                         + "resident set grown by \(TableReport.grouped(added.max() ?? 0)) bytes, \(TableReport.grouped(perSubscription)) "
                         + "per subscription (less when memory freed earlier in this process is reused)"]
        return outcome
    }
}
