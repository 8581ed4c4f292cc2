import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The state machine of one replication (the CouchDB replication protocol, `Gateway/PROTOCOL.md`):
/// a pull direction and, when bidirectional, a push direction, run side by side, each retried
/// with ``RetryBackoff`` after network errors and server faults and resumed from its
/// ``ReplicationCheckpoint``.
///
/// Pull, per page of the gateway's `_changes` (`style=all_docs`; `feed=longpoll` when
/// repeating; the channel filter for `limitToChannels`): the revisions the database lacks
/// (`missingRevisions`), fetched with `_bulk_get?revs=true` a batch at a time and committed with
/// `insertReplicatedRevisions` as ONE atomic commit per batch, then the checkpoint. The next page
/// is requested while the current one is committed, and the next batch fetched while one
/// commits.
///
/// Push, per batch of the local change feed (`revisionChanges(since:)`): the client filter on
/// each non-deleted winner, `_revs_diff`, the missing revisions with their history
/// (`replicatedRevision`), `_bulk_docs` with `new_edits: false`, then the checkpoint. A
/// repeating push waits on the database's change stream for the next local commit.
///
/// ```swift
/// let replicator = Replicator(database: db, configuration: config, replication: replication)
/// await replicator.run()
/// ```
struct Replicator: Sendable {
    let database: DocumentDatabase
    let configuration: ReplicationConfiguration
    let replication: Replication
    let client: GatewayClient

    init(database: DocumentDatabase, configuration: ReplicationConfiguration, replication: Replication) {
        self.database = database
        self.configuration = configuration
        self.replication = replication
        self.client = GatewayClient(configuration: configuration)
    }

    /// Runs until the replication completes, fails or is stopped, and ends it.
    func run() async {
        defer { client.invalidate() }
        await replication.runToEnd {
            let uuid = try await ReplicationCheckpoint.uuid(of: database)
            // The change stream is subscribed before the push reads the feed, so that no commit
            // falls between the two.
            let wake = configuration.repeating && configuration.pushes ? try database.changes() : nil
            try await withThrowingTaskGroup(of: Void.self) { group in
                if configuration.pulls {
                    group.addTask { try await runDirection(push: false, uuid: uuid, wake: nil) }
                }
                if configuration.pushes {
                    group.addTask { try await runDirection(push: true, uuid: uuid, wake: wake) }
                }
                // `next()` rethrows a direction's failure at once, and leaving the group cancels
                // the other direction (`waitForAll()` would wait for it first: a repeating pull
                // never ends by itself).
                while try await group.next() != nil {}
            }
        }
    }

    /// The status a replication that ended with `error` ends with.
    static func finalStatus(of error: any Error, stopRequested: Bool) -> ReplicationStatus {
        if stopRequested || error is CancellationError { return .stopped }
        switch error {
        case StrataError.closed: return .stopped
        case let error as StrataError: return .failed(error)
        case GatewayClient.Fault.permanent(let error): return .failed(error)
        case GatewayClient.Fault.transient(let text): return .failed(.network(text))
        default: return .failed(.network("replication with \(error)"))
        }
    }

    /// Runs one direction, trying again after transient faults.
    private func runDirection(push: Bool, uuid: String, wake: AsyncThrowingStream<[DocumentChange], any Error>?) async throws {
        var wakeIterator = wake?.makeAsyncIterator()
        let checkpointID = ReplicationCheckpoint.id(
            uuid: uuid, url: configuration.baseURLString, push: push, channels: push ? [] : configuration.limitToChannels,
            filterName: configuration.filter == nil ? nil : (configuration.filterName ?? "filter"),
            filterParameters: configuration.filterParameters)
        try await RetryBackoff.retrying(configuration, replication) { backoff in
            let checkpoint = ReplicationCheckpoint(id: checkpointID, client: client, database: database)
            if push {
                try await self.push(checkpoint: checkpoint, backoff: &backoff, wake: &wakeIterator)
            } else {
                try await pull(checkpoint: checkpoint, backoff: &backoff)
            }
            replication.direction(pull: !push, caughtUp: true)
        }
    }

