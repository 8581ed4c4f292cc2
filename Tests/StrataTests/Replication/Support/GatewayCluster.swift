import Foundation
import Synchronization

/// One PostgreSQL server and `gatewayCount` gateway processes serving it, for one test.
///
/// Use ``with(gateways:_:)``, which shuts everything down (processes and directories) however the
/// test ends; on a thrown error it prints the ends of the gateways' and the server's logs.
final class GatewayCluster: @unchecked Sendable {
    let postgres: PostgresServer
    /// The gateways, all on `postgres`.
    let gateways: [GatewayProcess]
    /// Holds the gateways' logs.
    let logs: TemporaryDirectory
    private let watchdog: SpawnedProcess
    private let lock = NSLock()
    private var isShutDown = false

    /// Starts PostgreSQL and `gateways` gateway processes (at once, as a deployment would).
    init(gateways count: Int) throws {
        let logs = try TemporaryDirectory()
        let postgres: PostgresServer
        do {
            postgres = try PostgresServer.start()
        } catch {
            logs.remove()
            throw error
        }
        let watchdog: SpawnedProcess
        do {
            watchdog = try Self.startWatchdog(logs: logs, postgres: postgres)
        } catch {
            postgres.remove()
            logs.remove()
            throw error
        }
        let url = postgres.url
        let started = Mutex<[Result<GatewayProcess, any Error>?]>(Array(repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let r = Result { try GatewayProcess(postgresURL: url, logPath: logs.file("gateway-\(i).log")) }
            started.withLock { $0[i] = r }
        }
        var gateways: [GatewayProcess] = []
        var failure: (any Error)?
        for r in started.withLock({ $0 }) {
            switch r {
            case .success(let g)?: gateways.append(g)
            case .failure(let e)?: failure = failure ?? e
            case nil: failure = failure ?? FixtureError("a gateway did not report")
            }
        }
        if let failure {
            for g in gateways { g.kill() }
            postgres.remove()
            logs.remove()
            if !watchdog.waitForExit(timeout: 5) { watchdog.killAndWait() }
            throw failure
        }
        self.postgres = postgres
        self.gateways = gateways
        self.logs = logs
        self.watchdog = watchdog
    }

    /// A shell that outlives a crash of the test process: once that process has gone while the
    /// cluster's log directory still exists (no orderly shutdown), it kills the gateways (pids in
    /// `<log>.pid`, checked against their command line) and PostgreSQL and deletes the
    /// directories. After an orderly shutdown (the log directory removed) it just ends.
    private static func startWatchdog(logs: TemporaryDirectory, postgres: PostgresServer) throws -> SpawnedProcess {
        let script = """
            parent=$1; logs=$2; pgdir=$3; pgscript=$4
            while kill -0 "$parent" 2>/dev/null && [ -d "$logs" ]; do sleep 0.5; done
            [ -d "$logs" ] || exit 0
            for f in "$logs"/*.pid; do
                [ -f "$f" ] || continue
                p=$(cat "$f")
                case "$(tr '\\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)" in
                *strata-gateway*serve*) kill -9 "$p" 2>/dev/null ;;
                esac
            done
            "$pgscript" kill "$pgdir" >/dev/null 2>&1
            rm -rf "$pgdir" "$logs"
            """
        return try SpawnedProcess("/bin/sh", ["-c", script, "strata-test-watchdog", String(getpid()), logs.path,
                                              postgres.directory.path, ReplicationTestEnvironment.postgresScript],
                                  outputPath: "/dev/null")
    }

    deinit { shutdown() }

    /// Runs `body` with a new cluster and always shuts it down afterwards.
    static func with<R: Sendable>(gateways: Int, _ body: (GatewayCluster) async throws -> R) async throws -> R {
        let cluster = try GatewayCluster(gateways: gateways)
        do {
            let result = try await body(cluster)
            cluster.shutdown()
            return result
        } catch {
            print("GatewayCluster: the test threw \(error)\n\(cluster.diagnostics)")
            cluster.shutdown()
            throw error
        }
    }

    /// Kills every gateway, stops PostgreSQL, removes the directories; idempotent.
    func shutdown() {
        let first = lock.withLock { () -> Bool in
            defer { isShutDown = true }
            return !isShutDown
        }
        guard first else { return }
        for gateway in gateways { gateway.kill() }
        postgres.remove()
        logs.remove()
        if !watchdog.waitForExit(timeout: 5) { watchdog.killAndWait() }
    }

    /// The ends of the gateways' logs and of PostgreSQL's, for failure messages.
    var diagnostics: String {
        var text = ""
        for (i, gateway) in gateways.enumerated() {
            let log = (try? String(contentsOfFile: gateway.logPath, encoding: .utf8)) ?? ""
            text += "--- gateway \(i) (port \(gateway.port)) log, last lines:\n"
            text += log.split(separator: "\n", omittingEmptySubsequences: false).suffix(25).joined(separator: "\n") + "\n"
        }
        text += "--- postgres log, last lines:\n" + postgres.logTail() + "\n"
        return text
    }

    // MARK: Admin commands (strata-gateway database/user, on PostgreSQL directly)

    @discardableResult
    private func admin(_ arguments: [String]) throws -> String {
        guard let binary = ReplicationTestEnvironment.gatewayBinary else { throw FixtureError("STRATA_GATEWAY_BIN is not set") }
        return try runChecked(binary, arguments + ["--postgres", postgres.url], timeout: 60)
    }

    /// `strata-gateway database create <name>`.
    func createDatabase(_ name: String) throws {
        try admin(["database", "create", name])
    }

    /// `strata-gateway user add <name> --database <db> --password <pw> --read … --write …`.
    /// `readPaths`/`writePaths`: the channel names and series paths it may read and write.
    func addUser(_ name: String, database: String, password: String, read: [String], write: [String],
                 readPaths: [String] = [], writePaths: [String] = []) throws {
        var arguments = ["user", "add", name, "--database", database, "--password", password]
        if !read.isEmpty { arguments += ["--read", read.joined(separator: ",")] }
        if !write.isEmpty { arguments += ["--write", write.joined(separator: ",")] }
        if !readPaths.isEmpty { arguments += ["--read-paths", readPaths.joined(separator: ",")] }
        if !writePaths.isEmpty { arguments += ["--write-paths", writePaths.joined(separator: ",")] }
        try admin(arguments)
    }

    /// `strata-gateway user set` with what is given.
    func setUser(_ name: String, database: String, password: String? = nil, read: [String]? = nil, write: [String]? = nil) throws {
        var arguments = ["user", "set", name, "--database", database]
        if let password { arguments += ["--password", password] }
        if let read { arguments += ["--read", read.joined(separator: ",")] }
        if let write { arguments += ["--write", write.joined(separator: ",")] }
        try admin(arguments)
    }

    /// Creates database `name` with a user `admin` (password `admin`) who reads and writes `*`
    /// (every document channel, channel name and series path), and returns that user's client
    /// through gateway `gateway`.
    @discardableResult
    func createDatabaseWithAdmin(_ name: String, gateway: Int = 0) throws -> GatewayHTTPClient {
        try createDatabase(name)
        try addUser("admin", database: name, password: "admin", read: ["*"], write: ["*"], readPaths: ["*"], writePaths: ["*"])
        return client(database: name, gateway: gateway, user: "admin", password: "admin")
    }

    /// A plain HTTP client of database `database` through gateway `gateway`.
    func client(database: String, gateway: Int = 0, user: String = "admin", password: String = "admin") -> GatewayHTTPClient {
        GatewayHTTPClient(databaseURL: gateways[gateway].databaseURL(database), user: user, password: password)
    }
}
