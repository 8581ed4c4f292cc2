import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The one buffer option of every stream, `bufferSize: Int`: at most that many elements wait for
/// the consumer (what a stream starts with comes on top), one more ends the stream by throwing
/// ``StrataError/subscriberOverflow(_:)``; below 1 is ``StrataError/invalidArgument(argument:reason:)``.
@Suite struct StreamBufferSizeTests {
    /// Every element of `stream`, and the error it ended with.
    static func drain<Element>(_ stream: AsyncThrowingStream<Element, any Error>) async -> ([Element], (any Error)?) {
        var out: [Element] = []
        do {
            for try await element in stream { out.append(element) }
            return (out, nil)
        } catch {
            return (out, error)
        }
    }

    static func isInvalidBufferSize(_ error: (any Error)?, _ size: Int) -> Bool {
        guard case StrataError.invalidArgument("bufferSize", let message)? = error else { return false }
        return message.contains("bufferSize \(size)")
    }

    @Test("TimeSeries.subscribe(bufferSize:) overflows after bufferSize live events, whatever subscriberBufferSize says")
    func seriesBufferSize() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try await store.timeSeries("s", of: Int64.self,
                                           options: TimeSeriesOptions(subscriptionRange: .limit(2), subscriberBufferSize: 1_000))
        try await s.append(contentsOf: [0, 1, 2])
        let small = s.subscribe(bufferSize: 3)
        let byOptions = s.subscribe()
        try await s.append(contentsOf: (3..<20).map { Int64($0) })
        s.state.broadcaster.waitForDeliveries()
        let (values, end) = await Self.drain(small)
        #expect(values.map(\.value) == [1, 2, 3, 4, 5])   // the range (1, 2), then three live events
        guard case StrataError.subscriberOverflow(let message)? = end else {
            Issue.record("ended with \(String(describing: end))")
            return
        }
        #expect(message.contains("3 events"))
        // subscribe() keeps the series' subscriberBufferSize (1,000): nothing overflowed.
        var it = byOptions.makeAsyncIterator()
        var seen: [Int64] = []
        while seen.count < 19, let e = try await it.next() { seen.append(e.value) }
        #expect(seen == (1..<20).map { Int64($0) })
    }

    @Test("TimeSeries.subscribe(bufferSize:) below 1 ends at once with invalidArgument; Int.max with a subscription range works")
    func seriesBufferSizeRange() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try await store.timeSeries("s", of: Int64.self, options: TimeSeriesOptions(subscriptionRange: .limit(2)))
        try await s.append(contentsOf: [0, 1, 2])
        for bad in [0, -1, Int.min] {
            let (values, end) = await Self.drain(s.subscribe(bufferSize: bad))
            #expect(values.isEmpty && Self.isInvalidBufferSize(end, bad), "\(String(describing: end))")
        }
        var it = s.subscribe(bufferSize: .max).makeAsyncIterator()
        #expect(try await it.next()?.value == 1)
        #expect(try await it.next()?.value == 2)
        try await s.append(3)
        #expect(try await it.next()?.value == 3)
    }

    @Test("DocumentDatabase.changes(bufferSize:) overflows after bufferSize commits; below 1 throws invalidArgument")
    func changesBufferSize() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url, options: documentStoreOptions())
        defer { try? store.close() }
        let db = try await store.documents("db")
        for bad in [0, -1, Int.min] {
            #expect { _ = try db.changes(bufferSize: bad) } throws: { Self.isInvalidBufferSize($0, bad) }
        }
        let small = try db.changes(bufferSize: 2)
        let huge = try db.changes(bufferSize: .max)
        for i in 0..<5 { try await db.save(Document(id: "d\(i)")) }
        db.state.broadcaster.waitForDeliveries()
        let (batches, end) = await Self.drain(small)
        #expect(batches.map { $0.map(\.id) } == [["d0"], ["d1"]])
        guard case StrataError.subscriberOverflow(let message)? = end else {
            Issue.record("ended with \(String(describing: end))")
            return
        }
        #expect(message.contains("more than 2 commits"))
        var it = huge.makeAsyncIterator()
        var ids: [String] = []
        while ids.count < 5, let batch = try await it.next() { ids += batch.map(\.id) }
        #expect(ids == (0..<5).map { "d\($0)" })
    }
}