    // MARK: Local calls (on the store's executor)

    private func local<T: Sendable>(_ work: @escaping @Sendable (DocumentDatabase) throws -> T) async throws -> T {
        let database = self.database
        return try await database.state.executor.run { try work(database) }
    }

    // MARK: Pull

    /// One entry of the gateway's `_changes`.
    struct RemoteChange: Sendable {
        let sequence: String
        let id: String
        let revisions: [RevisionID]
    }

    /// A page of the gateway's `_changes`.
    struct ChangesPage: Sendable {
        let results: [RemoteChange]
        let lastSequence: String
    }

    /// The query of a `_changes` request after `since`.
    func changesQuery(since: String, longpoll: Bool) -> [(String, String)] {
        var query: [(String, String)] = [("since", since), ("style", "all_docs"), ("limit", String(pageSize))]
        if longpoll {
            query.append(("feed", "longpoll"))
            query.append(("timeout", String(Int(GatewayClient.seconds(configuration.longpollTimeout) * 1000))))
        } else {
            query.append(("feed", "normal"))
        }
        if !configuration.limitToChannels.isEmpty {
            query.append(("filter", "sync_gateway/bychannel"))
            query.append(("channels", configuration.limitToChannels.joined(separator: ",")))
        }
        return query
    }

    /// Changes per `_changes` page: a few batches, so that fetching the next page overlaps
    /// committing this one's batches.
    var pageSize: Int { min(configuration.batchSize * 4, 10_000) }

    func fetchChanges(since: String, longpoll: Bool) async throws -> ChangesPage {
        let answer = try await client.send("GET", "_changes", query: changesQuery(since: since, longpoll: longpoll),
                                           extraTimeout: longpoll ? GatewayClient.seconds(configuration.longpollTimeout) : 0)
        return try Self.parseChanges(answer.body, what: "\(client.base)/_changes")
    }

    /// The page a `_changes` answer holds.
    static func parseChanges(_ body: JSON, what: String) throws -> ChangesPage {
        func bad(_ reason: String) -> GatewayClient.Fault { .permanent(.network("\(what): malformed answer: \(reason)")) }
        guard case .array(let results)? = body["results"] else { throw bad("no results array") }
        guard let lastSequence = sequenceText(body["last_seq"]) else { throw bad("no last_seq") }
        var out: [RemoteChange] = []
        out.reserveCapacity(results.count)
        for result in results {
            guard let sequence = sequenceText(result["seq"]), let id = result["id"]?.stringValue,
                  case .array(let changes)? = result["changes"] else { throw bad("a result without seq, id or changes") }
            var revisions: [RevisionID] = []
            for change in changes {
                guard let text = change["rev"]?.stringValue, let revision = RevisionID(text) else {
                    throw bad("document \(id.debugDescription) has a bad rev")
                }
                revisions.append(revision)
            }
            out.append(RemoteChange(sequence: sequence, id: id, revisions: revisions))
        }
        return ChangesPage(results: out, lastSequence: lastSequence)
    }

    /// A sequence as text (the gateway's are numbers; CouchDB's may be strings).
    static func sequenceText(_ value: JSON?) -> String? {
        switch value {
        case .int(let n)?: return String(n)
        case .string(let s)?: return s
        case .double(let d)? where d.isFinite && d == d.rounded(): return String(Int64(d))
        default: return nil
        }
    }

    private func pull(checkpoint: ReplicationCheckpoint, backoff: inout RetryBackoff) async throws {
        let repeating = configuration.repeating
        var since = try await checkpoint.read()
        var prefetched: Task<ChangesPage, any Error>?
        defer { prefetched?.cancel() }
        while true {
            let page: ChangesPage
            if let next = prefetched {
                prefetched = nil
                page = try await withTaskCancellationHandler { try await next.value } onCancel: { next.cancel() }
            } else {
                page = try await fetchChanges(since: since, longpoll: repeating)
            }
            backoff.reset()
            replication.setOffline(false)
            let full = page.results.count >= pageSize
            if full || repeating {
                let lastSequence = page.lastSequence
                prefetched = Task { try await fetchChanges(since: lastSequence, longpoll: repeating && !full) }
            }
            if !page.results.isEmpty {
                replication.direction(pull: true, caughtUp: false)
                try await pullPage(page, checkpoint: checkpoint)
            } else {
                try await checkpoint.save(page.lastSequence)
            }
            since = page.lastSequence
            if !full {
                try await checkpoint.flush()
                if !repeating { return }
                replication.direction(pull: true, caughtUp: true)
            }
        }
    }

