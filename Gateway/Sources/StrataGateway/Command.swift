import ArgumentParser
import Foundation
import Logging
import PostgresNIO

/// `strata-gateway`: the HTTP gateway between Strata's replicator and PostgreSQL, and its admin
/// commands (COMMON.md "Fixed command lines").
@main
struct StrataGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-gateway",
        abstract: "Serves Strata databases for replication, keeping every revision in PostgreSQL.",
        subcommands: [Serve.self, Migrate.self, DatabaseCommand.self, UserCommand.self, SeriesCommand.self])
}

/// The `--postgres` option shared by every subcommand.
struct PostgresOption: ParsableArguments {
    @Option(name: .long, help: "PostgreSQL URL postgres://user[:password]@host[:port]/database (default: $STRATA_GATEWAY_POSTGRES)")
    var postgres: String?

    func settings() throws -> PostgresSettings { try PostgresSettings.resolve(postgres) }
}

/// Installs the log handler once per process: JSON lines (JSONLogHandler) unless
/// `LOG_FORMAT=text`.
private let loggingBootstrap: Void = {
    if ProcessInfo.processInfo.environment["LOG_FORMAT"] != "text" {
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
    }
}()

func makeLogger(_ label: String) -> Logger {
    _ = loggingBootstrap
    var logger = Logger(label: label)
    logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
    return logger
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Creates or updates the gateway's tables (idempotent).")
    @OptionGroup var postgres: PostgresOption

    func run() async throws {
        let logger = makeLogger("strata-gateway")
        let applied = try await withPostgresClient(try postgres.settings(), logger: logger) { client in
            try await Migrations.run(client, logger: logger)
        }
        print(applied.isEmpty ? "schema up to date" : "applied migrations \(applied.map(String.init).joined(separator: ", "))")
    }
}

struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "database", abstract: "Creates and lists databases.", subcommands: [Create.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Creates a database (exit 0 when it exists already).")
        @Argument(help: "The database name: ^[a-z][a-z0-9_$()+/-]*$, at most 128 bytes.") var name: String
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let logger = makeLogger("strata-gateway")
            let name = self.name
            let created = try await withPostgresClient(try postgres.settings(), logger: logger) { client in
                try await Migrations.run(client, logger: logger)
                return try await Databases.create(name, client: client, logger: logger)
            }
            print(created ? "created database \(name)" : "database \(name) exists already")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists the databases.")
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let logger = makeLogger("strata-gateway")
            let names = try await withPostgresClient(try postgres.settings(), logger: logger) { client in
                try await Migrations.run(client, logger: logger)
                return try await Databases.list(client: client, logger: logger)
            }
            for name in names { print(name) }
        }
    }
}

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manages a database's users and their channels.",
        subcommands: [Add.self, Set.self, Remove.self, List.self])

    /// Runs `body` with the id of the database `name`, or fails naming it.
    static func withDatabase<T: Sendable>(
        _ name: String, _ postgres: PostgresOption,
        _ body: @escaping @Sendable (PostgresClient, Int64, Logger) async throws -> T
    ) async throws -> T {
        let logger = makeLogger("strata-gateway")
        return try await withPostgresClient(try postgres.settings(), logger: logger) { client in
            try await Migrations.run(client, logger: logger)
            guard let id = try await Databases.id(of: name, client: client, logger: logger) else {
                throw CommandError("no database named '\(name)' (create it with: strata-gateway database create \(name))")
            }
            return try await body(client, id, logger)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Adds a user to a database.")
        @Argument var name: String
        @Option(help: "The database.") var database: String
        @Option(help: "The password (stored as a bcrypt hash).") var password: String
        @Option(help: "Channels the user may read, comma-separated; * = every channel.") var read: String = ""
        @Option(help: "Channels the user may write, comma-separated; * = every channel.") var write: String = ""
        @Option(help: "Channel names and series paths the user may read (each with the names below it), comma-separated; * = every path.") var readPaths: String = ""
        @Option(help: "Channel names and series paths the user may write (each with the names below it), comma-separated; * = every path.") var writePaths: String = ""
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let (name, password, read, write) = (self.name, self.password, Users.channels(self.read), Users.channels(self.write))
            let (readPaths, writePaths) = (Users.channels(self.readPaths), Users.channels(self.writePaths))
            guard !name.isEmpty, !name.contains(":") else { throw CommandError("a user name must be non-empty and have no ':'") }
            let added = try await UserCommand.withDatabase(database, postgres) { client, id, logger in
                try await Users.add(name, databaseID: id, password: password, read: read, write: write,
                                    readPaths: readPaths, writePaths: writePaths, client: client, logger: logger)
            }
            guard added else { throw CommandError("user '\(name)' exists already in database '\(database)' (change it with user set)") }
            print("added user \(name) to \(database): read \(read.joined(separator: ",")), write \(write.joined(separator: ",")), read paths \(readPaths.joined(separator: ",")), write paths \(writePaths.joined(separator: ","))")
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Changes a user's password or channels (what is given).")
        @Argument var name: String
        @Option(help: "The database.") var database: String
        @Option(help: "A new password.") var password: String?
        @Option(help: "New read channels, comma-separated; * = every channel.") var read: String?
        @Option(help: "New write channels, comma-separated; * = every channel.") var write: String?
        @Option(help: "New read paths (channel names and series paths), comma-separated; * = every path.") var readPaths: String?
        @Option(help: "New write paths (channel names and series paths), comma-separated; * = every path.") var writePaths: String?
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let (name, password, read, write) = (self.name, self.password, self.read.map(Users.channels), self.write.map(Users.channels))
            let (readPaths, writePaths) = (self.readPaths.map(Users.channels), self.writePaths.map(Users.channels))
            let changed = try await UserCommand.withDatabase(database, postgres) { client, id, logger in
                try await Users.set(name, databaseID: id, password: password, read: read, write: write,
                                    readPaths: readPaths, writePaths: writePaths, client: client, logger: logger)
            }
            guard changed else { throw CommandError("no user '\(name)' in database '\(database)'") }
            print("changed user \(name) of \(database)")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Removes a user from a database.")
        @Argument var name: String
        @Option(help: "The database.") var database: String
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let name = self.name
            let removed = try await UserCommand.withDatabase(database, postgres) { client, id, logger in
                try await Users.remove(name, databaseID: id, client: client, logger: logger)
            }
            guard removed else { throw CommandError("no user '\(name)' in database '\(database)'") }
            print("removed user \(name) from \(database)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists a database's users: name, read and write channels, read and write paths.")
        @Option(help: "The database.") var database: String
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let users = try await UserCommand.withDatabase(database, postgres) { client, id, logger in
                try await Users.list(databaseID: id, client: client, logger: logger).map {
                    [$0.name, $0.read.joined(separator: ","), $0.write.joined(separator: ","), $0.readPaths.joined(separator: ","), $0.writePaths.joined(separator: ",")]
                }
            }
            for user in users { print("\(user[0])\tread=\(user[1])\twrite=\(user[2])\tread-paths=\(user[3])\twrite-paths=\(user[4])") }
        }
    }
}

/// `strata-gateway series ...`: the admin side of time series (PROTOCOL.md "Time series").
struct SeriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "series", abstract: "Manages time series' writer claims.", subcommands: [Release.self])

    struct Release: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Frees a series' writer claim (for a writer gone for good): the next claim by any writer succeeds.")
        @Argument(help: "The series path.") var path: String
        @Option(help: "The database.") var database: String
        @OptionGroup var postgres: PostgresOption

        func run() async throws {
            let path = self.path
            let writer = try await UserCommand.withDatabase(database, postgres) { client, id, logger in
                try await SeriesEvents.release(path, databaseID: id, client: client, logger: logger)
            }
            guard let writer else { throw CommandError("series '\(path)' of database '\(database)' has no writer claim") }
            print("released series \(path) of \(database) (it was claimed by writer \(writer))")
        }
    }
}
