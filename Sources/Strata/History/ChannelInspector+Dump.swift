@_spi(Layers) import StrataFormat

/// `strata-dump channels <store> [<name>]`: the channels of a store, or one channel's messages.
extension ChannelInspector: CollectionInspector {
    package static let commandName = "channels"
    package static let abstract = "List the message-history channels of a store, or print one channel's messages."
    package static let discussion = """
        Without a name: one line per channel (messages a reader sees now, first and last \
        timetoken, bytes before compression, options). With a name: the channel's messages, \
        oldest first, as JSON text. Retention is measured against the current time, or the newest \
        timetoken any channel of the store assigned if that is later (FORMAT.md 15.5).
        """
    package static let usage = CollectionInspectorUsage(
        collection: .init(valueName: "name", help: "A channel name: print its messages."),
        limit: .init(help: "With a name: print only the newest N messages.", defaultValue: nil, minimum: 1))

    package static func run(storeAt store: String, arguments: CollectionInspectorArguments, json: Bool) throws -> String {
        if let name = arguments.collection {
            let dump = try ChannelInspector.dump(channel: name, ofStoreAt: store, limit: arguments.limit)
            return json ? try InspectionJSON.text(dump) : Self.render(dump)
        } else {
            let channels = try ChannelInspector.channels(ofStoreAt: store)
            return json ? try InspectionJSON.text(channels) : Self.render(channels)
        }
    }

    static func options(_ c: ChannelSummary) -> String {
        var parts: [String] = []
        if let r = c.retentionSeconds { parts.append("retention \(r) s") }
        if let l = c.limit { parts.append("limit \(l)") }
        return parts.isEmpty ? "-" : parts.joined(separator: ", ")
    }

    static func render(_ channels: [ChannelSummary]) -> String {
        let out = "Channels: \(channels.count)\n"
        guard !channels.isEmpty else { return out }
        var table = TextTable(["NAME", "ID>", "TYPE", "MESSAGES>", "FIRST TIMETOKEN>", "LAST TIMETOKEN>", "BYTES>", "OPTIONS"])
        for c in channels {
            table.add([c.name, "\(c.id)", c.messageType, Format.count(c.messages),
                       c.firstTimetoken.map(String.init(describing:)) ?? "-",
                       c.lastTimetoken.map(String.init(describing:)) ?? "-",
                       Format.bytes(c.bytes), options(c)])
        }
        return out + table.render()
    }

    static func render(_ d: ChannelDump) -> String {
        let c = d.channel
        var out = "Channel \(c.name) (id \(c.id), \(c.messageType)): \(Format.count(c.messages)) messages, \(Format.bytes(c.bytes)), options \(options(c))\n"
        if d.truncated { out += "  showing the newest \(d.messages.count)\n" }
        guard !d.messages.isEmpty else { return out }
        var table = TextTable(["TIMETOKEN>", "TIME", "PUBLISHER", "META", "MESSAGE"])
        for m in d.messages {
            table.add(["\(m.timetoken)\(m.isProvisional == true ? " (provisional)" : "")", m.time, m.publisher ?? "-", m.meta ?? "-",
                       m.message ?? "(undecodable: \(m.error ?? "?"))"])
        }
        return out + table.render()
    }
}