    /// Fetches and commits the revisions of `page` the database lacks, a batch at a time, saving
    /// the checkpoint after each batch.
    private func pullPage(_ page: ChangesPage, checkpoint: ReplicationCheckpoint) async throws {
        replication.progress(pull: true, total: page.results.count)
        var wanted: [String: [RevisionID]] = [:]
        for change in page.results { wanted[change.id, default: []].append(contentsOf: change.revisions) }
        let query = wanted
        let missing = try await local { try $0.missingRevisions(query) }

        // Batches of changes in page order; each commits its missing revisions then saves the
        // checkpoint at its last change (the page's last_seq after the last batch).
        let batchSize = configuration.batchSize
        var batches: [(requests: [(String, RevisionID)], count: Int, sequence: String)] = []
        var start = 0
        while start < page.results.count {
            let end = min(start + batchSize, page.results.count)
            var requests: [(String, RevisionID)] = []
            for change in page.results[start..<end] {
                for revision in missing[change.id] ?? [] where change.revisions.contains(revision) {
                    requests.append((change.id, revision))
                }
            }
            let sequence = end == page.results.count ? page.lastSequence : page.results[end - 1].sequence
            batches.append((requests, end - start, sequence))
            start = end
        }

        var fetch: Task<[ReplicatedRevision], any Error>? = nil
        defer { fetch?.cancel() }
        for (index, batch) in batches.enumerated() {
            let revisions: [ReplicatedRevision]
            if let pending = fetch {
                fetch = nil
                revisions = try await withTaskCancellationHandler { try await pending.value } onCancel: { pending.cancel() }
            } else {
                revisions = try await bulkGet(batch.requests)
            }
            if index + 1 < batches.count {
                let next = batches[index + 1].requests
                fetch = Task { try await bulkGet(next) }
            }
            if !revisions.isEmpty {
                try await local { try $0.insertReplicatedRevisions(revisions) }
            }
            try await checkpoint.save(batch.sequence)
            replication.progress(pull: true, completed: batch.count)
        }
    }

    /// The revisions `requests` names, from `_bulk_get?revs=true`. Revisions the gateway answers
    /// with an error (gone meanwhile, or no longer readable) are left out.
    func bulkGet(_ requests: [(String, RevisionID)]) async throws -> [ReplicatedRevision] {
        if requests.isEmpty { return [] }
        let docs: [JSON] = requests.map { .object(["id": .string($0.0), "rev": .string($0.1.description)]) }
        let answer = try await client.send("POST", "_bulk_get", query: [("revs", "true")], body: .object(["docs": .array(docs)]))
        let what = "\(client.base)/_bulk_get"
        guard case .array(let results)? = answer.body["results"] else {
            throw GatewayClient.Fault.permanent(.network("\(what): malformed answer: no results array"))
        }
        var out: [ReplicatedRevision] = []
        out.reserveCapacity(requests.count)
        let now = Date()
        for result in results {
            guard case .array(let entries)? = result["docs"] else { continue }
            for entry in entries {
                guard let revision = entry["ok"] else { continue }
                do {
                    out.append(try WireRevision.revision(from: revision, now: now))
                } catch let error as StrataError {
                    throw GatewayClient.Fault.permanent(error)
                }
            }
        }
        return out
    }

    // MARK: Push

