import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Bad input gets a typed error naming it: empty channel names, limits out of range, messages that
// fail to encode, another message type, bad options, a closed store.

private struct Unencodable: Codable, Sendable {
    struct Refused: Error {}
    func encode(to encoder: any Encoder) throws { throw Refused() }
    init() {}
    init(from decoder: any Decoder) throws {}
}

@Suite struct HistoryErrorTests {
    @Test func badArguments() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        #expect(throws: StrataError.invalidArgument(argument: "name", reason: "channel name is empty")) { try store.channel("", of: String.self) }
        #expect(throws: StrataError.self) { try store.channel(String(repeating: "x", count: 5000), of: String.self) }
        let room = try store.channel("room", of: String.self)
        try room.publish("x")
        for limit in [0, -1, HistoryPage<String>.maximumLimit + 1] {
            #expect(throws: StrataError.invalidArgument(argument: "limit", reason: "history of channel \"room\": limit \(limit) is outside 1…100")) {
                try room.history(limit: limit)
            }
        }
        #expect(try room.history(limit: HistoryPage<String>.maximumLimit).messages.count == 1)
        #expect(throws: StrataError.self) { try room.messages(bufferSize: 0) }

        // A message that fails to encode stores nothing, alone or in a batch.
        let odd = try store.channel("odd", of: Unencodable.self)
        #expect(throws: StrataError.self) { try odd.publish(Unencodable()) }
        #expect(throws: StrataError.self) { try odd.publish(contentsOf: [Unencodable(), Unencodable()]) }
        #expect(try odd.messageCount(since: .zero) == 0)
        do {
            try odd.publish(Unencodable())
        } catch let error as StrataError {
            guard case .invalidArgument = error else { Issue.record("got \(error)"); return }
        }

        // Another message type.
        #expect(throws: StrataError.typeMismatch("channel \"room\" holds String messages, not Int64")) {
            try store.channel("room", of: Int64.self)
        }
        // Bad options.
        #expect(throws: StrataError.self) { try store.channel("o", of: String.self, options: ChannelOptions(limit: 0)) }
        #expect(throws: StrataError.self) {
            try store.channel("o", of: String.self, options: ChannelOptions(retention: .nanoseconds(10)))
        }
        #expect(throws: StrataError.self) {
            try store.channel("o", of: String.self, options: ChannelOptions(retention: .seconds(-1)))
        }
    }

    @Test func closedStore() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: HistoryTestStore.options())
        let room = try await store.channel("room", of: String.self)
        try await room.publish("x")
        try await store.close()
        #expect(throws: StrataError.closed) { try room.publish("y") }
        #expect(throws: StrataError.closed) { try room.publish(contentsOf: []) }
        #expect(throws: StrataError.closed) { try room.history() }
        #expect(throws: StrataError.closed) { try room.messageCount(since: .zero) }
        #expect(throws: StrataError.closed) { try room.deleteMessages() }
        #expect(throws: StrataError.closed) { try room.messages() }
        #expect(throws: StrataError.closed) { try store.channel("room", of: String.self) }
        #expect(throws: StrataError.closed) { try store.fetchHistory(channels: ["room"]) }
    }

    @Test func damagedRecordsAreReportedNotTrusted() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let room = try store.channel("room", of: Int64.self)
        let tt = try room.publish(7)
        // Overwrite the record with bytes that are not a message record, then a bad Int64.
        for value in [[0x80 as UInt8, 1, 2], [0, 1, 2, 3]] {
            var batch = WriteBatch()
            batch.putRaw(room.state.keys.key(tt.rawValue), value)
            try store.engine.write(batch)
            #expect(throws: StrataError.self) { try room.history() }
            #expect(try room.messageCount(since: .zero) == 1, "counting reads keys only")
        }
        // A catalog payload of an unknown layout version.
        var batch = WriteBatch()
        Catalog.put(CatalogEntry(id: 99, payload: [7]), kind: .channel, name: "future", into: &batch)
        try store.engine.write(batch)
        #expect(throws: StrataError.unsupportedFormatVersion(file: "catalog entry channel \"future\"", found: 7)) {
            try store.channel("future", of: String.self)
        }
    }
}
