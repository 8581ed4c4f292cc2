import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("TimeSeries subscriptions")
struct SubscriptionTests {
    /// Takes the next `n` events of a stream.
    func take<V>(_ n: Int, from iterator: inout AsyncThrowingStream<Event<V>, any Error>.Iterator) async throws -> [Event<V>] {
        var out: [Event<V>] = []
        while out.count < n, let e = try await iterator.next() { out.append(e) }
        return out
    }

    func waitUntil(_ condition: () -> Bool) async {
        for _ in 0..<500 where !condition() { try? await Task.sleep(for: .milliseconds(10)) }
    }

    @Test("the subscription range first, then live originals and edits, in order")
    func rangeThenLive() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try await store.timeSeries("s", of: Int64.self, options: TimeSeriesOptions(subscriptionRange: .limit(3)))
        try await s.append(contentsOf: [0, 1, 2, 3, 4])
        try await s.edit(originalSequence: 3, value: 33)   // seq 5
        var it = s.subscribe().makeAsyncIterator()
        // edits(.latest).fromLast(3): 3 (original), 4, 5 (edit of 3)
        let initial = try await take(3, from: &it)
        #expect(initial.map(\.sequence) == [3, 4, 5])
        try await s.append(6)
        try await s.edit(originalSequence: 0, value: 100)
        try await s.append(contentsOf: [8, 9])
        let live = try await take(4, from: &it)
        #expect(live.map(\.sequence) == [6, 7, 8, 9])
        #expect(live[1].isEditEvent && live[1].originalEvent?.sequence == 0 && live[1].value == 100)
    }

    @Test("latest, none and last(duration) ranges")
    func ranges() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let base: Int64 = 1_700_000_000_000
        let s = try await store.timeSeries("r", of: Int64.self)
        var it0 = s.subscribe().makeAsyncIterator()   // empty series, .latest: nothing yet
        try await s.append(contentsOf: (0..<10).map { (value: Int64($0), timestamp: SeriesTime.date(base + Int64($0) * 100)) })
        #expect(try await take(10, from: &it0).map(\.value) == Array(0..<10))
        var it1 = s.subscribe().makeAsyncIterator()
        try await s.append(10, timestamp: SeriesTime.date(base + 1_000))
        #expect(try await take(2, from: &it1).map(\.value) == [9, 10])

        let none = try await store.timeSeries("r", of: Int64.self, options: TimeSeriesOptions(subscriptionRange: .none))
        var it2 = none.subscribe().makeAsyncIterator()
        try await s.append(11, timestamp: SeriesTime.date(base + 1_100))
        #expect(try await take(1, from: &it2).map(\.value) == [11])

        let last = try await store.timeSeries("r", of: Int64.self,
                                        options: TimeSeriesOptions(subscriptionRange: .last(.milliseconds(250))))
        var it3 = last.subscribe().makeAsyncIterator()
        try await s.append(12, timestamp: SeriesTime.date(base + 1_200))
        #expect(try await take(4, from: &it3).map(\.value) == [9, 10, 11, 12])
    }

    @Test("several subscribers each get every event")
    func severalSubscribers() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try await store.timeSeries("m", of: Double.self, options: TimeSeriesOptions(subscriptionRange: .none))
        let streams = (0..<4).map { _ in s.subscribe() }
        #expect(s.state.broadcaster.count == 4)
        let writer = Task.detached {
            for i in 0..<200 { try s.append(Double(i)) }
        }
        try await withThrowingTaskGroup(of: [Double].self) { group in
            for stream in streams {
                group.addTask {
                    var seen: [Double] = []
                    for try await e in stream {
                        seen.append(e.value)
                        if seen.count == 200 { break }
                    }
                    return seen
                }
            }
            for try await seen in group { #expect(seen == (0..<200).map(Double.init)) }
        }
        try await writer.value
    }

    @Test("a slow subscriber's stream ends with subscriberOverflow; writers never wait for it")
    func slowSubscriber() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try await store.timeSeries("slow", of: Int64.self,
                                     options: TimeSeriesOptions(subscriptionRange: .limit(2), subscriberBufferSize: 5))
        try await s.append(contentsOf: [0, 1, 2])
        let stream = s.subscribe()
        try await s.append(contentsOf: (3..<100).map { Int64($0) })   // far more than 2 + 5
        s.state.broadcaster.waitForDeliveries()
        #expect(s.state.broadcaster.count == 0)
        var received: [Int64] = []
        do {
            for try await e in stream { received.append(e.value) }
            Issue.record("the stream ended without an error")
        } catch let StrataError.subscriberOverflow(message) {
            #expect(message.contains("slow"))
        }
        // The initial range (1, 2) and the first five live events, then the error.
        #expect(received == [1, 2, 3, 4, 5, 6, 7])
    }

    @Test("cancelling the consumer unregisters it; closing the store ends streams with .closed")
    func cancelAndClose() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let s = try await store.timeSeries("c", of: Int64.self)
        let consumer = Task {
            var n = 0
            for try await _ in s.subscribe() { n += 1 }
            return n
        }
        await waitUntil { s.state.broadcaster.count == 1 }
        #expect(s.state.broadcaster.count == 1)
        consumer.cancel()
        _ = try? await consumer.value
        await waitUntil { s.state.broadcaster.count == 0 }
        #expect(s.state.broadcaster.count == 0)

        let stream = s.subscribe()
        try await s.append(1)
        try await store.close()
        var it = stream.makeAsyncIterator()
        #expect(try await it.next()?.value == 1)
        await #expect(throws: StrataError.closed) { _ = try await it.next() }
        var late = s.subscribe().makeAsyncIterator()
        await #expect(throws: StrataError.closed) { _ = try await late.next() }
    }
}