    private func push(checkpoint: ReplicationCheckpoint, backoff: inout RetryBackoff,
                      wake: inout AsyncThrowingStream<[DocumentChange], any Error>.AsyncIterator?) async throws {
        let repeating = configuration.repeating
        let batchSize = configuration.batchSize
        var since = UInt64(try await checkpoint.read()) ?? 0
        backoff.reset()
        replication.setOffline(false)
        // The next batch is prepared (feed read, filter, _revs_diff, revisions loaded) while this
        // one is sent.
        var prepared: Task<PreparedPush, any Error>?
        defer { prepared?.cancel() }
        while true {
            let batch: PreparedPush
            if let next = prepared {
                prepared = nil
                batch = try await withTaskCancellationHandler { try await next.value } onCancel: { next.cancel() }
            } else {
                batch = try await preparePush(since: since)
            }
            if batch.changeCount == 0 {
                try await checkpoint.flush()
                if !repeating { return }
                replication.direction(pull: false, caughtUp: true)
                guard try await waitForLocalCommit(&wake) else { return }
                continue
            }
            replication.direction(pull: false, caughtUp: false)
            replication.progress(pull: false, total: batch.changeCount)
            let last = batch.lastSequence
            if batch.changeCount >= batchSize {
                prepared = Task { try await preparePush(since: last) }
            }
            try await sendPush(batch)
            try await checkpoint.save(String(last))
            backoff.reset()
            replication.progress(pull: false, completed: batch.changeCount)
            since = last
            if batch.changeCount < batchSize, !repeating {
                try await checkpoint.flush()
                return
            }
        }
    }

    /// Waits for a commit of this store that is not replication's own; false when the stream
    /// ended (the store closed).
    private func waitForLocalCommit(_ wake: inout AsyncThrowingStream<[DocumentChange], any Error>.AsyncIterator?) async throws -> Bool {
        while true {
            guard var iterator = wake else { return false }
            do {
                guard let changes = try await iterator.next() else { return false }
                wake = iterator
                if changes.contains(where: { !$0.isExternal }) { return true }
            } catch StrataError.subscriberOverflow {
                // Fell behind: subscribe again; the feed read that follows covers what was missed.
                wake = try database.changes().makeAsyncIterator()
                return true
            }
        }
    }

    /// A batch of the local change feed, ready to send.
    struct PreparedPush: Sendable {
        /// Changes read from the feed (0: caught up).
        let changeCount: Int
        /// The sequence of the last change read.
        let lastSequence: UInt64
        /// The revisions the gateway lacks, with their history.
        let revisions: [ReplicatedRevision]
    }

    /// Reads a batch of the local change feed after `since` and finds what the gateway lacks of
    /// it: the client filter on each non-deleted winner, `_revs_diff`, the missing revisions.
    private func preparePush(since: UInt64) async throws -> PreparedPush {
        let historyLimit = configuration.revisionHistoryLimit
        let batchSize = configuration.batchSize
        let changes = try await local { try $0.revisionChanges(since: since, limit: batchSize) }
        guard let last = changes.last?.sequence else { return PreparedPush(changeCount: 0, lastSequence: since, revisions: []) }
        func prepared(_ revisions: [ReplicatedRevision]) -> PreparedPush {
            PreparedPush(changeCount: changes.count, lastSequence: last, revisions: revisions)
        }
        var candidates = changes
        if let filter = configuration.filter {
            let parameters = configuration.filterParameters
            let live = changes.filter { !$0.isDeletion }
            let kept = try await local { db -> Set<String> in
                var kept = Set<String>()
                for change in live {
                    guard let winner = change.leaves.first,
                          let revision = try db.replicatedRevision(id: change.documentID, revision: winner, historyLimit: 1) else { continue }
                    if filter(WireRevision.document(of: revision), parameters) { kept.insert(change.documentID) }
                }
                return kept
            }
            candidates = changes.filter { $0.isDeletion || kept.contains($0.documentID) }
        }
        if candidates.isEmpty { return prepared([]) }

        var diff: [String: JSON] = [:]
        for change in candidates {
            diff[change.documentID] = .array(change.leaves.map { .string($0.description) })
        }
        let answer = try await client.send("POST", "_revs_diff", body: .object(diff))
        guard case .object(let entries) = answer.body else {
            throw GatewayClient.Fault.permanent(.network("\(client.base)/_revs_diff: malformed answer: not an object"))
        }
        var wanted: [(String, RevisionID)] = []
        for change in candidates {
            guard case .array(let missing)? = entries[change.documentID]?["missing"] else { continue }
            for value in missing {
                if let text = value.stringValue, let revision = RevisionID(text) { wanted.append((change.documentID, revision)) }
            }
        }
        if wanted.isEmpty { return prepared([]) }
        let requests = wanted
        let revisions = try await local { db -> [ReplicatedRevision] in
            try requests.compactMap { try db.replicatedRevision(id: $0.0, revision: $0.1, historyLimit: historyLimit) }
        }
        return prepared(revisions)
    }

