import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// `ChannelInspector` (behind `strata-dump channels`): channels and messages read from a store's
// files, with the same visibility rules as the store.

@Suite struct ChannelInspectorTests {
    @Test func listsChannelsAndMessages() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
        let chat = try store.channel("chat", of: JSON.self)
        let limited = try store.channel("limited", of: Int64.self, options: ChannelOptions(limit: 3))
        _ = try store.channel("quiet", of: String.self)
        let t1 = try chat.publish(["text": "hi"], meta: ["lang": "en"], publisher: "alice")
        let t2 = try chat.publish(["text": "yo"])
        try limited.publish(contentsOf: (0..<10).map { Int64($0) })
        try store.sync()

        // Read while the store is open (no lock taken), then after close.
        for closed in [false, true] {
            if closed { try store.close() }
            let channels = try ChannelInspector.channels(ofStoreAt: dir.path)
            #expect(channels.map(\.name) == ["chat", "limited", "quiet"])
            #expect(channels[0].messages == 2)
            #expect(channels[0].firstTimetoken == t1)
            #expect(channels[0].lastTimetoken == t2)
            #expect(channels[0].messageType == "JSON")
            #expect(channels[0].bytes > 20)
            #expect(channels[1].messages == 3)
            #expect(channels[1].limit == 3)
            #expect(channels[2].messages == 0)
            #expect(channels[2].firstTimetoken == nil)

            let dump = try ChannelInspector.dump(channel: "chat", ofStoreAt: dir.path)
            #expect(dump.messages.map(\.message) == [#"{"text":"hi"}"#, #"{"text":"yo"}"#])
            #expect(dump.messages[0].meta == #"{"lang":"en"}"#)
            #expect(dump.messages[0].publisher == "alice")
            #expect(dump.messages[0].timetoken == t1)
            #expect(!dump.truncated)
            let newest = try ChannelInspector.dump(channel: "limited", ofStoreAt: dir.path, limit: 2)
            #expect(newest.messages.map(\.message) == ["8", "9"])
            #expect(newest.truncated)
            #expect(throws: StrataError.notFound(kind: .channel, name: "nowhere", reason: "channel \"nowhere\" in \(dir.path)")) {
                try ChannelInspector.dump(channel: "nowhere", ofStoreAt: dir.path)
            }
        }
    }
}
