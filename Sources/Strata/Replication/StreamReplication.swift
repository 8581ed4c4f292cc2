@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Starting and listing the replications of channels and series (``StreamReplicator``), which
/// share the documents' ``Replication`` handle and ``ReplicationConfiguration``.
enum StreamReplication {
    /// Starts a replication of `target` registered under `key` in the store's registry;
    /// `prepare` (which also reports a closed store) makes the collection's local state ready
    /// before the call returns, so that writes right after it follow the replication's rules.
    static func start(_ target: StreamReplicator.Target, key: AnyObject & Sendable, registry: ReplicationRegistry,
                      configuration: ReplicationConfiguration, what: String,
                      prepare: () throws -> Void) throws -> Replication {
        try configuration.validate()
        guard configuration.filter == nil, configuration.filterName == nil, configuration.filterParameters.isEmpty else {
            throw StrataError.invalidArgument(argument: "filter", reason: "replication of \(what): filters select documents; a channel or series replicates whole")
        }
        guard configuration.limitToChannels.isEmpty else {
            throw StrataError.invalidArgument(argument: "limitToChannels", reason: "replication of \(what): limitToChannels selects documents; a channel or series replicates whole")
        }
        let replication = Replication(configuration: configuration)
        registry.add(replication, to: key)
        // Registered first, then checked: a close after the check stops it through the registry.
        do {
            try prepare()
        } catch {
            registry.remove(replication, from: key)
            throw error
        }
        let replicator = StreamReplicator(target: target, configuration: configuration, replication: replication)
        replication.start { replication in
            await replicator.run()
            registry.remove(replication, from: key)
        }
        return replication
    }
}

extension Channel {
    /// Starts replicating the channel with a `strata-gateway` database (Gateway/PROTOCOL.md
    /// "Channels"): every store that replicates a channel converges to the gateway's history of
    /// it — the same messages, timetokens, order, deletions and counts.
    ///
    /// ```swift
    /// let room = try store.channel("chat/room1", of: ChatMessage.self)
    /// let replication = try room.startReplication(with: .repeatingBidirectionalReplication(with: gatewayURL))
    /// ```
    ///
    /// The first replication marks the channel as replicating, for good, before the call
    /// returns: from then on a publish is **provisional** (``HistoryMessage/isProvisional``) — in the local history at
    /// once, at the timetoken this store's clock gives it — until the gateway orders it; then it
    /// moves to the gateway's timetoken in one commit that leaves no trace of the provisional
    /// one. Each message carries an upload id, so a retried upload never makes a second message.
    /// Messages the channel held before its first replication become provisional and upload too.
    /// (A replication that only pulls leaves them provisional until one that pushes uploads them:
    /// a pulled message never overwrites a message of this store.)
    /// ``deleteMessages(start:end:)`` replicates (the final messages of its range that this store
    /// has seen); retention and limits stay this store's own. Live ``messages(bufferSize:)``
    /// streams deliver pulled messages too, each once (a finalized message of this store is not
    /// delivered again).
    ///
    /// Filters and ``ReplicationConfiguration/limitToChannels`` select documents and are refused
    /// here. Needs ``Permission/readTopic`` and ``Permission/updateTopic`` in a session.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for a bad configuration;
    ///   ``StrataError/closed`` after the store closed.
    public func startReplication(with configuration: ReplicationConfiguration) throws -> Replication {
        if let access {
            try access.require(.readTopic, name)
            try access.require(.updateTopic, name)
        }
        let state = self.state
        return try StreamReplication.start(.channel(state), key: state, registry: state.history.replications,
                                           configuration: configuration, what: "channel \"\(name)\"") {
            _ = try state.history.engine.snapshot()
            try state.startReplicating()
        }
    }

    /// Stops every replication of this channel (as ``Replication/stop()`` does for each).
    public func stopReplication() {
        state.history.replications.stopAll(of: state)
    }

    /// The channel's running replications.
    public var replications: [Replication] {
        state.history.replications.replications(of: state)
    }
}

extension TimeSeries {
    /// Starts replicating the series with a `strata-gateway` database (Gateway/PROTOCOL.md "Time
    /// series"): every store that replicates a series converges to the same events, sequence
    /// numbers, timestamps, authors, values and edits.
    ///
    /// ```swift
    /// let prices = try store.timeSeries("prices/AAPL", of: Double.self)
    /// let replication = try prices.startReplication(with: .repeatingBidirectionalReplication(with: gatewayURL))
    /// ```
    ///
    /// **A replicated series has one writer.** A configuration that pushes claims the series at
    /// the gateway: the first store to claim it is its writer, for good; it numbers the events
    /// (also while offline: they upload later with the same sequences) and the gateway keeps
    /// them. Every other store is a reader: it applies the writer's events, and its own
    /// ``append(_:)`` and ``edit(originalSequence:value:)`` throw ``StrataError/conflict(_:)``.
    /// From the first start until the gateway answers the claim, local writes throw the same
    /// error, so no store can fork a series. A series with events of its own whose claim is
    /// refused fails the replication with ``StrataError/conflict(_:)`` and keeps its events. A
    /// configuration that only pulls makes the store a reader; for a series with events of its own
    /// that never replicated, the call throws ``StrataError/conflict(_:)``.
    ///
    /// Filters and ``ReplicationConfiguration/limitToChannels`` select documents and are refused
    /// here. Needs ``Permission/readTopic`` and ``Permission/updateTopic`` in a session.
    public func startReplication(with configuration: ReplicationConfiguration) throws -> Replication {
        if let access {
            try access.require(.readTopic, path)
            try access.require(.updateTopic, path)
        }
        let state = self.state
        return try StreamReplication.start(.series(state), key: state, registry: state.replications,
                                           configuration: configuration, what: "time series \"\(path)\"") {
            _ = try state.engine.snapshot()
            _ = try state.beginReplication(pushes: configuration.pushes)
        }
    }

    /// Stops every replication of this series (as ``Replication/stop()`` does for each).
    public func stopReplication() {
        state.replications.stopAll(of: state)
    }

    /// The series' running replications.
    public var replications: [Replication] {
        state.replications.replications(of: state)
    }
}
