import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// The serving process's connection pool, replaced by a fresh one when it stays broken.
///
/// postgres-nio's pool opens a circuit breaker when creating a connection fails, and then fails
/// every request at once until a backed-off retry succeeds, which is about 15 s after
/// PostgreSQL is back from a restart. When a request fails that way, `recover` checks with one
/// plain connection that PostgreSQL answers again and, if so, swaps in a new pool, so the
/// gateway serves again within one retry of the replicator.
final class PostgresPool: Sendable {
    private struct State {
        var client: PostgresClient
        var runner: Task<Void, Never>
        var recovering = false
    }

    private let settings: PostgresSettings
    private let maximumConnections: Int
    private let logger: Logger
    private let state: Mutex<State>

    init(settings: PostgresSettings, maximumConnections: Int, logger: Logger) throws {
        self.settings = settings
        self.maximumConnections = maximumConnections
        self.logger = logger
        let client = PostgresClient(configuration: try settings.clientConfiguration(maximumConnections: maximumConnections), backgroundLogger: poolLogger(logger))
        state = Mutex(State(client: client, runner: Task { await client.run() }))
    }

    /// The current pool.
    var client: PostgresClient { state.withLock { $0.client } }

    /// Called after a request failed with a pool error: replaces the pool if PostgreSQL is
    /// reachable again (one attempt at a time; the others return at once).
    func recover() async {
        let proceed = state.withLock { state -> Bool in
            if state.recovering { return false }
            state.recovering = true
            return true
        }
        guard proceed else { return }
        defer { state.withLock { $0.recovering = false } }
        do {
            let probe = try await PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configuration: try settings.connectionConfiguration(), id: 0, logger: logger)
            try? await probe.close()
            let client = PostgresClient(configuration: try settings.clientConfiguration(maximumConnections: maximumConnections), backgroundLogger: poolLogger(logger))
            let runner = Task { await client.run() }
            let old = state.withLock { state -> Task<Void, Never> in
                let old = state.runner
                state.client = client
                state.runner = runner
                return old
            }
            old.cancel()
            logger.warning("PostgreSQL is reachable again: replaced the connection pool")
        } catch {
            // Still unreachable: the next failing request tries again.
        }
    }
}
