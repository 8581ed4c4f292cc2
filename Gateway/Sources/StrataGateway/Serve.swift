import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// `strata-gateway serve`: runs the migrations, starts the LISTEN connection and the HTTP
/// server, prints `strata-gateway listening on http://<host>:<port>` once it accepts
/// connections; SIGTERM/SIGINT shut it down gracefully.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serves the databases over HTTP.")
    @OptionGroup var postgres: PostgresOption
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port (0 = a free one, printed).") var port = 4984
    @Option(help: "The largest revision _bulk_docs accepts, in bytes (JSON with attachment data).") var maxDocumentSize = 20 * 1024 * 1024
    @Option(help: "The largest request body, in bytes.") var maxRequestSize = 64 * 1024 * 1024
    @Option(help: "PostgreSQL connections in this process's pool.") var connections = 16
    @Option(help: "Failed logins of one user allowed per window, then 429 until it ends.") var loginFailuresPerUser = 10
    @Option(help: "Failed logins from one address allowed per window, then 429 until it ends.") var loginFailuresPerAddress = 50
    @Option(help: "The window of the login limits, in seconds.") var loginWindow = 60

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard maxDocumentSize > 0, maxRequestSize > 0 else { throw ValidationError("size limits must be positive") }
        guard connections >= 1 else { throw ValidationError("--connections must be at least 1") }
        guard loginFailuresPerUser >= 1, loginFailuresPerAddress >= 1, loginWindow >= 1 else {
            throw ValidationError("the login limits and their window must be at least 1")
        }
    }

    func run() async throws {
        let logger = makeLogger("strata-gateway")
        let settings = try postgres.settings()
        let pool = try PostgresPool(settings: settings, maximumConnections: connections, logger: logger)
        let notifier = ChangeNotifier()
        let gateway = Gateway(
            pool: pool, logger: logger, notifier: notifier,
            authenticator: Authenticator(pool: pool, logger: logger, limiter: LoginLimiter(
                perUser: loginFailuresPerUser, perAddress: loginFailuresPerAddress, window: .seconds(loginWindow))),
            maxDocumentSize: maxDocumentSize, maxRequestSize: maxRequestSize, metrics: GatewayMetrics(poolConnections: connections))
        let routes = Routes(gateway: gateway)
        let host = self.host
        let app = Application(
            responder: CallbackResponder<GatewayRequestContext> { request, context in
                await routes.respond(to: request, context: context)
            },
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                let actualPort = channel.localAddress?.port ?? 0
                // Written straight to the file descriptor: unbuffered, so a parent reading a
                // pipe sees the line at once.
                FileHandle.standardOutput.write(Data("strata-gateway listening on http://\(host):\(actualPort)\n".utf8))
            },
            logger: logger)
        let listener = ChangeListener(settings: settings, notifier: notifier, pool: pool, logger: logger)
        // The listener runs beside the server (the pool runs its own task); the migrations
        // finish before the server accepts connections.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await listener.run() }
            do {
                try await Migrations.run(pool.client, logger: logger)
                // SIGTERM/SIGINT shut the services down in reverse order: first the waker
                // answers the waiting longpoll requests, then the server finishes the requests
                // in flight and stops.
                let services = ServiceGroup(configuration: .init(
                    services: [
                        .init(service: app),
                        .init(service: LongpollWaker(notifier: notifier), successTerminationBehavior: .ignore),
                    ],
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
                try await services.run()
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }
}

/// On graceful shutdown, wakes every waiting longpoll `_changes` request (they answer at once).
struct LongpollWaker: Service {
    var notifier: ChangeNotifier

    func run() async throws {
        try? await gracefulShutdown()
        await notifier.shutDown()
    }
}
