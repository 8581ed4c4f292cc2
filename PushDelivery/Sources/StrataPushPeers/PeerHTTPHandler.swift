import NIOCore
import NIOHTTP1

/// The request handler of a peer's connection (HTTP/1.1) or stream (HTTP/2, behind
/// `HTTP2FramePayloadToHTTP1ServerCodec`): collects one request, asks the peer what to do, does it.
final class PeerHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: Int
    private let isHTTP2: Bool
    private let handle: @Sendable (PeerRequest) -> PeerReply
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var isActive = true

    init(connection: Int, isHTTP2: Bool, handle: @escaping @Sendable (PeerRequest) -> PeerReply) {
        self.connection = connection
        self.isHTTP2 = isHTTP2
        self.handle = handle
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
        case .body(var buffer):
            body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
        case .end:
            guard let head else { return }
            self.head = nil
            let request = PeerRequest(
                method: head.method.rawValue,
                path: head.uri,
                headers: head.headers,
                body: body,
                connection: connection,
                isHTTP2: isHTTP2
            )
            perform(handle(request), context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        isActive = false
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    private func perform(_ reply: PeerReply, context: ChannelHandlerContext) {
        guard isActive else { return }
        switch reply {
        case .respond(let status, let fields, let bytes):
            var headers = HTTPHeaders(fields)
            headers.replaceOrAdd(name: "content-length", value: String(bytes.count))
            let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !bytes.isEmpty {
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes)))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .delay(let duration, let next):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .nanoseconds(duration.nanoseconds)) {
                let (handler, context) = bound.value
                handler.perform(next, context: context)
            }
        case .reset:
            // Closing an HTTP/2 stream channel before its end sends RST_STREAM (CANCEL).
            context.close(promise: nil)
        case .noAnswer:
            break
        }
    }
}
