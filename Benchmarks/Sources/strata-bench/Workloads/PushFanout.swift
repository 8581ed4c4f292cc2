import Foundation
import Strata
import StrataInspection

/// `push-fanout`: ts-append on 1,000 series carrying 10,000 push subscriptions (10 per series, on
/// 1,000 devices), half of them with the trigger `Double.parseDouble(${value}) > 500.0`, the other
/// half plain MERGE subscriptions; beside it, the same appends on a store without subscriptions
/// (the reference row). Every committed event makes one notification per plain subscription of
/// its series, and one per trigger the first time it holds, in the append's own batch. Strata only
/// (the peers have no push subscriptions).
///
/// The subscriptions are made before the timed appends; the notifications written are counted
/// after the close, from the files (`PushInspector`).
struct PushFanout: Workload {
    let name = "push-fanout"
    let summary = "ts-append over 1,000 series with 10,000 push subscriptions (half with triggers) beside none"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    static let series = 1_000
    static let subscriptions = 10_000
    static let devices = 1_000
    static let trigger = "Double.parseDouble(${value}) > 500.0"

    func operationUnit(_ run: RunContext) -> String { "one append of \(run.config.batch) events to one series" }

    func unavailability(on engine: EngineKind) -> String? {
        engine == .strata ? nil : "push subscriptions are Strata's only"
    }

    /// The configuration of both rows: 1,000 series, whatever `--series` says.
    static func config(_ config: BenchConfig) -> BenchConfig {
        var c = config
        c.series = series
        return c
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let config = Self.config(run.config)
        let values = SeriesValues(config: config, count: run.count)
        let ts = try StrataTimeSeries(directory: run.directory, config: config)
        let push = try ts.store.pushNotifications()
        var devices: [String] = []
        for d in 0..<Self.devices {
            devices.append(try push.register(PushDevice(platform: d % 2 == 0 ? .apple : .google, applicationID: "com.example.bench",
                                                        deviceToken: "token-\(d)")).id)
            recorder.preparing(done: d, of: Self.devices + Self.subscriptions)
        }
        for i in 0..<Self.subscriptions {
            var s = PushSubscription(mode: .merge, items: ["bench/series-\(i % Self.series)"], fields: ["value"])
            s.notificationFormat = i % 2 == 0
                ? PushFormat.apple(alert: "series \(i % Self.series) at ${value}", sound: "default")
                : PushFormat.google(title: "series \(i % Self.series)", body: "now ${value}")
            if (i / Self.series) % 2 == 1 { s.triggerExpression = Self.trigger }
            _ = try push.subscribe(s, device: devices[i % Self.devices])
            recorder.preparing(done: Self.devices + i, of: Self.devices + Self.subscriptions)
        }
        recorder.expect((run.count + config.batch - 1) / config.batch)
        _ = try TimeSeriesEngines.appendAll(ts, count: run.count, config: config, values: values) { _, values, append in
            try recorder.measure(items: values.count, bytes: values.count * 8) { try append() }
        }
        let close = try Clock.seconds { try ts.close() }
        let written = try PushInspector.push(ofStoreAt: run.directory.path, limit: 0, key: run.config.sealed ? StrataSettings.key : nil).pending
        let seconds = Double(recorder.nanoseconds) / 1e9
        var outcome = RunOutcome(records: run.count, closeSeconds: close)
        let perSecond = seconds > 0 ? Int((Double(written) / seconds).rounded()) : 0
        outcome.notes = ["\(TableReport.grouped(written)) notifications written in the timed appends: \(TableReport.grouped(perSecond))/s"]
        return outcome
    }

    static let referenceRow = "strata (no subscriptions)"
    var referenceName: String? { Self.referenceRow }

    func reference(config: BenchConfig, count: Int, operations: Int, directory: URL, recorder: Recorder) throws -> (outcome: RunOutcome, bytes: Int) {
        let config = Self.config(config)
        let values = SeriesValues(config: config, count: count)
        let ts = try StrataTimeSeries(directory: directory, config: config)
        recorder.expect((count + config.batch - 1) / config.batch)
        _ = try TimeSeriesEngines.appendAll(ts, count: count, config: config, values: values) { _, values, append in
            try recorder.measure(items: values.count, bytes: values.count * 8) { try append() }
        }
        let close = try Clock.seconds { try ts.close() }
        return (RunOutcome(records: count, closeSeconds: close), Runner.directorySize(directory))
    }

    func tableNote(_ config: BenchConfig) -> String? {
        "\(TableReport.grouped(Self.series)) series, \(TableReport.grouped(Self.subscriptions)) MERGE subscriptions on "
            + "\(TableReport.grouped(Self.devices)) devices, half with the trigger \(Self.trigger); values \(config.values.rawValue); "
            + "\"strata ×\" of the reference row: appends/s with subscriptions over without"
    }
}
