import Foundation
import Testing
@testable import Strata

// `ChannelInspector` (behind `strata-dump channels`): channels and messages read from a store's
// files, with the same visibility rules as the store.

@Suite struct HistoryInspectorTests {
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
            #expect(throws: StrataError.notFound("channel \"nowhere\" in \(dir.path)")) {
                try ChannelInspector.dump(channel: "nowhere", ofStoreAt: dir.path)
            }
        }
    }
}

/// The worked example of FORMAT.md §15.2, byte for byte.
@Suite struct HistoryFormatTests {
    @Test func workedExample() throws {
        let keys = ChannelKeys(name: "example", id: 1)
        #expect(keys.key(17_218_459_036_160_000) == [0x11, 0x03, 0x11, 0x01, 0x17, 0x3d, 0x2c, 0x18, 0xe6, 0x6e, 0x10, 0x00])
        var value: [UInt8] = []
        try MessageRecord.encode(message: { try ValueCodec<String>().encode("hi", into: &$0) }, meta: nil,
                                 publisher: "alice", into: &value)
        #expect(value == [0x02, 0x05, 0x61, 0x6c, 0x69, 0x63, 0x65, 0x68, 0x69])
        let parts = try value.withUnsafeBytes { try MessageRecord.decode($0, what: "example") }
        #expect(parts.publisher == "alice")
        #expect(parts.meta == nil)
        #expect(ChannelHead(last: 5, floor: 2).encoded == [5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0])
        let descriptor = ChannelDescriptor(typeName: "JSON", retention: 600_000_000, limit: 1000)
        #expect(try ChannelDescriptor(decoding: descriptor.encoded, channel: "example") == descriptor)
        #expect(descriptor.options == ChannelOptions(retention: .seconds(60), limit: 1000))
        // A long meta takes a multi-byte length.
        value = []
        let meta: JSON = ["note": .string(String(repeating: "x", count: 300))]
        MessageRecord.encode(message: { $0.append(1) }, meta: meta, publisher: nil, into: &value)
        let (decodedMeta, message) = try value.withUnsafeBytes { bytes in
            let parts = try MessageRecord.decode(bytes, what: "example")
            return (parts.meta, Array(parts.message))
        }
        #expect(decodedMeta == meta)
        #expect(message == [1])
    }
}
