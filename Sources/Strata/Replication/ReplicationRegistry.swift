import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The running replications of a store's document databases, so that
/// ``DocumentDatabase/stopReplication()`` and the store's close can stop them. Each store owns
/// one (``Store/replications``): nothing about replication is shared between stores.
///
/// ```swift
/// store.replications.add(replication, to: state)
/// store.replications.stopEverything()     // Store.close
/// ```
final class ReplicationRegistry: Sendable {

    /// Replications by database state (the state is kept alive by its replications' handles, so
    /// its identifier is not reused while it has an entry).
    private let running = Mutex<[ObjectIdentifier: [ObjectIdentifier: Replication]]>([:])

    func add(_ replication: Replication, to state: AnyObject) {
        running.withLock { $0[ObjectIdentifier(state), default: [:]][ObjectIdentifier(replication)] = replication }
    }

    func remove(_ replication: Replication, from state: AnyObject) {
        running.withLock { all in
            let key = ObjectIdentifier(state)
            all[key]?[ObjectIdentifier(replication)] = nil
            if all[key]?.isEmpty == true { all[key] = nil }
        }
    }

    /// The replications of `state` running now.
    func replications(of state: AnyObject) -> [Replication] {
        running.withLock { Array(($0[ObjectIdentifier(state)] ?? [:]).values) }
    }

    /// Stops every replication of `state`.
    func stopAll(of state: AnyObject) {
        for replication in replications(of: state) { replication.stop() }
    }

    /// Stops every replication of the store, which closes: their event streams end by throwing
    /// ``StrataError/closed``.
    func stopEverything() {
        for replication in running.withLock({ $0.values.flatMap(\.values) }) { replication.stopForClose() }
    }
}
