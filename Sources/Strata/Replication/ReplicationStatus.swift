@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Where a replication is (``Replication/status``), as Couchbase Lite's replicator states.
///
/// ```swift
/// if case .offline = replication.status { showBanner("waiting for the gateway") }
/// ```
public enum ReplicationStatus: Sendable, Equatable {
    /// Reading checkpoints or moving documents.
    case active
    /// A repeating replication that has caught up and waits for changes on either side.
    case idle
    /// Waiting to try again after a network error or a server fault.
    case offline
    /// A one-time replication that finished.
    case completed
    /// Stopped by ``Replication/stop()``, ``DocumentDatabase/stopReplication()`` or the store's
    /// close.
    case stopped
    /// Ended with the error (also reported as ``ReplicationEvent/failed(_:)``).
    case failed(StrataError)

    /// Whether the replication has ended (completed, stopped or failed).
    public var isFinal: Bool {
        switch self {
        case .completed, .stopped, .failed: return true
        case .active, .idle, .offline: return false
        }
    }
}
