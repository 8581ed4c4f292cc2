import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a replication does: which gateway database, in which directions, once or repeating,
/// which channels, which local documents it sends, and with which credentials.
///
/// ```swift
/// var config = ReplicationConfiguration.repeatingBidirectionalReplication(
///     with: URL(string: "http://127.0.0.1:4984/main")!)
/// config.authentication = .basic(user: "alice", password: "secret")
/// config.limitToChannels = ["east"]
/// config.filter = { document, parameters in document["owner"] == parameters["owner"] }
/// config.filterParameters = ["owner": "alice"]
/// let replication = try db.startReplication(with: config)
/// ```
///
/// Besides PredixSDK's settings it has tuning knobs with defaults that suit most uses:
/// ``batchSize``, ``longpollTimeout``, ``maximumRetries``, ``maximumRetryDelay``,
/// ``requestTimeout`` and ``revisionHistoryLimit``; and a client-to-server mode, ``pushOnly``
/// (``oneTimeClientToServerReplication(with:)``).
public struct ReplicationConfiguration: Sendable {
    /// The gateway database, e.g. `http://127.0.0.1:4984/main` (a trailing `/` is ignored).
    public var url: URL
    /// Whether the replication keeps following both sides until stopped (true), or ends after
    /// one exchange (false).
    public var repeating: Bool
    /// Whether local changes are sent to the gateway too (true), or only the gateway's changes
    /// are received (false: server to client). With ``pushOnly``, local changes are sent and
    /// nothing is received.
    public var bidirectional: Bool
    /// Whether only local changes are sent, and nothing is received (client to server; default
    /// false). An addition to PredixSDK's choices, for uploads and for measuring a push alone.
    public var pushOnly: Bool
    /// The channels received from the gateway; empty: every channel the user may read.
    public var limitToChannels: [String]
    /// Which local documents are sent: called with each document's winning revision and
    /// ``filterParameters``; nil sends every document. Deletions are always sent (a deletion
    /// has no fields to judge, and holding one back would keep the document alive on the
    /// gateway).
    public var filter: (@Sendable (Document, [String: JSON]) -> Bool)?
    /// The parameters passed to ``filter``.
    public var filterParameters: [String: JSON]
    /// A name for ``filter``, part of the checkpoint id with ``filterParameters``: give a new
    /// name when the filter's logic changes, so that documents it held back before are looked at
    /// again. nil: `"filter"` when a filter is set.
    public var filterName: String?
    /// The credentials sent to the gateway.
    public var authentication: ReplicationAuthentication
    /// Documents per batch: per `_bulk_get` and `_bulk_docs` request and per atomic local
    /// commit (default 500; 1...10,000).
    public var batchSize: Int
    /// How long a repeating replication's `_changes` request waits at the gateway for a change
    /// before it asks again (default 30 s; the gateway allows at most 300 s).
    public var longpollTimeout: Duration
    /// Consecutive failed attempts (network errors and 5xx answers) after which the replication
    /// fails; nil retries until stopped. Default: nil for repeating replications, 10 for one-time
    /// ones.
    public var maximumRetries: Int?
    /// The longest wait between two attempts; waits start at 0.1 s and double (with jitter)
    /// up to this (default 30 s).
    public var maximumRetryDelay: Duration
    /// How long one request (other than a long poll, which gets ``longpollTimeout`` more) may take
    /// before it counts as a network error (default 60 s).
    public var requestTimeout: Duration
    /// Revision ids of history sent with each pushed revision (`_revisions`; default 100, as
    /// CouchDB's `revs_limit` of 1,000 is rarely reached by a document of one application).
    public var revisionHistoryLimit: Int

