import Foundation
import Logging
import PostgresNIO

/// Where the gateway's PostgreSQL is: a `postgres://user[:password]@host[:port]/database` URL
/// (given by `--postgres` or `STRATA_GATEWAY_POSTGRES`).
struct PostgresSettings: Sendable {
    var url: String

    /// The `application_name` of this process's pool connections (not of its LISTEN connection):
    /// `strata-gateway-<pid>`.
    static let poolApplicationName = "strata-gateway-\(ProcessInfo.processInfo.processIdentifier)"

    /// The environment variable read when `--postgres` is absent.
    static let environmentVariable = "STRATA_GATEWAY_POSTGRES"

    /// The URL from the option, else from the environment, else an error naming both.
    static func resolve(_ option: String?) throws -> PostgresSettings {
        if let option, !option.isEmpty { return PostgresSettings(url: option) }
        if let value = ProcessInfo.processInfo.environment[environmentVariable], !value.isEmpty {
            return PostgresSettings(url: value)
        }
        throw CommandError("no PostgreSQL URL: pass --postgres postgres://user@host:port/database or set \(environmentVariable)")
    }

    /// The client configuration for this URL (no TLS: the gateway talks to PostgreSQL on a
    /// trusted network, loopback in the set-up scripts).
    func clientConfiguration(maximumConnections: Int) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
              components.scheme == "postgres" || components.scheme == "postgresql",
              let host = components.host, !host.isEmpty
        else {
            throw CommandError("bad PostgreSQL URL '\(url)': expected postgres://user[:password]@host[:port]/database")
        }
        let user = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = components.password.flatMap { $0.removingPercentEncoding }
        var database = components.path
        if database.hasPrefix("/") { database.removeFirst() }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: password,
            database: database.isEmpty ? user : database, tls: .disable)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.minimumConnections = 0
        // Names this process's pool connections in pg_stat_activity, where /metrics counts them.
        configuration.options.additionalStartupParameters = [("application_name", Self.poolApplicationName)]
        return configuration
    }

    /// The same configuration for a single connection (the LISTEN connection).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let client = try clientConfiguration(maximumConnections: 1)
        return PostgresConnection.Configuration(
            host: client.host ?? "127.0.0.1", port: client.port ?? 5432, username: client.username,
            password: client.password, database: client.database, tls: .disable)
    }
}

/// Runs `body` with a running connection pool, for the one-shot admin commands.
func withPostgresClient<T: Sendable>(
    _ settings: PostgresSettings, logger: Logger,
    _ body: @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    let client = PostgresClient(configuration: try settings.clientConfiguration(maximumConnections: 2), backgroundLogger: poolLogger(logger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        do {
            let result = try await body(client)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// The pool's background logger: errors only. (postgres-nio warns when a connection is leased
/// before `run()` has begun, which is the normal start-up order here: the lease waits.)
func poolLogger(_ logger: Logger) -> Logger {
    var quiet = logger
    quiet.logLevel = max(logger.logLevel, .error)
    return quiet
}
