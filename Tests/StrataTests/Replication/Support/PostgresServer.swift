import Foundation

/// A private PostgreSQL server for one test: a cluster in a temporary directory, on a free
/// loopback port, started and stopped by `Scripts/postgres`.
///
/// ``stop()``, ``kill()`` and ``start()`` let a test take the server away and bring it back on
/// the same port with the same data; ``remove()`` stops it and deletes its directory (the
/// cluster's files are owned by the server's user, which the script makes when run as root).
final class PostgresServer: @unchecked Sendable {
    /// The directory holding the cluster (`data/`), its socket and `server.log`.
    let directory: TemporaryDirectory
    /// The TCP port on 127.0.0.1.
    let port: Int
    /// `postgres://strata@127.0.0.1:<port>/strata`, as the script printed it.
    private(set) var url: String = ""
    private let lock = NSLock()
    private var removed = false

    /// Initialises a cluster in a new temporary directory and starts it on a free port.
    static func start() throws -> PostgresServer {
        let directory = try TemporaryDirectory()
        var lastError: Error?
        // A port found free may be taken before the server binds it: try another.
        for _ in 0..<3 {
            let server = PostgresServer(directory: directory, port: try ReplicationTestEnvironment.freePort())
            do {
                try server.start()
                return server
            } catch {
                lastError = error
                _ = try? runCommand(ReplicationTestEnvironment.postgresScript, ["stop", directory.path], timeout: 60)
            }
        }
        directory.remove()
        throw lastError ?? FixtureError("PostgreSQL did not start")
    }

    private init(directory: TemporaryDirectory, port: Int) {
        self.directory = directory
        self.port = port
    }

    deinit { remove() }

    /// Starts the server (again) on its port; returns once it accepts connections.
    func start() throws {
        let output = try runChecked(ReplicationTestEnvironment.postgresScript, ["start", directory.path, String(port)], timeout: 180)
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("postgres://") && !$0.contains(" ") }) else {
            throw FixtureError("Scripts/postgres start printed no URL: \(output)")
        }
        lock.withLock { url = String(line) }
    }

    /// Fast shutdown; returns once the server has gone.
    func stop() throws {
        try runChecked(ReplicationTestEnvironment.postgresScript, ["stop", directory.path], timeout: 90)
    }

    /// SIGKILL of the postmaster and its children (the next start runs crash recovery).
    func kill() throws {
        try runChecked(ReplicationTestEnvironment.postgresScript, ["kill", directory.path], timeout: 60)
    }

    /// The end of the server's log, for failure messages.
    func logTail(lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: directory.file("server.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Stops the server (killing it if a stop fails) and deletes its directory; idempotent.
    func remove() {
        let first = lock.withLock { () -> Bool in
            defer { removed = true }
            return !removed
        }
        guard first else { return }
        if (try? stop()) == nil { try? kill() }
        directory.remove()
    }
}
