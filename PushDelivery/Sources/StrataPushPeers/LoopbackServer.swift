import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// An HTTPS server on 127.0.0.1 (ALPN `h2`, optionally `http/1.1`) that hands every request to a
/// peer, numbers and tracks its connections, and can be killed and restarted on the same port.
final class LoopbackServer: Sendable {
    private struct State {
        var listener: (any Channel)?
        var isAccepting = false
        var port: Int
        var connections: [ObjectIdentifier: any Channel] = [:]
        var connectionCount = 0
    }

    private let state: Mutex<State>
    private let sslContext: NIOSSLContext
    private let handle: @Sendable (PeerRequest) -> PeerReply

    /// - Parameters:
    ///   - port: the port of the first start; 0 picks a free one, kept for every restart.
    ///   - allowHTTP1: whether ALPN offers `http/1.1` besides `h2`.
    init(
        port: Int,
        authority: TestCertificateAuthority,
        allowHTTP1: Bool,
        handle: @escaping @Sendable (PeerRequest) -> PeerReply
    ) throws {
        self.state = Mutex(State(port: port))
        self.sslContext = try NIOSSLContext(
            configuration: authority.serverTLSConfiguration(applicationProtocols: allowHTTP1 ? ["h2", "http/1.1"] : ["h2"])
        )
        self.handle = handle
    }

    /// The port: the requested one before the first start, then the bound one.
    var port: Int { state.withLock { $0.port } }

    /// How many connections were accepted since this server was made.
    var connectionCount: Int { state.withLock { $0.connectionCount } }

    /// How many connections are open now.
    var openConnections: Int { state.withLock { $0.connections.count } }

    /// Binds 127.0.0.1 on the port (SO_REUSEADDR, so a restart gets the same port back).
    func start() async throws {
        let (wasAccepting, port) = state.withLock { state in
            defer { state.isAccepting = true }
            return (state.isAccepting, state.port)
        }
        if wasAccepting { return }
        let sslContext = self.sslContext
        let handle = self.handle
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [weak self] channel in
                guard let self, let number = self.register(channel) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                }.flatMap {
                    channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { channel in
                            var connection = NIOHTTP2Handler.ConnectionConfiguration()
                            connection.initialSettings = [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
                            ]
                            return channel.configureHTTP2Pipeline(
                                mode: .server,
                                connectionConfiguration: connection,
                                streamConfiguration: NIOHTTP2Handler.StreamConfiguration()
                            ) { stream in
                                stream.eventLoop.makeCompletedFuture {
                                    try stream.pipeline.syncOperations.addHandlers([
                                        HTTP2FramePayloadToHTTP1ServerCodec(),
                                        PeerHTTPHandler(connection: number, isHTTP2: true, handle: handle),
                                    ])
                                }
                            }.map { _ in }
                        },
                        http1ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                                try channel.pipeline.syncOperations.addHandler(
                                    PeerHTTPHandler(connection: number, isHTTP2: false, handle: handle)
                                )
                            }
                        }
                    )
                }
            }
        let listener: any Channel
        do {
            listener = try await Self.bind(bootstrap, port: port)
        } catch {
            state.withLock { $0.isAccepting = false }
            throw error
        }
        state.withLock { state in
            state.listener = listener
            state.port = listener.localAddress?.port ?? port
        }
    }

    /// Binds 127.0.0.1:`port`, retrying for up to 5 s while the port is in use: on a restart, a
    /// client retrying against the dead port may briefly hold it (a loopback connection to a port
    /// of the ephemeral range can get that very port as its own, and connect to itself).
    private static func bind(_ bootstrap: ServerBootstrap, port: Int) async throws -> any Channel {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                return try await bootstrap.bind(host: "127.0.0.1", port: port).get()
            } catch let error as IOError where error.errnoCode == EADDRINUSE && port != 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Kills the server: closes the listener and every connection at once, without a GOAWAY or an
    /// answer to what is pending.
    func stop() async {
        let (listener, connections) = state.withLock { state in
            let taken = (state.listener, Array(state.connections.values))
            state.listener = nil
            state.isAccepting = false
            state.connections.removeAll()
            return taken
        }
        try? await listener?.close()
        for connection in connections {
            try? await connection.close()
        }
    }

    /// Numbers and tracks an accepted connection; nil when the server is stopped.
    private func register(_ channel: any Channel) -> Int? {
        let number: Int? = state.withLock { state in
            guard state.isAccepting else { return nil }
            state.connectionCount += 1
            state.connections[ObjectIdentifier(channel)] = channel
            return state.connectionCount
        }
        if number != nil {
            channel.closeFuture.whenComplete { [weak self] _ in
                _ = self?.state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return number
    }
}
