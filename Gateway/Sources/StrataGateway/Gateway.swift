import Logging
import PostgresNIO

/// What every request handler shares: the pool, the change notifier, authentication and the
/// size limits. Holds no data of its own: every document, user and checkpoint is in PostgreSQL,
/// so any number of gateway processes may serve one database.
struct Gateway: Sendable {
    var pool: PostgresPool
    /// The current connection pool (see PostgresPool).
    var client: PostgresClient { pool.client }
    var logger: Logger
    var notifier: ChangeNotifier
    var authenticator: Authenticator
    /// The largest revision `_bulk_docs` accepts (its JSON, attachments included).
    var maxDocumentSize: Int
    /// The largest request body (a larger one is refused whole with 413).
    var maxRequestSize: Int
    /// What `GET /metrics` serves.
    var metrics: GatewayMetrics
}
