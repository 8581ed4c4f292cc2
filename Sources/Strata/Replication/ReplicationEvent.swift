@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a replication reports through ``Replication/events(bufferSize:)``.
///
/// ```swift
/// for try await event in try replication.events() {
///     switch event {
///     case .sending(let p): print("sent \(p.completed) of \(p.total)")
///     case .receiving(let p): print("received \(p.completed) of \(p.total)")
///     case .completed: print("caught up")
///     case .failed(let error): print("failed: \(error)")
///     }
/// }
/// ```
public enum ReplicationEvent: Sendable, Equatable {
    /// Local documents were sent to the gateway (after each batch).
    case sending(Progress)
    /// Documents were received from the gateway and committed locally (after each batch).
    case receiving(Progress)
    /// Every direction caught up. A one-time replication then ends; a repeating one reports this
    /// each time it catches up again after new changes, and goes on.
    case completed
    /// The replication ended with an error: a 4xx answer of the gateway (bad credentials,
    /// missing rights, an unknown database: ``StrataError/network(_:)``), retries used up, or a
    /// local error. The stream then ends by throwing the error.
    case failed(StrataError)

    /// How far a direction of a replication has got: documents done, of those known so far.
    ///
    /// ```swift
    /// if case .receiving(let p) = event { print("\(p.completed)/\(p.total)") }
    /// ```
    public struct Progress: Sendable, Hashable {
        /// Documents done since the replication started (received and committed, or sent and
        /// acknowledged; documents the filter held back or the gateway refused count as done).
        public var completed: Int
        /// Documents known to need doing since the replication started: ``completed`` and those
        /// of the changes read and not done yet.
        public var total: Int

        /// A progress of `completed` of `total` documents.
        public init(completed: Int, total: Int) {
            self.completed = completed
            self.total = total
        }
    }
}
