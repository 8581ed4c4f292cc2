import Foundation
import HummingbirdBcrypt
import Logging
import NIOPosix
import PostgresNIO

/// A user of one database, as authentication finds it.
struct GatewayUser: Sendable {
    var name: String
    var databaseID: Int64
    var read: ChannelAccess
    var write: ChannelAccess
    /// The channel names and series paths the user may read and write (see PathAccess).
    var readPaths: PathAccess = .some([])
    var writePaths: PathAccess = .some([])
}

/// The users table: admin operations (`strata-gateway user ...`) and the lookup behind
/// authentication. Passwords are stored as bcrypt hashes only.
enum Users {
    /// bcrypt's cost: 2^10 rounds, about 50 ms per hash on this kind of machine.
    static let bcryptCost: UInt8 = 10

    /// Splits a `--read`/`--write` option value (`a,b,c`) into channel names.
    static func channels(_ option: String) -> [String] {
        option.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func hash(_ password: String) async throws -> String {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: bcryptCost) }
    }

    static func add(
        _ name: String, databaseID: Int64, password: String, read: [String], write: [String],
        readPaths: [String] = [], writePaths: [String] = [],
        client: PostgresClient, logger: Logger
    ) async throws -> Bool {
        let hash = try await hash(password)
        let rows = try await client.query(
            """
            INSERT INTO users (db, name, password_hash, read_channels, write_channels, read_paths, write_paths)
            VALUES (\(databaseID), \(name), \(hash), \(read), \(write), \(readPaths), \(writePaths))
            ON CONFLICT (db, name) DO NOTHING RETURNING name
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    /// Changes what is given; false when there is no such user.
    static func set(
        _ name: String, databaseID: Int64, password: String?, read: [String]?, write: [String]?,
        readPaths: [String]? = nil, writePaths: [String]? = nil,
        client: PostgresClient, logger: Logger
    ) async throws -> Bool {
        var hash: String? = nil
        if let password { hash = try await Self.hash(password) }
        let rows = try await client.query(
            """
            UPDATE users SET
                password_hash = COALESCE(\(hash), password_hash),
                read_channels = CASE WHEN \(read != nil) THEN \(read ?? [])::text[] ELSE read_channels END,
                write_channels = CASE WHEN \(write != nil) THEN \(write ?? [])::text[] ELSE write_channels END,
                read_paths = CASE WHEN \(readPaths != nil) THEN \(readPaths ?? [])::text[] ELSE read_paths END,
                write_paths = CASE WHEN \(writePaths != nil) THEN \(writePaths ?? [])::text[] ELSE write_paths END
            WHERE db = \(databaseID) AND name = \(name) RETURNING name
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    static func remove(_ name: String, databaseID: Int64, client: PostgresClient, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            "DELETE FROM users WHERE db = \(databaseID) AND name = \(name) RETURNING name", logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    /// A user as `user list` shows it: its channels and its paths.
    struct Listed: Sendable {
        var name: String
        var read: [String], write: [String]
        var readPaths: [String], writePaths: [String]
    }

    static func list(databaseID: Int64, client: PostgresClient, logger: Logger) async throws -> [Listed] {
        var users: [Listed] = []
        let rows = try await client.query(
            "SELECT name, read_channels, write_channels, read_paths, write_paths FROM users WHERE db = \(databaseID) ORDER BY name", logger: logger)
        for try await (name, read, write, readPaths, writePaths) in rows.decode((String, [String], [String], [String], [String]).self) {
            users.append(Listed(name: name, read: read, write: write, readPaths: readPaths, writePaths: writePaths))
        }
        return users
    }

    /// The user `name` of the database `database` with its stored hash, nil when either is missing.
    static func lookup(database: String, name: String, client: PostgresClient, logger: Logger) async throws -> (user: GatewayUser, hash: String)? {
        let rows = try await client.query(
            """
            SELECT d.id, u.password_hash, u.read_channels, u.write_channels, u.read_paths, u.write_paths
            FROM databases d JOIN users u ON u.db = d.id
            WHERE d.name = \(database) AND u.name = \(name)
            """, logger: logger)
        for try await (id, hash, read, write, readPaths, writePaths) in rows.decode((Int64, String, [String], [String], [String], [String]).self) {
            return (GatewayUser(name: name, databaseID: id, read: ChannelAccess(read), write: ChannelAccess(write),
                                readPaths: PathAccess(readPaths), writePaths: PathAccess(writePaths)), hash)
        }
        return nil
    }
}
