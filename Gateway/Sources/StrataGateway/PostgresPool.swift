import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// The serving process's connection pool, replaced by a fresh one when PostgreSQL goes away and
/// comes back.
///
/// postgres-nio's pool keeps a request waiting for a connection while PostgreSQL is down until
/// its circuit breaker opens (60 s), then fails every request at once until a backed-off retry
/// succeeds (~15 s after PostgreSQL is back). Neither suits a gateway whose clients retry 503s,
/// so: the LISTEN connection (ChangeListener) reports losing PostgreSQL (`connectionLost`: the
/// pool is replaced, which fails the waiting requests, and requests answer 503 at once while
/// `isReachable` is false) and finding it again (`connectionRestored`: a fresh pool). A
/// request failing with a pool error also tries `recover`.
final class PostgresPool: Sendable {
    private struct State {
        var client: PostgresClient
        var runner: Task<Void, Never>
        var recovering = false
        var reachable = true
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

    /// False from the loss of the LISTEN connection until it connects again.
    var isReachable: Bool { state.withLock { $0.reachable } }

    /// Swaps in a new pool and stops the old one (its waiting requests fail).
    private func replace() {
        guard let configuration = try? settings.clientConfiguration(maximumConnections: maximumConnections) else { return }
        let client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger(logger))
        let runner = Task { await client.run() }
        let old = state.withLock { state -> Task<Void, Never> in
            let old = state.runner
            state.client = client
            state.runner = runner
            return old
        }
        old.cancel()
    }

    /// The LISTEN connection failed: PostgreSQL is presumed gone.
    func connectionLost() {
        let wasReachable = state.withLock { state -> Bool in
            defer { state.reachable = false }
            return state.reachable
        }
        if wasReachable {
            logger.warning("lost PostgreSQL: answering 503 until it is back")
            replace()
        }
    }

    /// The LISTEN connection is up again.
    func connectionRestored() {
        let wasReachable = state.withLock { $0.reachable }
        if !wasReachable {
            replace()
            state.withLock { $0.reachable = true }
            logger.warning("PostgreSQL is back: new connection pool")
        }
    }

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
            replace()
            logger.warning("PostgreSQL is reachable again: replaced the connection pool")
        } catch {
            // Still unreachable: the next failing request tries again.
        }
    }
}
