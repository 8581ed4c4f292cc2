import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The replicator of one channel or one time series with a `strata-gateway` database
/// (Gateway/PROTOCOL.md "Channels and time series"): the pull reads the database's change feed
/// filtered to the collection and applies each page with its checkpoint in one commit; the push
/// uploads the channel's outbox, or the series' events when this store is the series' writer.
///
/// Order: a one-time bidirectional replication pushes first and then pulls, so that the pull
/// brings back (and finalizes) what the push uploaded; a repeating one runs both at once, the
/// gateway's notification waking the pull's long poll after each upload. A channel's provisional
/// messages are finalized by the pull (so a store's final messages are always a prefix of the
/// gateway's order), or by the upload's answer when the replication does not pull.
struct StreamReplicator: Sendable {
    enum Target: Sendable {
        case channel(ChannelState)
        case series(SeriesState)
    }

    let target: Target
    let configuration: ReplicationConfiguration
    let replication: Replication
    let client: GatewayClient

    init(target: Target, configuration: ReplicationConfiguration, replication: Replication) {
        self.target = target
        self.configuration = configuration
        self.replication = replication
        self.client = GatewayClient(configuration: configuration)
    }

    /// The key of this gateway database in the collection's checkpoints.
    var url: String { configuration.baseURLString }

    /// The collection's name, for errors and requests.
    var name: String {
        switch target {
        case .channel(let state): return state.keys.name
        case .series(let state): return state.path
        }
    }

    var what: String {
        switch target {
        case .channel: return "channel \"\(name)\""
        case .series: return "time series \"\(name)\""
        }
    }

    /// The collection's name as one path segment.
    var segment: String {
        name.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? name
    }

    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    var principal: String {
        if case .basic(let user, _) = configuration.authentication { return user }
        return ""
    }

