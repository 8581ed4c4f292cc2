import Foundation

/// `push-deliver`: notifications from a store's outbox through `PushDelivery` (PushDelivery/) to
/// the loopback APNs peer (HTTP/2 over TLS with a test CA), acknowledgements included. The
/// measurement is PushDelivery's program `strata-push-bench` (so that strata-bench resolves no
/// SwiftNIO), run in a child process: `STRATA_PUSH_BENCH_BIN` names it (Scripts/bench builds it).
/// One operation is the drain of `--count` waiting notifications to 100 devices; then appends at
/// 80% of that rate for a few seconds give the time from each notification's commit to its
/// acknowledgement's commit (p50, p99). Strata only.
struct PushDeliver: Workload {
    let name = "push-deliver"
    let summary = "deliver --count outbox notifications to a loopback APNs peer (acknowledged); commit-to-ack latency at 80% of that rate"
    let defaultCount = 100_000
    let quickCount = 20_000
    static let devices = 100

    func operationUnit(_ run: RunContext) -> String { "the delivery of every waiting notification, acknowledgements committed" }

    func unavailability(on engine: EngineKind, config: BenchConfig) -> String? {
        if engine != .strata { return "push delivery is Strata's only" }
        if config.sealed { return "strata-push-bench opens its store without a key" }
        if Self.program() == nil {
            return "PushDelivery's strata-push-bench is not built: `Scripts/bench push-deliver` builds it "
                + "(or set STRATA_PUSH_BENCH_BIN to it)"
        }
        return nil
    }

    /// The program that measures, from `STRATA_PUSH_BENCH_BIN`.
    static func program() -> String? {
        guard let path = ProcessInfo.processInfo.environment["STRATA_PUSH_BENCH_BIN"],
              FileManager.default.isExecutableFile(atPath: path) else { return nil }
        return path
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let process = Process()
        guard let program = Self.program() else { throw BenchError("push-deliver: strata-push-bench is not built") }
        process.executableURL = URL(fileURLWithPath: program)
        let seconds = run.config.quick ? 1 : 3
        process.arguments = [run.directory.appendingPathComponent("store").path, "--count", "\(run.count)",
                             "--devices", "\(Self.devices)", "--seconds", "\(seconds)"]
        let output = Pipe()
        process.standardOutput = output
        recorder.expect(1)
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let result = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let count = result["count"] as? Int, let drain = result["drainSeconds"] as? Double,
              let p50 = result["p50Ms"] as? Double, let p99 = result["p99Ms"] as? Double,
              let rate = result["pacedRate"] as? Int, let connections = result["connections"] as? Int,
              let commits = result["acknowledgementCommits"] as? Int, let delivered = result["delivered"] as? Int else {
            throw BenchError("strata-push-bench exited with status \(process.terminationStatus): \(String(decoding: data, as: UTF8.self))")
        }
        recorder.record(nanoseconds: UInt64(drain * 1e9), items: count, bytes: 0)
        var outcome = RunOutcome(records: count)
        outcome.notes = [
            "\(TableReport.grouped(Int(Double(count) / drain))) notifications/s to \(Self.devices) devices over \(connections) connection(s), "
                + "\(TableReport.grouped(delivered)) delivered in \(TableReport.grouped(commits)) acknowledgement commits",
            String(format: "commit to acknowledgement at %@ notifications/s: p50 %.1f ms, p99 %.1f ms", TableReport.grouped(rate), p50, p99),
        ]
        return outcome
    }
}
