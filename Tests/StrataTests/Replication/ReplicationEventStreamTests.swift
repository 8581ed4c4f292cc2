import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// ``Replication/events(bufferSize:)``: a throwing stream per consumer that never drops an event
/// silently, starts with where the replication is, finishes when it completes or stops, and ends
/// by throwing its failure, the store's close, or an overflow. Driven through the replication's
/// own reporting calls, and through real replications that have no gateway to talk to.
@Suite struct ReplicationEventStreamTests {
    static func replication(repeating: Bool = false) -> Replication {
        let url = URL(string: "http://127.0.0.1:9/db")!
        return Replication(configuration: repeating ? .repeatingBidirectionalReplication(with: url)
                                                    : .oneTimeBidirectionalReplication(with: url))
    }

    /// Every element of `stream`, and the error it ended with.
    static func drain(_ stream: AsyncThrowingStream<ReplicationEvent, any Error>) async -> ([ReplicationEvent], (any Error)?) {
        var events: [ReplicationEvent] = []
        do {
            for try await event in stream { events.append(event) }
            return (events, nil)
        } catch {
            return (events, error)
        }
    }

    static func received(_ n: Int, of total: Int) -> ReplicationEvent { .receiving(.init(completed: n, total: total)) }

    @Test("a consumer that falls more than bufferSize events behind gets those events, then subscriberOverflow; another consumer is not affected")
    func overflow() async throws {
        let r = Self.replication()
        let slow = try r.events(bufferSize: 2)
        let roomy = try r.events()
        r.progress(pull: true, total: 3)
        for _ in 0..<3 { r.progress(pull: true, completed: 1) }
        r.end(.completed)
        let (slowEvents, slowEnd) = await Self.drain(slow)
        #expect(slowEvents == [Self.received(1, of: 3), Self.received(2, of: 3)])
        guard case StrataError.subscriberOverflow(let message)? = slowEnd else {
            Issue.record("the slow stream ended with \(String(describing: slowEnd))")
            return
        }
        #expect(message.contains("2 events"))
        let (roomyEvents, roomyEnd) = await Self.drain(roomy)
        #expect(roomyEvents == [Self.received(1, of: 3), Self.received(2, of: 3), Self.received(3, of: 3), .completed])
        #expect(roomyEnd == nil)
    }

    @Test("bufferSize must be at least 1; a huge one is accepted")
    func bufferSizeRange() async throws {
        let r = Self.replication()
        for bad in [0, -1, Int.min] {
            #expect { _ = try r.events(bufferSize: bad) } throws: { error in
                guard case StrataError.invalidArgument("bufferSize", let message) = error else { return false }
                return message.contains("bufferSize \(bad)")
            }
        }
        r.progress(pull: false, total: 1, completed: 1)
        let huge = try r.events(bufferSize: .max)     // the catch-up on top of it does not overflow Int
        r.end(.completed)
        let (events, end) = await Self.drain(huge)
        #expect(events == [.sending(.init(completed: 1, total: 1)), .completed] && end == nil)
    }

    @Test("a stream made late starts with the cumulative progress of each direction and the state reached, and misses nothing after")
    func catchUp() async throws {
        let r = Self.replication(repeating: true)
        r.progress(pull: true, total: 4, completed: 3)
        r.progress(pull: false, total: 2, completed: 2)
        r.direction(pull: true, caughtUp: true)
        r.direction(pull: false, caughtUp: true)     // idle: .completed
        let late = try r.events()
        r.direction(pull: true, caughtUp: false)
        r.progress(pull: true, completed: 1)
        r.stop()
        r.end(.stopped)
        let (events, end) = await Self.drain(late)
        #expect(events == [.sending(.init(completed: 2, total: 2)), Self.received(3, of: 4), .completed, Self.received(4, of: 4)])
        #expect(end == nil)
        // After the end, a new stream holds where it ended, then finishes.
        let (after, afterEnd) = await Self.drain(try r.events())
        #expect(after == [.sending(.init(completed: 2, total: 2)), Self.received(4, of: 4)] && afterEnd == nil)
    }

    @Test("a stopped replication finishes its streams normally; a completed one after .completed")
    func stopAndComplete() async throws {
        let stopped = Self.replication()
        let a = try stopped.events(), b = try stopped.events()
        stopped.end(.stopped)
        for stream in [a, b] {
            let (events, end) = await Self.drain(stream)
            #expect(events.isEmpty && end == nil)
        }
        let completed = Self.replication()
        let c = try completed.events()
        completed.end(.completed)
        let (events, end) = await Self.drain(c)
        #expect(events == [.completed] && end == nil)
    }

    @Test("a failed replication ends its streams with .failed, then by throwing the error; so does a stream made afterwards")
    func failure() async throws {
        let r = Self.replication()
        let before = try r.events()
        r.end(.failed(.network("gateway said 401")))
        for stream in [before, try r.events()] {
            let (events, end) = await Self.drain(stream)
            #expect(events == [.failed(.network("gateway said 401"))])
            #expect((end as? StrataError) == .network("gateway said 401"))
        }
    }

    @Test("the store's close ends a running replication's streams by throwing .closed")
    func closeThrowsClosed() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        let db = try await store.documents("main")
        var config = ReplicationConfiguration.repeatingBidirectionalReplication(with: try ReplicatorLifecycleTests.deadURL())
        config.maximumRetryDelay = .milliseconds(20)
        let replication = try db.startReplication(with: config)
        let first = try replication.events(), second = try replication.events(bufferSize: 1)
        try await store.close()
        #expect(await replication.finished() == .stopped)
        for stream in [first, second] {
            let (events, end) = await Self.drain(stream)
            #expect(events.isEmpty)
            #expect((end as? StrataError) == .closed, "\(String(describing: end))")
        }
        let (_, later) = await Self.drain(replication.events)
        #expect((later as? StrataError) == .closed)
    }
}
