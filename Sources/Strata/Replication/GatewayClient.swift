import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP side of a replication: requests to one gateway database (`Gateway/PROTOCOL.md`,
/// "Endpoints") with its credentials, answers parsed as ``JSON``, and faults sorted into those
/// worth another attempt (network errors, 5xx) and those that are not (4xx).
///
/// ```swift
/// let client = GatewayClient(configuration: config)
/// let info = try await client.json("GET", "")          // {"db_name": …, "update_seq": …}
/// ```
final class GatewayClient: Sendable {
    /// A failed request.
    enum Fault: Error {
        /// A network error or a 5xx answer: try again later. The text names the request.
        case transient(String)
        /// A 4xx answer (other than those the caller expects) or a malformed answer: the
        /// replication fails with it.
        case permanent(StrataError)
    }

    /// An answer: status and parsed body (`.null` when the body is empty).
    struct Answer: Sendable {
        let status: Int
        let body: JSON
    }

    let base: String
    private let authorization: String?
    private let session: URLSession
    private let requestTimeout: TimeInterval

    init(configuration: ReplicationConfiguration) {
        self.base = configuration.baseURLString
        self.authorization = configuration.authentication.headerValue
        self.requestTimeout = Self.seconds(configuration.requestTimeout)
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.httpMaximumConnectionsPerHost = 6
        sessionConfiguration.timeoutIntervalForRequest = requestTimeout + Self.seconds(configuration.longpollTimeout)
        sessionConfiguration.timeoutIntervalForResource = requestTimeout + Self.seconds(configuration.longpollTimeout) + 60
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpCookieStorage = nil
        self.session = URLSession(configuration: sessionConfiguration, delegate: ChallengeRefuser(), delegateQueue: nil)
    }

    /// Answers every authentication challenge (a 401 with `WWW-Authenticate`) by cancelling it:
    /// the credentials are in the request's `Authorization` header already, so a challenge means
    /// they were refused. (Without a delegate, FoundationNetworking of Swift 6.3.1 never completes
    /// such a request: swift-corelibs-foundation issue 5456.) The task then fails as cancelled,
    /// which ``perform(_:what:)`` reports as a 401.
    private final class ChallengeRefuser: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    /// Set once ``invalidate()`` ran: no task is made on the session after it, because
    /// FoundationNetworking traps ("Session invalidated") on `dataTask` of an invalidated session —
    /// a prefetch cancelled but not yet finished when the replication ends would otherwise make one.
    private let invalidated = Mutex(false)

    /// Ends the session's connections; later requests fail with `CancellationError`.
    func invalidate() {
        invalidated.withLock { $0 = true }
        session.invalidateAndCancel()
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (s, attoseconds) = duration.components
        return TimeInterval(s) + TimeInterval(attoseconds) / 1e18
    }

    /// The URL of `path` (relative to the database, e.g. `_changes`) with the query items.
    func url(_ path: String, query: [(String, String)] = []) -> URL? {
        var text = base
        if !path.isEmpty { text += "/" + path }
        if !query.isEmpty {
            var components = URLComponents()
            components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) }
            // `+` would read as a space in a query; channel names may hold one.
            text += "?" + (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        }
        return URL(string: text)
    }

    /// Sends a request and returns the answer when its status is 2xx or one of `accepting`.
    ///
    /// - Parameter extraTimeout: added to the request timeout (a long poll's wait).
    /// - Throws: ``Fault/transient(_:)`` for a network error or a 5xx status;
    ///   ``Fault/permanent(_:)`` for another status, or a body that is not JSON;
    ///   `CancellationError` when the task is cancelled.
    func send(_ method: String, _ path: String, query: [(String, String)] = [], body: JSON? = nil,
              accepting: Set<Int> = [], extraTimeout: TimeInterval = 0) async throws -> Answer {
        try await send(method, path, query: query, bodyText: body?.jsonData(), accepting: accepting, extraTimeout: extraTimeout)
    }

    /// ``send(_:_:query:body:accepting:extraTimeout:)`` with a body that is JSON text already.
    func send(_ method: String, _ path: String, query: [(String, String)] = [], bodyText: Data?,
              accepting: Set<Int> = [], extraTimeout: TimeInterval = 0) async throws -> Answer {
        let (data, status, what) = try await exchange(method, path, query: query, bodyText: bodyText, extraTimeout: extraTimeout)
        let parsed = try Self.parsed(data, status: status, what: what)
        if (200..<300).contains(status) || accepting.contains(status) { return Answer(status: status, body: parsed) }
        throw Self.failure(status, parsed, what: what)
    }

    /// ``send(_:_:query:bodyText:accepting:extraTimeout:)`` for a caller that reads the answer's
    /// text itself: the status and text of a 2xx answer or one of `accepting`, unparsed. Other
    /// statuses throw as there.
    func sendForText(_ method: String, _ path: String, query: [(String, String)] = [], accepting: Set<Int> = [],
                     extraTimeout: TimeInterval = 0) async throws -> (status: Int, text: Data) {
        let (data, status, what) = try await exchange(method, path, query: query, bodyText: nil, extraTimeout: extraTimeout)
        if (200..<300).contains(status) || accepting.contains(status) { return (status, data) }
        throw Self.failure(status, try Self.parsed(data, status: status, what: what), what: what)
    }

    /// An answer's body as JSON (`null` when empty); a body that is not JSON is a transient fault
    /// with a 5xx status, a permanent one otherwise.
    private static func parsed(_ data: Data, status: Int, what: String) throws -> JSON {
        if data.isEmpty { return .null }
        do {
            return try JSON(parsing: data)
        } catch {
            if status >= 500 { throw Fault.transient("\(what): \(status), body is not JSON") }
            throw Fault.permanent(.network("\(what): the answer (status \(status)) is not JSON: \(error)"))
        }
    }

    /// Makes and performs the request; returns the answer's body and status, and the request's
    /// description for messages.
    private func exchange(_ method: String, _ path: String, query: [(String, String)], bodyText: Data?,
                          extraTimeout: TimeInterval) async throws -> (Data, Int, String) {
        guard let url = url(path, query: query) else {
            throw Fault.permanent(.invalidArgument(argument: "url", reason: "replication: cannot form a URL from \(base.debugDescription) and \(path.debugDescription)"))
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = requestTimeout + extraTimeout
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        if let bodyText {
            request.httpBody = bodyText
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let what = "\(method) \(url.absoluteString)"
        let (data, status) = try await perform(request, what: what)
        return (data, status, what)
    }

    /// The fault of an answer with a status that is not accepted: transient for 5xx, 408 and 429.
    private static func failure(_ status: Int, _ parsed: JSON, what: String) -> Fault {
        let kind = parsed["error"]?.stringValue ?? "error"
        let reason = parsed["reason"]?.stringValue ?? ""
        let text = "\(what): \(status) \(kind)\(reason.isEmpty ? "" : ": " + reason)"
        if status >= 500 || status == 408 || status == 429 { return Fault.transient(text) }
        return Fault.permanent(.network(text))
    }

    private func perform(_ request: URLRequest, what: String) async throws -> (Data, Int) {
        /// The request's task and continuation: the continuation is resumed exactly once, by the
        /// first of the completion handler and cancellation (an invalidated session also calls
        /// the handlers of tasks never resumed).
        final class Exchange: @unchecked Sendable {
            // Every member is read and written under `lock`.
            let lock = NSLock()
            var task: URLSessionDataTask?
            var continuation: CheckedContinuation<(Data, Int), any Error>?
            var cancelled = false

            func finish(_ result: Result<(Data, Int), any Error>) {
                let continuation = lock.withLock { () -> CheckedContinuation<(Data, Int), any Error>? in
                    defer { self.continuation = nil }
                    return self.continuation
                }
                continuation?.resume(with: result)
            }
        }
        let exchange = Exchange()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, Int), any Error>) in
                // Made under the lock `invalidate()` sets its flag with, so never on an invalidated session.
                let made = invalidated.withLock { isInvalidated -> URLSessionDataTask? in
                    if isInvalidated { return nil }
                    return session.dataTask(with: request) { data, response, error in
                        if let error {
                            let nsError = error as NSError
                            if nsError.domain == NSURLErrorDomain,
                               nsError.code == NSURLErrorCancelled || nsError.code == NSURLErrorUserCancelledAuthentication {
                                let cancelledByUs = exchange.lock.withLock { exchange.cancelled }
                                exchange.finish(.failure(cancelledByUs ? CancellationError()
                                    : Fault.permanent(.network("\(what): 401 unauthorized: the gateway refused the credentials"))))
                            } else {
                                exchange.finish(.failure(Fault.transient("\(what): \(error.localizedDescription)")))
                            }
                            return
                        }
                        guard let http = response as? HTTPURLResponse else {
                            exchange.finish(.failure(Fault.transient("\(what): no HTTP response")))
                            return
                        }
                        exchange.finish(.success((data ?? Data(), http.statusCode)))
                    }
                }
                guard let task = made else {
                    exchange.lock.withLock { exchange.continuation = continuation }
                    exchange.finish(.failure(CancellationError()))
                    return
                }
                let cancelled = exchange.lock.withLock { () -> Bool in
                    exchange.task = task
                    exchange.continuation = continuation
                    return exchange.cancelled
                }
                if cancelled {
                    exchange.finish(.failure(CancellationError()))
                    task.cancel()
                } else {
                    task.resume()
                }
            }
        } onCancel: {
            let task = exchange.lock.withLock { () -> URLSessionDataTask? in
                exchange.cancelled = true
                return exchange.task
            }
            task?.cancel()
        }
    }
}
