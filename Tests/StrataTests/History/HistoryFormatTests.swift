import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
