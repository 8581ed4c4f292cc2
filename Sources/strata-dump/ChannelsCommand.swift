import ArgumentParser
import Foundation
import Strata
import StrataInspection
import StrataFormat
import StrataFiles
import StrataEngine

extension StrataDump {
    /// `strata-dump channels <store> [<name>]`: the channels of a store, or one channel's messages.
    struct Channels: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the message-history channels of a store, or print one channel's messages.",
            discussion: """
                Without a name: one line per channel (messages a reader sees now, first and last \
                timetoken, bytes before compression, options). With a name: the channel's messages, \
                oldest first, as JSON text. Retention is measured against the current time, or the newest \
                timetoken any channel of the store assigned if that is later (FORMAT.md 15.5).
                """)

        @Argument(help: "The store directory.")
        var store: String

        @Argument(help: "A channel name: print its messages.")
        var name: String?

        @Option(help: "With a name: print only the newest N messages.")
        var limit: Int?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        }

        func run() throws {
            if let name {
                let dump = try ChannelInspector.dump(channel: name, ofStoreAt: store, limit: limit)
                if output.json { try printJSON(dump) } else { print(Self.render(dump), terminator: "") }
            } else {
                let channels = try ChannelInspector.channels(ofStoreAt: store)
                if output.json { try printJSON(channels) } else { print(Self.render(channels), terminator: "") }
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
                table.add(["\(m.timetoken)", m.time, m.publisher ?? "-", m.meta ?? "-",
                           m.message ?? "(undecodable: \(m.error ?? "?"))"])
            }
            return out + table.render()
        }
    }
}
