import Logging
import PostgresNIO

/// Database names and their rows (PROTOCOL.md "Databases, users and channels").
enum Databases {
    /// True when `name` matches `^[a-z][a-z0-9_$()+/-]*$` and is at most 128 bytes.
    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 128, first >= 0x61 && first <= 0x7A else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || "_$()+/-".utf8.contains(byte)
        }
    }

    /// Creates the database; false when it existed already.
    static func create(_ name: String, client: PostgresClient, logger: Logger) async throws -> Bool {
        guard isValidName(name) else {
            throw CommandError("bad database name '\(name)': it must match ^[a-z][a-z0-9_$()+/-]*$ and be at most 128 bytes")
        }
        guard name != "metrics" else { throw CommandError("the database name 'metrics' is reserved: GET /metrics serves the gateway's metrics") }
        let rows = try await client.query(
            "INSERT INTO databases (name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING RETURNING id", logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    /// The id of the database named `name`, nil when there is none.
    static func id(of name: String, client: PostgresClient, logger: Logger) async throws -> Int64? {
        for try await id in try await client.query("SELECT id FROM databases WHERE name = \(name)", logger: logger).decode(Int64.self) {
            return id
        }
        return nil
    }

    /// Every database's name, sorted.
    static func list(client: PostgresClient, logger: Logger) async throws -> [String] {
        var names: [String] = []
        for try await name in try await client.query("SELECT name FROM databases ORDER BY name", logger: logger).decode(String.self) {
            names.append(name)
        }
        return names
    }
}
