import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// Wakes the longpoll `_changes` requests of this process when a database changes. Writers (of
/// any gateway process) run `pg_notify('strata_changes', <database name>)` in their transaction;
/// PostgreSQL delivers it at commit to every listener. One dedicated connection per process
/// listens (`ChangeListener`) and calls `notify`, which wakes the waiters of that database.
actor ChangeNotifier {
    /// The PostgreSQL notification channel.
    static let channel = "strata_changes"

    private var versions: [String: UInt64] = [:]
    /// Added to every database's version when notifications may have been missed (the listening
    /// connection was re-established), which wakes everyone.
    private var epoch: UInt64 = 0
    /// A waiting request: its continuation and the one timer that ends its wait at its
    /// deadline (cancelled when a notification ends the wait first, so that no timer outlives
    /// the wait it was made for).
    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>
        var timer: Task<Void, Never>?
    }

    private var waiters: [String: [UInt64: Waiter]] = [:]
    private var nextWaiter: UInt64 = 0
    /// Set when the process shuts down: waits return at once, so that longpoll requests answer
    /// and the graceful shutdown does not wait for their timeouts.
    private var closing = false

    /// A number that changes whenever `database` may have changed.
    func version(of database: String) -> UInt64 {
        epoch &+ versions[database, default: 0]
    }

    func notify(_ database: String) {
        versions[database, default: 0] &+= 1
        if let waiting = waiters.removeValue(forKey: database) {
            for waiter in waiting.values { waiter.timer?.cancel(); waiter.continuation.resume() }
        }
    }

    func shutDown() {
        closing = true
        notifyAll()
    }

    func notifyAll() {
        epoch &+= 1
        let all = waiters
        waiters.removeAll()
        for waiting in all.values {
            for waiter in waiting.values { waiter.timer?.cancel(); waiter.continuation.resume() }
        }
    }

    /// Returns when `database`'s version differs from `version`, or at `deadline`; false when
    /// the process is shutting down (the caller answers at once).
    @discardableResult
    func wait(_ database: String, after version: UInt64, until deadline: ContinuousClock.Instant) async -> Bool {
        guard !closing else { return false }
        guard self.version(of: database) == version, deadline > .now else { return true }
        let id = nextWaiter
        nextWaiter &+= 1
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let timer = Task {
                do {
                    try await Task.sleep(until: deadline, clock: .continuous)
                } catch {
                    return  // cancelled: the wait ended first
                }
                self.timeOut(database, id)
            }
            waiters[database, default: [:]][id] = Waiter(continuation: continuation, timer: timer)
        }
        return !closing
    }

    /// What changed in a database between two sequences: for each changed document, the
    /// channels of its leaves. Fetched once per wake-up and shared by the waiters of the
    /// database (see `probe`), so that a write wakes N waiters for one query, not N.
    struct Probe: Sendable {
        /// The changes are those with `from < seq <= to`.
        var from: Int64
        var to: Int64
        var changes: [ProbeChange]
    }

    /// A changed document as a probe saw it: its newest change, its winner, its leaves.
    struct ProbeChange: Sendable {
        var seq: Int64
        var docID: String
        var deleted: Bool
        var winner: String
        var leaves: [(rev: RevisionID, deleted: Bool, channels: [String])]
    }

    /// The recent probes of each database, by the version they were made for.
    private var probes: [String: [(version: UInt64, task: Task<Probe?, Never>)]] = [:]
    /// How many recent probes a database keeps (waiters woken several times in a burst).
    static let keptProbes = 8

    /// The changes of `database` after `since` as of `version`, from probes shared with the
    /// other waiters: the probe for `version` is fetched (with `fetch`, from the first asker's
    /// `since`) only once. Nil when the recent probes do not cover `since` (the caller reads on
    /// its own).
    func probe(_ database: String, version: UInt64, since: Int64, fetch: @escaping @Sendable (Int64) async -> Probe?) async -> Probe? {
        var list = probes[database] ?? []
        if !list.contains(where: { $0.version == version }) {
            list.append((version, Task { await fetch(since) }))
            if list.count > Self.keptProbes { list.removeFirst(list.count - Self.keptProbes) }
            probes[database] = list
        }
        var covered: [Probe] = []
        for entry in list {
            if let probe = await entry.task.value { covered.append(probe) }
        }
        // Chain the probes from `since` on.
        var current = since
        var changes: [ProbeChange] = []
        for probe in covered.sorted(by: { $0.from < $1.from }) where probe.from <= current && probe.to > current {
            changes += probe.changes.filter { $0.seq > current }
            current = probe.to
        }
        guard current > since || covered.contains(where: { $0.from <= since && $0.to >= since }) else { return nil }
        return Probe(from: since, to: current, changes: changes)
    }

    /// `wait`, then the database's version in the same turn of the actor (a woken request
    /// needs it next; one hop fewer per waiter); nil when the process is shutting down.
    func waitForVersion(_ database: String, after version: UInt64, until deadline: ContinuousClock.Instant) async -> UInt64? {
        guard await wait(database, after: version, until: deadline) else { return nil }
        return self.version(of: database)
    }

    /// The number of requests waiting now (the `/metrics` gauge of open long polls).
    var waiting: Int { waiters.values.reduce(0) { $0 + $1.count } }

    private func timeOut(_ database: String, _ id: UInt64) {
        if let waiter = waiters[database]?.removeValue(forKey: id) {
            waiter.continuation.resume()
        }
    }
}

/// The process's listening connection: LISTEN strata_changes, forward each notification to the
/// notifier; on any failure (PostgreSQL restarted...) reconnect after 250 ms and wake every
/// waiter, since notifications sent meanwhile are lost.
struct ChangeListener: Sendable {
    var settings: PostgresSettings
    var notifier: ChangeNotifier
    /// Told when this connection is lost and found again (see PostgresPool).
    var pool: PostgresPool
    var logger: Logger

    func run() async {
        var connectionID = 0
        var failures = 0  // consecutive failed connection attempts (logged once per streak)
        while !Task.isCancelled {
            connectionID += 1
            do {
                let connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.next(),
                    configuration: try settings.connectionConfiguration(), id: connectionID, logger: logger)
                do {
                    try await connection.listen(on: ChangeNotifier.channel) { notifications in
                        failures = 0
                        pool.connectionRestored()
                        await notifier.notifyAll()
                        for try await notification in notifications {
                            await notifier.notify(notification.payload)
                        }
                    }
                } catch {
                    logger.warning("change listener: \(String(reflecting: error))")
                }
                try? await connection.close()
            } catch {
                if failures == 0 {
                    logger.warning("change listener cannot connect to PostgreSQL (retrying every 250 ms): \(String(reflecting: error))")
                }
                failures += 1
            }
            if !Task.isCancelled { pool.connectionLost() }
            await notifier.notifyAll()
            try? await Task.sleep(for: .milliseconds(250))
        }
    }
}
