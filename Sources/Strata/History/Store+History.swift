@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Store {
    /// The channel `name` with messages of type `Message`, created (keeping every message) if it
    /// does not exist. An existing channel keeps its stored options.
    ///
    /// ```swift
    /// let room = try store.channel("chat.room1", of: JSON.self)
    /// try room.publish(["text": "hello"])
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for an empty name (or one over 4 KiB);
    ///   ``StrataError/typeMismatch(_:)`` if the channel was created with another message type.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type) throws -> Channel<Message> {
        try openChannel(name, of: type, options: nil, access: nil)
    }

    /// The channel `name`, created with `options` if it does not exist; if it exists, `options`
    /// replace its stored ones (messages the old options had removed stay removed).
    ///
    /// ```swift
    /// let log = try store.channel("audit", of: JSON.self,
    ///                             options: ChannelOptions(retention: .seconds(30 * 86_400)))
    /// ```
    ///
    /// - Throws: as ``channel(_:of:)``, and ``StrataError/invalidArgument(argument:reason:)`` for a retention
    ///   below 100 ns or a limit below 1.
    public func channel<Message: Codable & Sendable>(_ name: String, of type: Message.Type,
                                                     options: ChannelOptions) throws -> Channel<Message> {
        try openChannel(name, of: type, options: options, access: nil)
    }

    /// Opens channel `name`; with `access` (a session's), creating it or changing its stored
    /// options needs ``Permission/modifyTopic``.
    func openChannel<Message: Codable & Sendable>(_ name: String, of type: Message.Type,
                                                  options: ChannelOptions?, access: SessionAccess?) throws -> Channel<Message> {
        try options?.validate(channel: name)
        let typeName = try ValueCodec<Message>.typeName
        let authorize: () throws -> Void = { try access?.require(.modifyTopic, name) }
        let state = try channelState(name, create: (typeName, options ?? ChannelOptions()), authorizeCreate: authorize)
        guard try ValueCodec<Message>.accepts(storedTypeName: state.typeName) else {
            throw StrataError.typeMismatch("channel \"\(name)\" holds \(state.typeName) messages, not \(typeName)")
        }
        if let options { try state.update(options: options, authorize: authorize) }
        return Channel(state: state, access: access)
    }

    /// The newest `limit` messages of each channel, as JSON whatever the channels' message types,
    /// read from one consistent snapshot. A channel that does not exist or has no messages is
    /// absent from the result.
    ///
    /// ```swift
    /// let pages = try store.fetchHistory(channels: ["chat.room1", "chat.room2"])
    /// for (name, page) in pages { print(name, page.messages.count, page.hasMore) }
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for an empty channel name or a `limit`
    ///   outside 1…``HistoryPage/maximumLimit``.
    public func fetchHistory(channels: [String], limit: Int = 25) throws -> [String: HistoryPage<JSON>] {
        try fetchHistory(channels: channels, limit: limit, access: nil)
    }

    /// ``fetchHistory(channels:limit:)``, leaving out the channels `access` may not read.
    func fetchHistory(channels: [String], limit: Int, access: SessionAccess?) throws -> [String: HistoryPage<JSON>] {
        try HistoryQuery.check(limit: limit, "fetchHistory")
        let states = try existingChannels(try readable(channels, access))
        let snapshot = try engine.snapshot()
        var result: [String: HistoryPage<JSON>] = [:]
        for state in states where result[state.keys.name] == nil {
            let keys = state.keys
            let typeName = state.typeName
            let page = try HistoryQuery.page(in: snapshot, keys: keys, floor: try state.floor(in: snapshot),
                                             start: nil, end: nil, limit: limit, reverse: false) { tt, value, publishers in
                try HistoryQuery.json(tt, value, keys: keys, typeName: typeName, publishers: &publishers)
            }
            if !page.messages.isEmpty { result[keys.name] = page }
        }
        return result
    }

    /// The number of messages of each channel with a timetoken strictly greater than its
    /// timetoken in `since`: one timetoken for all channels, or one per channel in order. Every
    /// channel named is in the result (0 for one that does not exist).
    ///
    /// ```swift
    /// let unread = try store.messageCounts(channels: ["a", "b"], since: [lastSeenA, lastSeenB])
    /// ```
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if `since` has neither 1 nor
    ///   `channels.count` timetokens, or for an empty channel name.
    public func messageCounts(channels: [String], since: [Timetoken]) throws -> [String: Int] {
        try messageCounts(channels: channels, since: since, access: nil)
    }

    /// ``messageCounts(channels:since:)``, leaving out the channels `access` may not read.
    func messageCounts(channels: [String], since: [Timetoken], access: SessionAccess?) throws -> [String: Int] {
        guard since.count == 1 || since.count == channels.count else {
            throw StrataError.invalidArgument(argument: "since", reason:
                "messageCounts: \(since.count) timetokens for \(channels.count) channels (give 1 or \(channels.count))")
        }
        var states: [String: ChannelState] = [:]
        for state in try existingChannels(try readable(channels, access)) { states[state.keys.name] = state }
        let snapshot = try engine.snapshot()
        var result: [String: Int] = [:]
        for (i, name) in channels.enumerated() {
            if let access, !(try access.allows(.readTopic, name)) { continue }
            let tt = since.count == 1 ? since[0] : since[i]
            guard let state = states[name], tt.rawValue < .max else {
                result[name] = 0
                continue
            }
            let lower = max(tt.rawValue + 1, try state.floor(in: snapshot))
            result[name] = try HistoryQuery.count(in: snapshot, keys: state.keys, lower: lower)
        }
        return result
    }

    /// The names `access` may read (Diffusion leaves the others out of a multi-path selection);
    /// all of them without `access`.
    private func readable(_ names: [String], _ access: SessionAccess?) throws -> [String] {
        guard let access else { return names }
        for name in names { try HistoryStoreState.check(name: name) }   // bad names fail as for the owner
        return try names.filter { try access.allows(.readTopic, $0) }
    }

    /// The states of the channels of `names` that exist, in order.
    private func existingChannels(_ names: [String]) throws -> [ChannelState] {
        var states: [ChannelState] = []
        for name in names {
            do {
                states.append(try channelState(name, create: nil))
            } catch StrataError.notFound {
                continue
            }
        }
        return states
    }
}
