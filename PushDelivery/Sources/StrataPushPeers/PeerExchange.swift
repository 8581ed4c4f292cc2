import Foundation
import NIOHTTP1

/// One request as a peer sees it, whichever HTTP version carried it.
struct PeerRequest: Sendable {
    /// `:method` (HTTP/2) or the request line's method.
    var method: String
    /// `:path` (HTTP/2) or the request line's target, query included.
    var path: String
    /// The header fields; lookups are case-insensitive.
    var headers: HTTPHeaders
    /// The request body, as received.
    var body: [UInt8]
    /// The number of the connection that carried it (1 for the first connection a peer accepted).
    var connection: Int
    /// Whether HTTP/2 carried it (ALPN `h2`).
    var isHTTP2: Bool
}

/// What a peer does with one request.
indirect enum PeerReply: Sendable {
    /// Answers with this status, header fields and body.
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    /// Waits, then does the other thing.
    case delay(Duration, then: PeerReply)
    /// Resets the HTTP/2 stream (`RST_STREAM`); on HTTP/1.1, closes the connection.
    case reset
    /// Never answers (the client's timeout decides).
    case noAnswer

    /// A JSON answer.
    static func json(_ status: Int, _ object: Any, headers: [(String, String)] = []) -> PeerReply {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return .respond(status: status, headers: [("content-type", "application/json")] + headers, body: Array(body))
    }
}

extension Duration {
    /// The duration in nanoseconds, for NIO's `TimeAmount`.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The duration in seconds, for `Date` arithmetic.
    var timeInterval: TimeInterval {
        Double(nanoseconds) / 1e9
    }
}
