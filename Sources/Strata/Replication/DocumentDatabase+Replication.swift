@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension DocumentDatabase {
    /// Starts replicating this database with a gateway database (`Gateway/PROTOCOL.md`): see
    /// ``ReplicationConfiguration`` for the choices and ``Replication`` for what it reports.
    ///
    /// ```swift
    /// var config = ReplicationConfiguration.repeatingBidirectionalReplication(
    ///     with: URL(string: "http://127.0.0.1:4984/main")!)
    /// config.authentication = .basic(user: "alice", password: "secret")
    /// let replication = try db.startReplication(with: config)
    /// for try await event in try replication.events() { print(event) }
    /// ```
    ///
    /// Several replications of one database may run at once (e.g. with two gateways). Needs
    /// ``Permission/readTopic`` and ``Permission/updateTopic`` in a session.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for a configuration out of range (a URL that
    ///   is not http(s), a batch size outside 1...10,000, …); ``StrataError/closed`` after the
    ///   store closed.
    public func startReplication(with configuration: ReplicationConfiguration) throws -> Replication {
        if let access {
            try access.require(.readTopic, name)
            try access.require(.updateTopic, name)
        }
        try configuration.validate()
        let replication = Replication(configuration: configuration)
        let state = self.state
        let registry = state.replications
        registry.add(replication, to: state)
        // Registered first, then checked: a close after the check stops it through the registry.
        if (try? state.writer.withLock { $0.closed }) ?? false {
            registry.remove(replication, from: state)
            throw StrataError.closed
        }
        let replicator = Replicator(database: DocumentDatabase(state: state), configuration: configuration, replication: replication)
        replication.start { replication in
            await replicator.run()
            registry.remove(replication, from: state)
        }
        return replication
    }

    /// Stops every replication of this database (started through any handle of it); each ends
    /// as ``Replication/stop()`` says.
    ///
    /// ```swift
    /// db.stopReplication()
    /// ```
    public func stopReplication() {
        state.replications.stopAll(of: state)
    }

    /// The replications of this database running now.
    ///
    /// ```swift
    /// for replication in db.replications { print(replication.status) }
    /// ```
    public var replications: [Replication] {
        state.replications.replications(of: state)
    }
}