    func run() async {
        defer { client.invalidate() }
        await replication.runToEnd {
            let pushes = try await retrying { try await prepare(&$0) }
            if configuration.repeating {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if configuration.pulls { group.addTask { try await retrying { try await pull(&$0) } } }
                    if pushes { group.addTask { try await retrying { try await push(&$0) } } }
                    if !configuration.pulls { replication.direction(pull: true, caughtUp: true) }
                    if !pushes { replication.direction(pull: false, caughtUp: true) }
                    // `next()` rethrows a direction's failure at once, and leaving the group
                    // cancels the other direction (`waitForAll()` would wait for it first).
                    while try await group.next() != nil {}
                }
            } else {
                if pushes { try await retrying { try await push(&$0) } }
                replication.direction(pull: false, caughtUp: true)
                if configuration.pulls { try await retrying { try await pull(&$0) } }
            }
        }
    }

    /// Runs `body` until it returns, retrying transient faults (``RetryBackoff/retrying(_:_:_:)``).
    private func retrying<T: Sendable>(_ body: (inout RetryBackoff) async throws -> T) async throws -> T {
        try await RetryBackoff.retrying(configuration, replication, body)
    }

    /// Runs local work on the store's executor.
    private func local<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        switch target {
        case .channel(let state): return try await state.history.executor.run(work)
        case .series(let state): return try await state.executor.run(work)
        }
    }

    /// Sends a request; a 403 is the user's missing right, a ``StrataError/permissionDenied(principal:permission:path:)``.
    private func send(_ method: String, _ path: String, query: [(String, String)] = [], body: JSON? = nil,
                      accepting: Set<Int> = [], extraTimeout: TimeInterval = 0, permission: Permission) async throws -> GatewayClient.Answer {
        // Keys sorted: a retried upload sends the same text (the gateway compares an event's value text).
        let answer = try await client.send(method, path, query: query, bodyText: body?.jsonData(sortedKeys: true),
                                           accepting: accepting.union([403]), extraTimeout: extraTimeout)
        if answer.status == 403 && !accepting.contains(403) {
            throw GatewayClient.Fault.permanent(.permissionDenied(principal: principal, permission: permission, path: name))
        }
        return answer
    }

    private func malformed(_ endpoint: String, _ reason: String) -> GatewayClient.Fault {
        .permanent(.network("\(client.base)/\(endpoint): malformed answer: \(reason)"))
    }

    // MARK: Preparing

    /// Makes the collection ready to replicate; returns whether this replication pushes.
    ///
    /// A channel is marked as replicating (its messages become provisional until the gateway
    /// orders them), whatever the direction, so that a pulled message never overwrites one of
    /// this store's at the same timetoken: a provisional one moves instead. A series that pushes claims the gateway's series: granted, this store
    /// is its writer; refused, a series without events becomes a reader, and one with events of
    /// its own fails the replication with ``StrataError/conflict(_:)`` (its events would fork the
    /// series).
    private func prepare(_ backoff: inout RetryBackoff) async throws -> Bool {
        switch target {
        case .channel(let state):
            try await local { try state.startReplicating() }
            return configuration.pushes
        case .series(let state):
            let pushes = configuration.pushes
            // A writer or a claimer replicating without pushing only pulls; its claim waits.
            guard let writerID = try await local({ try state.beginReplication(pushes: pushes) }), pushes else { return false }
            let endpoint = "_strata/series/\(segment)/claim"
            let answer = try await send("POST", endpoint, body: .object(["writer": .string(SeriesReplicationRole.text(writerID))]),
                                        accepting: [409], permission: .updateTopic)
            if answer.status == 409 {
                let became = try await local { try state.claimAnswered(granted: false) }
                guard became else {
                    throw GatewayClient.Fault.permanent(.conflict("\(what) has events of its own, and another store writes it through the gateway: a replicated series has one writer, so these events cannot join it"))
                }
                return false
            }
            guard answer.body["writer"]?.stringValue == SeriesReplicationRole.text(writerID) else {
                throw malformed(endpoint, "the claim's writer is not ours")
            }
            _ = try await local { try state.claimAnswered(granted: true) }
            backoff.reset()
            return true
        }
    }

    // MARK: Pull

    /// The feed's page: the gateway's largest. A page's messages or events are small, and the
    /// gateway's cost is mostly per row, not per request; commits stay `batchSize`.
    var pageSize: Int { 10_000 }

    private func fetch(since: UInt64, longpoll: Bool) async throws -> StreamFeedPage {
        var query: [(String, String)] = [("since", String(since)), ("limit", String(pageSize))]
        switch target {
        case .channel: query.append(("channels", StoredValueJSON.text(.array([.string(name)]))))
        case .series: query.append(("series", StoredValueJSON.text(.array([.string(name)]))))
        }
        if longpoll {
            query.append(("feed", "longpoll"))
            query.append(("timeout", String(Int(GatewayClient.seconds(configuration.longpollTimeout) * 1000))))
        }
        let answer = try await client.sendForText("GET", "_strata/changes", query: query, accepting: [403],
                                                  extraTimeout: longpoll ? GatewayClient.seconds(configuration.longpollTimeout) : 0)
        if answer.status == 403 {
            throw GatewayClient.Fault.permanent(.permissionDenied(principal: principal, permission: .readTopic, path: name))
        }
        do {
            return try StreamFeedPage(parsing: answer.text)
        } catch {
            throw malformed("_strata/changes", "\(error)")
        }
    }

    static func unsigned(_ value: JSON?) -> UInt64? {
        switch value {
        case .int(let n)? where n >= 0: return UInt64(n)
        case .string(let s)?: return UInt64(s)
        default: return nil
        }
    }

    private func pull(_ backoff: inout RetryBackoff) async throws {
        let repeating = configuration.repeating
        var since = try await local { [target, url] in
            switch target {
            case .channel(let state): return try state.pullCheckpoint(url: url)
            case .series(let state): return try state.replicaCounter(state.replica.checkpoint(url), what: "pull checkpoint")
            }
        }
        var longpoll = false
        var prefetched: Task<StreamFeedPage, any Error>?
        defer { prefetched?.cancel() }
        while true {
            let page: StreamFeedPage
            if let next = prefetched {
                prefetched = nil
                page = try await withTaskCancellationHandler { try await next.value } onCancel: { next.cancel() }
            } else {
                page = try await fetch(since: since, longpoll: longpoll)
            }
            backoff.reset()
            replication.setOffline(false)
            let more = !page.changes.isEmpty
            if more || repeating {
                let last = page.lastSequence
                prefetched = Task { try await fetch(since: last, longpoll: repeating && !more) }
            }
            if more {
                replication.direction(pull: true, caughtUp: false)
                replication.progress(pull: true, total: page.changes.count)
                try await apply(page)
            } else if page.lastSequence != since {
                try await apply(page)
            }
            since = page.lastSequence
            longpoll = repeating
            if !more {
                if !repeating { return }
                replication.direction(pull: true, caughtUp: true)
            }
        }
    }

    /// Applies a page in commits of at most `batchSize` results, each with its checkpoint.
    private func apply(_ page: StreamFeedPage) async throws {
        let batchSize = configuration.batchSize
        var start = 0
        repeat {
            let end = min(start + batchSize, page.changes.count)
            let slice = page.changes[start..<end]
            let since = end == page.changes.count ? page.lastSequence : (slice.last?.seq ?? page.lastSequence)
            switch target {
            case .channel(let state):
                let changes = try parseChannel(slice, state: state)
                try await local { [url] in try state.applyPulled(changes, checkpoint: url, since: since) }
            case .series(let state):
                let events = try parseSeries(slice, state: state)
                try await local { [url] in try state.applyPulled(events, checkpoint: url, since: since) }
            }
            if end > start { replication.progress(pull: true, completed: end - start) }
            start = end
        } while start < page.changes.count
    }

    private func parseChannel(_ results: ArraySlice<StreamFeedPage.Change>, state: ChannelState) throws -> [ChannelState.PulledChange] {
        var changes: [ChannelState.PulledChange] = []
        changes.reserveCapacity(results.count)
        for result in results where result.channel == name {
            switch result.kind {
            case .message:
                guard let tt = result.timetoken, let message = result.message else {
                    throw malformed("_strata/changes", "a message without timetoken or message")
                }
                var record: [UInt8] = []
                do {
                    try MessageRecord.encode(message: { out in
                        try StoredValueJSON.append(message, typeName: state.typeName, what: "\(what) message \(tt)", to: &out)
                    }, meta: result.meta, publisher: result.publisher, into: &record)
                } catch let error as StrataError {
                    // A message this channel's type cannot hold (another client's): reported, and
                    // passed, as a refused document is.
                    replication.reject("\(what) message \(tt): \(error)")
                    continue
                }
                changes.append(.message(timetoken: tt, uploadID: result.id.flatMap(Self.uploadID), record: record))
            case .deletion:
                guard let from = result.from, let until = result.until else {
                    throw malformed("_strata/changes", "a deletion without from or until")
                }
                changes.append(.deletion(from: from, until: until))
            case .event, .other:
                continue
            }
        }
        return changes
    }

    private func parseSeries(_ results: ArraySlice<StreamFeedPage.Change>, state: SeriesState) throws -> [SeriesState.PulledEvent] {
        var events: [SeriesState.PulledEvent] = []
        events.reserveCapacity(results.count)
        for result in results where result.kind == .event && result.series == name {
            guard let sequence = result.sequence, sequence <= UInt64(Int64.max), let timestamp = result.timestamp,
                  let author = result.author, let value = result.value else {
                throw malformed("_strata/changes", "an event without sequence, timestamp, author or value")
            }
            var bytes: [UInt8] = []
            try StoredValueJSON.append(value, typeName: state.typeName, what: "\(what) event \(sequence)", to: &bytes)
            var original: UInt64?
            if let o = result.original {
                guard let s = Self.unsigned(o), s < sequence else { throw malformed("_strata/changes", "event \(sequence) has a bad original") }
                original = s
            }
            events.append(.init(sequence: sequence, timestamp: timestamp, author: author, value: bytes, original: original))
        }
        return events
    }

    /// The 16 bytes of an upload id written as 32 lowercase hex digits, or nil for another id.
    static func uploadID(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 2 * MessageRecord.uploadIDLength else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(MessageRecord.uploadIDLength)
        func digit(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var i = 0
        while i < utf8.count {
            guard let hi = digit(utf8[i]), let lo = digit(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    // MARK: Push

    private func push(_ backoff: inout RetryBackoff) async throws {
        switch target {
        case .channel(let state): try await pushChannel(state, &backoff)
        case .series(let state): try await pushSeries(state, &backoff)
        }
    }

    /// How long a waiting push sleeps before it looks at the outbox again by itself.
    static let idleRecheck: Duration = .seconds(1)

    /// Nothing (more) to upload: a one-time push ends (false); a repeating one is caught up and
    /// waits for `signal` past `generation`, or `idleRecheck` (true: look again).
    private func idle(_ signal: ReplicationSignal, after generation: UInt64) async throws -> Bool {
        guard configuration.repeating else { return false }
        replication.direction(pull: false, caughtUp: true)
        await signal.wait(after: generation, timeout: Self.idleRecheck)
        try Task.checkCancellation()
        return true
    }

    private func pushChannel(_ state: ChannelState, _ backoff: inout RetryBackoff) async throws {
        let batchSize = configuration.batchSize
        var sentThrough: UInt64?
        while true {
            let generation = state.outboxSignal.generation
            let after = sentThrough
            let items = try await local { try state.outbox(after: after, limit: batchSize) }
            if items.isEmpty {
                guard try await idle(state.outboxSignal, after: generation) else { return }
                continue
            }
            replication.direction(pull: false, caughtUp: false)
            replication.progress(pull: false, total: items.count)
            var messages: [ChannelState.OutboxItem] = []
            for item in items {
                switch item.entry {
                case .message:
                    messages.append(item)
                case .deletion(let from, let until):
                    try await publish(messages, state: state)
                    messages = []
                    let endpoint = "_strata/channels/\(segment)/delete"
                    _ = try await send("POST", endpoint, body: .object(["from": .string(String(from)), "until": .string(String(until))]),
                                       permission: .modifyTopic)
                    try await local { try state.removeFromOutbox([item]) }
                }
            }
            try await publish(messages, state: state)
            sentThrough = items.last?.localTimetoken
            backoff.reset()
            replication.progress(pull: false, completed: items.count)
        }
    }

    /// Uploads provisional messages; finalizes them from the answer when this replication does
    /// not pull (else the pull does, in feed order).
    private func publish(_ items: [ChannelState.OutboxItem], state: ChannelState) async throws {
        guard !items.isEmpty else { return }
        var entries: [JSON] = []
        var sent: [(ChannelState.OutboxItem, [UInt8], String)] = []
        var withdrawn: [ChannelState.OutboxItem] = []
        for item in items {
            guard case .message(let id) = item.entry, let record = item.record else {
                withdrawn.append(item)
                continue
            }
            let parts = try record.withUnsafeBytes { bytes -> (JSON, JSON?, String?) in
                let p = try MessageRecord.decode(bytes, what: "\(what) message \(item.localTimetoken)")
                return (try ValueCodec<JSON>.json(typeName: state.typeName, bytes: p.message), p.meta, p.publisher)
            }
            let text = SeriesReplicationRole.text(id)
            var entry: [String: JSON] = ["id": .string(text), "message": parts.0]
            if let meta = parts.1 { entry["meta"] = meta }
            if let publisher = parts.2 { entry["publisher"] = .string(publisher) }
            entries.append(.object(entry))
            sent.append((item, record, text))
        }
        if !withdrawn.isEmpty { try await local { [withdrawn] in try state.removeFromOutbox(withdrawn) } }
        guard !entries.isEmpty else { return }
        let endpoint = "_strata/channels/\(segment)/publish"
        let answer = try await send("POST", endpoint, body: .object(["messages": .array(entries)]), permission: .updateTopic)
        guard case .array(let results)? = answer.body["results"], results.count == sent.count else {
            throw malformed(endpoint, "not one result per message")
        }
        var refused: [ChannelState.OutboxItem] = []
        var finals: [ChannelState.PulledChange] = []
        for (result, (item, record, text)) in zip(results, sent) {
            guard result["id"]?.stringValue == text else { throw malformed(endpoint, "results out of order") }
            if let error = result["error"]?.stringValue {
                replication.reject("\(what) message \(item.localTimetoken): \(error) \(result["reason"]?.stringValue ?? "")")
                refused.append(item)
                continue
            }
            guard let tt = Self.unsigned(result["timetoken"]) else { throw malformed(endpoint, "a result without timetoken") }
            if case .message(let id) = item.entry {
                finals.append(.message(timetoken: tt, uploadID: id, record: MessageRecord.final(record)))
            }
        }
        if !refused.isEmpty { try await local { [refused] in try state.removeFromOutbox(refused) } }
        if !configuration.pulls, !finals.isEmpty {
            let changes = finals
            try await local { try state.applyPulled(changes, checkpoint: nil, since: 0) }
        }
    }

    private func pushSeries(_ state: SeriesState, _ backoff: inout RetryBackoff) async throws {
        let batchSize = configuration.batchSize
        guard case .writer(let writerID)? = state.replicationRole else { return }
        let writer = SeriesReplicationRole.text(writerID)
        let key = state.replica.uploaded(url)
        var uploaded = try await local { try state.replicaCounter(key, what: "upload progress") }
        let endpoint = "_strata/series/\(segment)/events"
        while true {
            let generation = state.uploadSignal.generation
            let from = uploaded
            let (events, _) = try await local { try state.events(from: from, limit: batchSize) }
            if events.isEmpty {
                guard try await idle(state.uploadSignal, after: generation) else { return }
                continue
            }
            replication.direction(pull: false, caughtUp: false)
            replication.progress(pull: false, total: events.count)
            let body: JSON = .object(["writer": .string(writer), "events": .array(events.map { e in
                var o: [String: JSON] = ["sequence": .int(Int64(e.sequence)), "timestamp": .int(e.timestamp),
                                         "author": .string(e.author), "value": e.value]
                if let original = e.original { o["original"] = .int(Int64(original)) }
                return .object(o)
            })])
            let answer = try await send("POST", endpoint, body: body, accepting: [409], permission: .updateTopic)
            if answer.status == 409 {
                throw GatewayClient.Fault.permanent(.conflict("\(what): the gateway refused events from \(events[0].sequence) on: \(answer.body["reason"]?.stringValue ?? "conflict")"))
            }
            uploaded = (events.last?.sequence ?? from) + 1
            let next = uploaded
            try await local { try state.setUploaded(next, url: self.url) }
            backoff.reset()
            replication.progress(pull: false, completed: events.count)
        }
    }
}
