import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Counts (`messageCount(since:)`, `Store.messageCounts(channels:since:)`) and the multi-channel
// fetch (`Store.fetchHistory(channels:limit:)`).

@Suite struct HistoryCountTests {
    @Test func messageCounts() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let a = try store.channel("a", of: String.self)
        let b = try store.channel("b", of: Int64.self)
        _ = try store.channel("empty", of: String.self)
        let ta = try a.publish(contentsOf: (0..<10).map { "a\($0)" })
        let tb = try b.publish(contentsOf: (0..<5).map { Int64($0) })
        #expect(try a.messageCount(since: .zero) == 10)
        #expect(try a.messageCount(since: ta[3]) == 6, "strictly greater")
        #expect(try a.messageCount(since: ta[9]) == 0)
        #expect(try a.messageCount(since: Timetoken(.max)) == 0)

        // One timetoken for all channels.
        #expect(try store.messageCounts(channels: ["a", "b", "empty", "missing"], since: [ta[7]])
                == ["a": 2, "b": 5, "empty": 0, "missing": 0])
        // One per channel, in order.
        #expect(try store.messageCounts(channels: ["a", "b"], since: [ta[0], tb[3]]) == ["a": 9, "b": 1])
        #expect(try store.messageCounts(channels: [], since: []) == [:])
        // Any other number of timetokens.
        for since in [[], [ta[0], tb[0], tb[1]]] {
            #expect(throws: StrataError.self) { try store.messageCounts(channels: ["a", "b"], since: since) }
            do {
                _ = try store.messageCounts(channels: ["a", "b"], since: since)
            } catch let error as StrataError {
                guard case .invalidArgument = error else { Issue.record("got \(error)"); continue }
            }
        }
        #expect(throws: StrataError.invalidArgument(argument: "name", reason: "channel name is empty")) {
            try store.messageCounts(channels: [""], since: [.zero])
        }
        // Deleted messages are not counted.
        try a.deleteMessages(start: ta[2], end: ta[5])
        #expect(try a.messageCount(since: .zero) == 7)
    }

    @Test func fetchHistoryOfSeveralChannels() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = HistoryTestStore.options()
        options.principal = "server"
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        struct Move: Codable, Sendable, Equatable { var x: Int; var y: Int }
        let chat = try store.channel("chat", of: JSON.self)
        let moves = try store.channel("moves", of: Move.self)
        let numbers = try store.channel("numbers", of: Double.self)
        _ = try store.channel("quiet", of: String.self)
        try chat.publish(["text": "hi"], meta: ["lang": "en"], publisher: "alice")
        try chat.publish(["text": "yo"])
        try moves.publish(contentsOf: (0..<30).map { Move(x: $0, y: -$0) })
        try numbers.publish(2.5)

        let pages = try store.fetchHistory(channels: ["chat", "moves", "numbers", "quiet", "nowhere"])
        #expect(Set(pages.keys) == ["chat", "moves", "numbers"])
        let chatPage = try #require(pages["chat"])
        #expect(chatPage.messages.map(\.message) == [["text": "hi"], ["text": "yo"]])
        #expect(chatPage.messages[0].meta == ["lang": "en"])
        #expect(chatPage.messages[0].publisher == "alice")
        #expect(chatPage.messages[1].publisher == "server", "the principal publishes by default")
        #expect(chatPage.hasMore == false)
        let movePage = try #require(pages["moves"])
        #expect(movePage.messages.count == 25, "the default limit")
        #expect(movePage.hasMore)
        #expect(movePage.messages.last?.message == ["x": 29, "y": -29])
        #expect(pages["numbers"]?.messages.map(\.message) == [2.5])
        #expect(try store.fetchHistory(channels: ["moves"], limit: 100)["moves"]?.messages.count == 30)
        #expect(throws: StrataError.self) { try store.fetchHistory(channels: ["chat"], limit: 0) }
        #expect(throws: StrataError.self) { try store.fetchHistory(channels: ["chat"], limit: 101) }
        #expect(throws: StrataError.invalidArgument(argument: "name", reason: "channel name is empty")) { try store.fetchHistory(channels: [""]) }
    }
}
