import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The live half of a channel: `messages()` delivers what is published after the call, in
// timetoken order, ends with `subscriberOverflow` when its bounded buffer fills, ends by throwing `.closed` when the
// store closes, and unsubscribes when the iterating task is cancelled.

@Suite struct HistoryStreamTests {
    @Test func deliversPublishedMessagesInOrder() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let room = try await store.channel("room", of: String.self)
        try await room.publish("before")
        let stream = try room.messages()
        let other = try await store.channel("room", of: String.self).messages()  // a second subscriber
        let publisher = Task.detached {
            var tts: [Timetoken] = []
            tts.append(try room.publish("one", meta: ["n": 1], publisher: "alice"))
            tts += try room.publish(contentsOf: ["two", "three"])
            tts.append(try room.publish("four"))
            return tts
        }
        var received: [HistoryMessage<String>] = []
        for try await m in stream {
            received.append(m)
            if received.count == 4 { break }
        }
        let tts = try await publisher.value
        #expect(received.map(\.message) == ["one", "two", "three", "four"])
        #expect(received.map(\.timetoken) == tts)
        #expect(received[0].meta == ["n": 1])
        #expect(received[0].publisher == "alice")
        var second: [String] = []
        for try await m in other {
            second.append(m.message)
            if second.count == 4 { break }
        }
        #expect(second == ["one", "two", "three", "four"])
        // What the stream delivered is what history holds.
        #expect(try await room.history().messages == [HistoryMessage(message: "before", timetoken: try await room.history().start!)] + received)
    }

    @Test func overflowEndsTheStreamWithAnError() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let room = try await store.channel("room", of: Int64.self)
        let stream = try room.messages(bufferSize: 3)
        try await room.publish(contentsOf: (0..<10).map { Int64($0) })
        room.state.broadcaster.waitForDeliveries()
        #expect(room.state.broadcaster.count == 0, "the overflowed subscriber is gone")
        var received: [Int64] = []
        do {
            for try await m in stream { received.append(m.message) }
            Issue.record("the stream ended without an error")
        } catch let error as StrataError {
            guard case .subscriberOverflow = error else { Issue.record("got \(error)"); return }
        }
        #expect(received == [0, 1, 2])
        try await room.publish(10)  // nobody listens: nothing grows
    }

    @Test func closingTheStoreEndsStreamsWithClosed() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: HistoryTestStore.options())
        let room = try await store.channel("room", of: Int64.self)
        let stream = try room.messages()
        try await room.publish(1)
        try await store.close()
        var received: [Int64] = []
        do {
            for try await m in stream { received.append(m.message) }
            Issue.record("the stream ended without an error")
        } catch {
            #expect(error as? StrataError == .closed)
        }
        #expect(received == [1])
    }

    @Test func cancellingUnsubscribes() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: HistoryTestStore.options())
        defer { try? store.close() }
        let room = try await store.channel("room", of: Int64.self)
        let stream = try room.messages()
        #expect(room.state.broadcaster.count == 1)
        let task = Task {
            var n = 0
            for try await _ in stream { n += 1 }
            return n
        }
        try await room.publish(1)
        task.cancel()
        _ = try? await task.value
        for _ in 0..<100 where room.state.broadcaster.count > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(room.state.broadcaster.count == 0)
        try await room.publish(2)
    }
}