    /// A configuration for the gateway database at `url`: one-time, bidirectional, every
    /// channel, no filter, no credentials.
    public init(url: URL, repeating: Bool = false, bidirectional: Bool = true) {
        self.url = url
        self.repeating = repeating
        self.bidirectional = bidirectional
        self.pushOnly = false
        self.limitToChannels = []
        self.filter = nil
        self.filterParameters = [:]
        self.filterName = nil
        self.authentication = .none
        self.batchSize = 500
        self.longpollTimeout = .seconds(30)
        self.maximumRetries = repeating ? nil : 10
        self.maximumRetryDelay = .seconds(30)
        self.requestTimeout = .seconds(60)
        self.revisionHistoryLimit = 100
    }

    /// Both directions, following both sides until stopped.
    ///
    /// ```swift
    /// let config = ReplicationConfiguration.repeatingBidirectionalReplication(with: url)
    /// ```
    public static func repeatingBidirectionalReplication(with url: URL) -> ReplicationConfiguration {
        ReplicationConfiguration(url: url, repeating: true, bidirectional: true)
    }

    /// Both directions, once: ends when each side has what the other had when it started.
    ///
    /// ```swift
    /// let config = ReplicationConfiguration.oneTimeBidirectionalReplication(with: url)
    /// ```
    public static func oneTimeBidirectionalReplication(with url: URL) -> ReplicationConfiguration {
        ReplicationConfiguration(url: url, repeating: false, bidirectional: true)
    }

    /// The gateway's changes only, once.
    ///
    /// ```swift
    /// let config = ReplicationConfiguration.oneTimeServerToClientReplication(with: url)
    /// ```
    public static func oneTimeServerToClientReplication(with url: URL) -> ReplicationConfiguration {
        ReplicationConfiguration(url: url, repeating: false, bidirectional: false)
    }

    /// Local changes only, once: ends when the gateway has every local document there was when it
    /// started (``pushOnly``).
    ///
    /// ```swift
    /// let config = ReplicationConfiguration.oneTimeClientToServerReplication(with: url)
    /// ```
    public static func oneTimeClientToServerReplication(with url: URL) -> ReplicationConfiguration {
        var configuration = ReplicationConfiguration(url: url, repeating: false, bidirectional: true)
        configuration.pushOnly = true
        return configuration
    }

    /// Whether the replication receives the gateway's changes.
    var pulls: Bool { !pushOnly }
    /// Whether the replication sends local changes.
    var pushes: Bool { bidirectional || pushOnly }

    /// Throws ``StrataError/invalidArgument(argument:reason:)`` for settings out of range.
    func validate() throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw StrataError.invalidArgument(argument: "url", reason: "replication url \(url.absoluteString.debugDescription) is not an http(s) URL with a host")
        }
        guard (1...10_000).contains(batchSize) else {
            throw StrataError.invalidArgument(argument: "batchSize", reason: "replication batchSize \(batchSize) is outside 1...10000")
        }
        guard longpollTimeout > .zero, longpollTimeout <= .seconds(300) else {
            throw StrataError.invalidArgument(argument: "longpollTimeout", reason: "replication longpollTimeout \(longpollTimeout) is outside (0, 300 s]")
        }
        guard maximumRetries.map({ $0 >= 0 }) ?? true else {
            throw StrataError.invalidArgument(argument: "maximumRetries", reason: "replication maximumRetries \(maximumRetries ?? 0) is negative")
        }
        guard maximumRetryDelay > .zero else {
            throw StrataError.invalidArgument(argument: "maximumRetryDelay", reason: "replication maximumRetryDelay \(maximumRetryDelay) is not positive")
        }
        guard requestTimeout > .zero else {
            throw StrataError.invalidArgument(argument: "requestTimeout", reason: "replication requestTimeout \(requestTimeout) is not positive")
        }
        guard revisionHistoryLimit >= 1 else {
            throw StrataError.invalidArgument(argument: "revisionHistoryLimit", reason: "replication revisionHistoryLimit \(revisionHistoryLimit) is below 1")
        }
        for channel in limitToChannels where channel.isEmpty || channel.contains(",") {
            throw StrataError.invalidArgument(argument: "limitToChannels", reason: "replication channel \(channel.debugDescription) is empty or contains ','")
        }
    }

    /// The database URL's text without a trailing `/`.
    var baseURLString: String {
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