    /// Sends `batch`'s revisions with `_bulk_docs` (`new_edits: false`). Documents the gateway
    /// refuses for good (rights, size, malformed) are recorded and passed; other refusals are
    /// retried with the batch.
    private func sendPush(_ batch: PreparedPush) async throws {
        for body in Self.bulkDocsBodies(batch.revisions, limit: Self.bulkDocsBodyLimit) {
            // A body of one revision over the gateway's request limit is refused whole (413): that
            // revision can never be sent, so it is reported and passed like a refused one.
            let single = body.count == 1
            let result = try await client.send("POST", "_bulk_docs", bodyText: body.text, accepting: single ? [413] : [])
            if result.status == 413 {
                replication.reject("\(body.first): request_entity_too_large (\(body.text.count) bytes of JSON)")
                continue
            }
            guard case .array(let outcomes) = result.body else {
                throw GatewayClient.Fault.permanent(.network("\(client.base)/_bulk_docs: malformed answer: not an array"))
            }
            for outcome in outcomes {
                guard let kind = outcome["error"]?.stringValue else { continue }
                let id = outcome["id"]?.stringValue ?? "?"
                let rev = outcome["rev"]?.stringValue ?? "?"
                let reason = outcome["reason"]?.stringValue ?? ""
                switch kind {
                case "forbidden", "request_entity_too_large", "bad_request", "unauthorized":
                    // These never succeed on another attempt: reported, and passed.
                    replication.reject("\(id) \(rev): \(kind)\(reason.isEmpty ? "" : " " + reason)")
                default:
                    throw GatewayClient.Fault.transient("\(client.base)/_bulk_docs: document \(id.debugDescription) \(rev): \(kind) \(reason)")
                }
            }
        }
    }

    /// The most bytes of JSON a `_bulk_docs` body holds (unless one revision alone is larger):
    /// well under the gateway's default request limit (64 MiB), so that revisions with large
    /// attachments go in several requests.
    static let bulkDocsBodyLimit = 16 << 20

    /// One `_bulk_docs` request body: its text, how many revisions it holds, and the first one
    /// (`"<id> <rev>"`).
    struct BulkDocsBody {
        let text: Data
        let count: Int
        let first: String
    }

    /// The `_bulk_docs` bodies (`{"docs": [...], "new_edits": false}`) of `revisions`, in order,
    /// each at most `limit` bytes unless it holds a single revision.
    static func bulkDocsBodies(_ revisions: [ReplicatedRevision], limit: Int) -> [BulkDocsBody] {
        let head = Data(#"{"new_edits":false,"docs":["#.utf8)
        let tail = Data("]}".utf8)
        var bodies: [BulkDocsBody] = []
        var text = head
        var count = 0
        var first = ""
        for revision in revisions {
            let json = WireRevision.json(of: revision).jsonData()
            if count > 0, text.count + 1 + json.count + tail.count > limit {
                text.append(tail)
                bodies.append(BulkDocsBody(text: text, count: count, first: first))
                text = head
                count = 0
            }
            if count == 0 {
                first = "\(revision.documentID) \(revision.revisionID)"
            } else {
                text.append(UInt8(ascii: ","))
            }
            text.append(json)
            count += 1
        }
        if count > 0 {
            text.append(tail)
            bodies.append(BulkDocsBody(text: text, count: count, first: first))
        }
        return bodies
    }
}
