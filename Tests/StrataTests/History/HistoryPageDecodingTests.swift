import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A page decodes each message's publisher, also where consecutive messages share one (the page
// keeps the last publisher decoded) and where they do not; and the String and JSON channels,
// which take a specialized path, return what the generic path of a Codable type returns.

@Suite struct HistoryPageDecodingTests {
    private struct Note: Codable, Sendable, Equatable {
        var text: String
    }

    /// Publishers in an order that reuses, changes, drops and brings back a publisher; one is not
    /// ASCII, one is longer than a small string.
    private static let publishers: [String?] = ["alice", "alice", "bob", nil, "bob", "ünïcödé", "alice",
                                                nil, nil, "a publisher with a long name", "alice"]

    @Test(arguments: [false, true])
    func publishersSurviveAPage(settled: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let text = try store.channel("text", of: String.self)
        let json = try store.channel("json", of: JSON.self)
        let notes = try store.channel("notes", of: Note.self)
        let metas = Self.publishers.indices.map { i -> JSON? in
            if i % 3 == 0 { return JSON.object(["k": .int(Int64(i))]) }
            return Optional<JSON>.none
        }
        for (i, p) in Self.publishers.enumerated() {
            try text.publish("m\(i)", publisher: p)
            try json.publish(["i": .int(Int64(i))], meta: metas[i], publisher: p)
            try notes.publish(Note(text: "n\(i)"), publisher: p)
        }
        if settled { try store.compact() }
        for reverse in [false, true] {
            let t = try text.history(reverse: reverse).messages
            #expect(t.map(\.publisher) == Self.publishers)
            #expect(t.map(\.message) == Self.publishers.indices.map { "m\($0)" })
            let j = try json.history(reverse: reverse).messages
            #expect(j.map(\.publisher) == Self.publishers)
            #expect(j.map(\.message) == Self.publishers.indices.map { ["i": .int(Int64($0))] })
            #expect(j.map(\.meta) == metas)
            let n = try notes.history(reverse: reverse).messages
            #expect(n.map(\.publisher) == Self.publishers)
            #expect(n.map(\.message) == Self.publishers.indices.map { Note(text: "n\($0)") })
        }
        // Pages that start inside the run of messages.
        let all = try text.history().messages
        let older = try text.history(start: all[6].timetoken, limit: 3).messages
        #expect(older.map(\.publisher) == Array(Self.publishers[3..<6]))
        let fetched = try store.fetchHistory(channels: ["text", "json"], limit: 100)
        #expect(fetched["text"]?.messages.map(\.publisher) == Self.publishers)
        #expect(fetched["json"]?.messages.map(\.publisher) == Self.publishers)
    }
}
