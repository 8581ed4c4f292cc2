import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One real `strata-gateway serve` process on loopback.
///
/// The first start asks for `--port 0` and reads the port from the `strata-gateway listening on
/// http://…` line; later starts (after ``kill()`` or ``stop()``) reuse that port, so that clients
/// holding the URL reconnect to the new process. Its standard output and error go to a log file
/// (``logPath``), which failure messages quote.
final class GatewayProcess: @unchecked Sendable {
    /// The gateway's PostgreSQL URL (`--postgres`).
    let postgresURL: String
    /// Where the process's output goes, across restarts.
    let logPath: String
    private let lock = NSLock()
    private var process: SpawnedProcess?
    private var logOffset: UInt64 = 0
    private var boundPort: Int?

    /// Starts a gateway on a free port; returns once it prints its `listening on` line.
    init(postgresURL: String, logPath: String) throws {
        self.postgresURL = postgresURL
        self.logPath = logPath
        try start()
    }

    deinit { kill() }

    /// The port it listens on (fixed after the first start).
    var port: Int { lock.withLock { boundPort ?? 0 } }

    /// `http://127.0.0.1:<port>`.
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The URL of the gateway database `name`.
    func databaseURL(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Whether the process runs.
    var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

    /// Starts the process (again); a no-op when it runs. Retries a few times when the port of an
    /// earlier run is not free yet.
    func start() throws {
        if isRunning { return }
        var lastError: Error?
        for attempt in 0..<20 {
            do {
                try launch()
                return
            } catch {
                lastError = error
                // Only a restart on a fixed port is worth retrying (the port may still be held).
                guard port != 0 else { throw error }
                usleep(useconds_t(100_000 * min(attempt + 1, 5)))
            }
        }
        throw lastError ?? FixtureError("strata-gateway did not start")
    }

    private func launch() throws {
        guard let binary = ReplicationTestEnvironment.gatewayBinary else {
            throw FixtureError("STRATA_GATEWAY_BIN is not set")
        }
        let offset = ((try? FileManager.default.attributesOfItem(atPath: logPath))?[.size] as? NSNumber)?.uint64Value ?? 0
        let process = try SpawnedProcess(binary, ["serve", "--postgres", postgresURL, "--host", "127.0.0.1", "--port", String(port)],
                                         outputPath: logPath)
        lock.withLock {
            self.process = process
            logOffset = offset
        }
        // For the cluster's watchdog, which kills the gateway if the test process dies.
        try? String(process.pid).write(toFile: logPath + ".pid", atomically: true, encoding: .utf8)
        let deadline = Date().addingTimeInterval(90)
        while true {
            if let listening = listeningPort(after: offset) {
                lock.withLock { boundPort = listening }
                return
            }
            if !process.isRunning {
                throw FixtureError("strata-gateway serve exited \(process.exitCode ?? -1) before listening: \(logText(after: offset))")
            }
            if Date() > deadline {
                process.killAndWait()
                throw FixtureError("strata-gateway serve printed no listening line in 90 s: \(logText(after: offset))")
            }
            usleep(20_000)
        }
    }

    private func logText(after offset: UInt64) -> String {
        guard let data = FileManager.default.contents(atPath: logPath), data.count >= Int(offset) else { return "" }
        return String(decoding: data[Int(offset)...], as: UTF8.self)
    }

    private func listeningPort(after offset: UInt64) -> Int? {
        let marker = "strata-gateway listening on http://"
        for line in logText(after: offset).split(separator: "\n") {
            guard let range = line.range(of: marker) else { continue }
            let address = line[range.upperBound...]
            guard let colon = address.lastIndex(of: ":") else { continue }
            return Int(address[address.index(after: colon)...].prefix(while: \.isNumber))
        }
        return nil
    }

    /// The log since the last start, for failure messages.
    var recentLog: String { logText(after: lock.withLock { logOffset }) }

    /// `kill -9`: returns once the process is gone.
    func kill() {
        lock.withLock { process }?.killAndWait()
    }

    /// SIGTERM, then SIGKILL if it has not ended within `grace` seconds; returns once it is gone.
    func stop(grace: Double = 10) {
        guard let process = lock.withLock({ self.process }) else { return }
        process.send(SIGTERM)
        _ = process.waitForExit(timeout: grace)
        process.killAndWait()
    }
}
