import Logging
import PostgresNIO

/// The gateway's PostgreSQL schema, as numbered migrations applied in order and recorded in
/// `schema_migrations`. They run in one transaction holding a transaction-scoped advisory lock,
/// so that two gateway processes starting at once apply each migration exactly once.
enum Migrations {
    /// The advisory lock key of the migration runner (arbitrary, fixed: "strata-gw").
    static let lockKey: Int64 = 0x7374_7261_7461_6777

    /// Each migration: its version and its statements (one statement per string: the extended
    /// query protocol takes one at a time).
    static let all: [(version: Int, statements: [String])] = [
        (1, [
            // A database: its name and the counter its change sequences come from. Writers
            // allocate sequences with `UPDATE databases SET seq = seq + n`, so the row lock
            // orders their commits in sequence order.
            """
            CREATE TABLE databases (
                id bigserial PRIMARY KEY,
                name text NOT NULL UNIQUE,
                seq bigint NOT NULL DEFAULT 0,
                created_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            // Users per database: a bcrypt hash, and the channels they may read and write
            // ('*' = every channel).
            """
            CREATE TABLE users (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                name text NOT NULL,
                password_hash text NOT NULL,
                read_channels text[] NOT NULL,
                write_channels text[] NOT NULL,
                PRIMARY KEY (db, name)
            )
            """,
            // A document: its winning revision (CouchDB's rule over its leaves), whether that
            // winner is a deletion, and the sequence of its newest change.
            """
            CREATE TABLE documents (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                doc_id text NOT NULL,
                winning_rev text NOT NULL,
                deleted boolean NOT NULL,
                seq bigint NOT NULL,
                PRIMARY KEY (db, doc_id)
            )
            """,
            // _changes?since=S is a range scan of this index.
            "CREATE INDEX documents_by_seq ON documents (db, seq)",
            // Every revision of every document: its tree through parent_rev (a history is
            // rebuilt by following parents), the leaves flagged. body is the revision's JSON
            // without _id, _rev and _revisions (attachments inline as given); NULL for an
            // ancestor known only from a descendant's _revisions. channels are those the body
            // names (a deletion naming none inherits its parent's, see BulkDocs.swift).
            """
            CREATE TABLE revisions (
                db bigint NOT NULL,
                doc_id text NOT NULL,
                rev_id text NOT NULL,
                generation integer NOT NULL,
                digest text NOT NULL,
                parent_rev text,
                deleted boolean NOT NULL,
                is_leaf boolean NOT NULL,
                channels text[] NOT NULL,
                body text,
                PRIMARY KEY (db, doc_id, rev_id)
            )
            """,
            "CREATE INDEX revisions_leaves ON revisions (db, doc_id) WHERE is_leaf",
            // Local documents (replication checkpoints): never in _changes, never replicated.
            // rev is K of the revision id 0-K.
            """
            CREATE TABLE local_documents (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                doc_id text NOT NULL,
                rev bigint NOT NULL,
                body text NOT NULL,
                PRIMARY KEY (db, doc_id)
            )
            """,
        ]),
        (2, [
            // Issue 24: _local documents belong to the user who wrote them (a user who knew
            // another's checkpoint id could overwrite it). Rows written before this migration
            // belong to no user (owner ''): their replications start again from the beginning,
            // which the replication protocol makes safe (every step is idempotent).
            "ALTER TABLE local_documents ADD COLUMN owner text NOT NULL DEFAULT ''",
            "ALTER TABLE local_documents DROP CONSTRAINT local_documents_pkey",
            "ALTER TABLE local_documents ADD PRIMARY KEY (db, owner, doc_id)",
        ]),
        (3, [
            // CouchDB's cookie sessions (POST /_session): a SHA-256 of the token (never the
            // token), the user name, and the databases where its password matched.
            """
            CREATE TABLE sessions (
                token_hash text PRIMARY KEY,
                name text NOT NULL,
                dbs bigint[] NOT NULL,
                expires timestamptz NOT NULL
            )
            """,
            "CREATE INDEX sessions_by_expiry ON sessions (expires)",
        ]),
        (4, [
            // Channels and time series (PROTOCOL.md "Channels and time series"). A user's path
            // rights: the channel names and series paths it may read and write, each covering
            // the names below it in whole '/' segments ('*' = every path; none by default).
            "ALTER TABLE users ADD COLUMN read_paths text[] NOT NULL DEFAULT '{}'",
            "ALTER TABLE users ADD COLUMN write_paths text[] NOT NULL DEFAULT '{}'",
            // A channel: the largest timetoken it ever assigned (the next one is above it, even
            // after its messages are deleted).
            """
            CREATE TABLE channels (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                name text NOT NULL,
                last_timetoken bigint NOT NULL,
                PRIMARY KEY (db, name)
            )
            """,
            // A channel's messages: its timetoken, its idempotency id (unique per channel, kept
            // after a deletion so that a retried publish adds nothing), the database sequence of
            // its publication, and the JSON texts of its message, meta and publisher as they
            // arrived. A deleted message keeps its row (deleted, its texts emptied).
            """
            CREATE TABLE channel_messages (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                channel text NOT NULL,
                timetoken bigint NOT NULL,
                id text NOT NULL,
                seq bigint NOT NULL,
                message text NOT NULL,
                meta text,
                publisher text,
                deleted boolean NOT NULL DEFAULT false,
                PRIMARY KEY (db, channel, timetoken)
            )
            """,
            "CREATE UNIQUE INDEX channel_messages_by_id ON channel_messages (db, channel, id)",
            // The change feed (GET /{db}/_strata/changes) is a range scan of these indexes.
            "CREATE INDEX channel_messages_by_seq ON channel_messages (db, seq)",
            // ... and, with a `channels` filter, of this one.
            "CREATE INDEX channel_messages_by_channel_seq ON channel_messages (db, channel, seq)",
            // A deletion of a channel's messages from <= timetoken < until, at its sequence.
            """
            CREATE TABLE channel_deletions (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                seq bigint NOT NULL,
                channel text NOT NULL,
                from_timetoken bigint NOT NULL,
                until_timetoken bigint NOT NULL,
                PRIMARY KEY (db, seq)
            )
            """,
            // A time series: the writer holding its claim (NULL: none), its first sequence, the
            // sequence of its next event, and its last event's timestamp (NULL: no event yet).
            """
            CREATE TABLE series (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                path text NOT NULL,
                writer text,
                start bigint NOT NULL DEFAULT 0,
                next bigint NOT NULL DEFAULT 0,
                last_timestamp bigint,
                PRIMARY KEY (db, path)
            )
            """,
            // A series' events by the writer's sequence, with the database sequence of their
            // append; value is the JSON text as it arrived; original names the edited event.
            """
            CREATE TABLE series_events (
                db bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
                path text NOT NULL,
                sequence bigint NOT NULL,
                seq bigint NOT NULL,
                timestamp bigint NOT NULL,
                author text NOT NULL,
                value text NOT NULL,
                original bigint,
                PRIMARY KEY (db, path, sequence)
            )
            """,
            "CREATE INDEX series_events_by_seq ON series_events (db, seq)",
            "CREATE INDEX series_events_by_path_seq ON series_events (db, path, seq)",
        ]),
    ]

    /// Applies the migrations not applied yet; returns the versions it applied.
    @discardableResult
    static func run(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var applied = Set<Int>()
            for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger).decode(Int.self) {
                applied.insert(version)
            }
            var done: [Int] = []
            for migration in all where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (version) VALUES (\(migration.version))", logger: logger)
                done.append(migration.version)
            }
            return done
        }
    }
}
