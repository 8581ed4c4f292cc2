import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The store's executor behind the `async` twins (Store/StoreExecutor.swift): many tasks at once,
// cancellation before and after the work starts, calls after close, and close while jobs wait.
// Waits are bounded (awaitBounded, runBounded) so that a hang fails a test instead of the suite.

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Calls the synchronous twin from an `async` context (where Swift picks the `async` one).
private func blocking<T>(_ body: () throws -> T) rethrows -> T { try body() }

/// Whether `body`, run in a task that is cancelled before it calls `body`, throws Swift's
/// `CancellationError` (false for any other error, or none).
private func throwsCancellationWhenCancelledEarly<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async -> Bool {
    let task = Task { () async throws -> T in
        try? await Task.sleep(for: .seconds(3_600))  // ends at once: the task is cancelled
        return try await body()
    }
    task.cancel()
    do {
        _ = try await task.value
        return false
    } catch {
        return error is CancellationError
    }
}

/// Runs a job that waits for `gate` on every thread `executor` may start, and returns once all of
/// them run (nil if they did not start within the bound): jobs submitted meanwhile stay queued.
private func occupyEveryThread(of executor: StoreExecutor, until gate: DispatchSemaphore) async -> [Task<Void, any Error>]? {
    let (started, startedContinuation) = AsyncStream<Void>.makeStream()
    let blockers = (0..<StoreExecutor.maximumThreads).map { _ in
        Task {
            try await executor.run {
                startedContinuation.yield()
                gate.wait()
                gate.signal()  // let the next blocker go too
            }
        }
    }
    let allStarted = await awaitBounded {
        var iterator = started.makeAsyncIterator()
        for _ in 0..<StoreExecutor.maximumThreads { _ = await iterator.next() }
    }
    return allStarted == nil ? nil : blockers
}

/// Whether `condition` became true within the bound (polled; not a measure of speed).
private func eventually(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
    await awaitBounded {
        while !condition() { try await Task.sleep(for: .milliseconds(1)) }
    } != nil
}

@Suite("Async executor")
struct AsyncExecutorTests {
    @Test func manyConcurrentTasksAppendContiguousSequences() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url)
        defer { try? store.close() }
        let series = try await store.timeSeries("s", of: Int64.self)
        let room = try await store.channel("room", of: Int64.self)

        let (sequences, timetokens) = try await withThrowingTaskGroup(of: (UInt64?, Timetoken?).self) { group in
            for i in 0..<200 {
                group.addTask { (try await series.append(Int64(i)).sequence, nil) }
                if i % 2 == 0 { group.addTask { (nil, try await room.publish(Int64(i))) } }
            }
            var sequences: [UInt64] = []
            var timetokens: [Timetoken] = []
            for try await (s, t) in group {
                if let s { sequences.append(s) }
                if let t { timetokens.append(t) }
            }
            return (sequences, timetokens)
        }
        #expect(sequences.sorted() == Array(0..<200))
        let events = try blocking { try series.query(.values) }.events
        #expect(events.map(\.sequence) == Array(0..<200))
        #expect(Set(events.map(\.value)) == Set((0..<200).map { Int64($0) }))
        #expect(Set(timetokens).count == 100)
        let page = try blocking { try room.history(limit: 100) }
        #expect(page.messages.map(\.timetoken) == timetokens.sorted())
    }

    @Test func aTaskCancelledBeforeTheWorkStartsThrowsCancelledAndWritesNothing() async throws {
        let tmp = try TemporaryDirectory()
        let other = try TemporaryDirectory()
        defer {
            tmp.remove()
            other.remove()
        }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let series = try await store.timeSeries("s", of: Int64.self)
        let room = try await store.channel("room", of: String.self)
        let db = try await store.documents("d")

        #expect(await throwsCancellationWhenCancelledEarly { try await series.append(1) })
        #expect(await throwsCancellationWhenCancelledEarly { try await series.append(contentsOf: [1, 2]) })
        #expect(await throwsCancellationWhenCancelledEarly { try await series.query(.values) })
        #expect(await throwsCancellationWhenCancelledEarly { try await room.publish("x") })
        #expect(await throwsCancellationWhenCancelledEarly { try await store.put(b("k"), b("v")) })
        #expect(await throwsCancellationWhenCancelledEarly { try await db.save(Document(id: "x")) })
        #expect(await throwsCancellationWhenCancelledEarly { try await store.close() })
        #expect(await throwsCancellationWhenCancelledEarly { try await Store.open(at: other.url) })

        // Nothing ran: no event, message, key or document; the store is open; the other one was
        // never opened.
        #expect(try blocking { try series.bounds() }.count == 0)
        #expect(try blocking { try room.history() }.messages.isEmpty)
        #expect(try blocking { try store.get(b("k")) } == nil)
        #expect(try blocking { try db.document(id: "x") } == nil)
        #expect(await Store.opened(at: tmp.url) === store)
        #expect(await Store.opened(at: other.url) == nil)
        // And the twins work for a task that is not cancelled.
        #expect(try await series.append(3).sequence == 0)
    }

    /// A job waiting in the queue when its task is cancelled is dropped: the task gets
    /// `CancellationError` while every thread is still busy, and the work never runs.
    @Test func aQueuedJobIsDroppedWhenItsTaskIsCancelled() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let series = try await store.timeSeries("s", of: Int64.self)
        let executor = store.executor
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() }
        let blockers = try #require(await occupyEveryThread(of: executor, until: gate))

        let append = Task { try await series.append(1) }
        #expect(await eventually { executor.queuedCount == 1 })
        append.cancel()
        let outcome = await awaitBounded { try await append.value }
        switch outcome {
        case nil: Issue.record("the cancelled task waited for a busy executor")
        case .success?: Issue.record("the cancelled append ran")
        case .failure(let error)?: #expect(error is CancellationError)
        }

        gate.signal()
        for blocker in blockers { try await blocker.value }
        #expect(try await series.append(2).sequence == 0)  // the dropped append wrote nothing
        #expect(executor.queuedCount == 0)
    }

    /// Work that has started is not interrupted by a cancellation: the write commits and its
    /// result is returned.
    @Test func aStartedWriteCommitsAndReturnsThoughItsTaskIsCancelled() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() }
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        // The map runs inside the save, on the executor: it holds the save there until released.
        let holding = DocumentIndex(name: "Holding", version: "1", map: { doc, emit in
            if doc["block"] == true {
                startedContinuation.yield()
                gate.wait()
                gate.signal()
            }
            emit(doc["block"], nil)
        })
        let db = try await store.documents("d", indexes: [holding])

        let save = Task { try await db.save(Document(id: "x", fields: ["block": true])) }
        let didStart = await awaitBounded {
            var iterator = started.makeAsyncIterator()
            _ = await iterator.next()
        }
        #expect(didStart != nil)
        save.cancel()
        gate.signal()
        let saved = try #require(await awaitBounded { try await save.value }).get()
        #expect(saved.metadata.id == "x" && saved.metadata.revision == 1)
        #expect(try blocking { try db.document(id: "x") }?["block"] == true)
        #expect(try blocking { try db.query("Holding", .all) }.rows.map(\.documentID) == ["x"])
    }

    @Test func everyTwinThrowsClosedAfterClose() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        let series = try await store.timeSeries("s", of: Int64.self)
        try await series.append(1)
        let room = try await store.channel("room", of: String.self)
        let db = try await store.documents("d")
        try blocking { try store.close() }
        try await store.close()  // idempotent

        await #expect(throws: StrataError.closed) { try await store.put(b("k"), b("v")) }
        await #expect(throws: StrataError.closed) { try await store.get(b("k")) }
        await #expect(throws: StrataError.closed) { try await store.delete(b("k")) }
        await #expect(throws: StrataError.closed) { try await store.write(WriteBatch()) }
        await #expect(throws: StrataError.closed) { try await store.scan() }
        await #expect(throws: StrataError.closed) { try await store.snapshot() }
        await #expect(throws: StrataError.closed) { try await store.sync() }
        await #expect(throws: StrataError.closed) { try await store.compact() }
        await #expect(throws: StrataError.closed) { try await store.timeSeries("t", of: Int64.self) }
        await #expect(throws: StrataError.closed) { try await store.channel("c", of: String.self) }
        await #expect(throws: StrataError.closed) { try await store.documents("e") }
        await #expect(throws: StrataError.closed) { try await store.fetchHistory(channels: ["room"]) }
        await #expect(throws: StrataError.closed) { try await store.messageCounts(channels: ["room"], since: [.zero]) }
        await #expect(throws: StrataError.closed) { try await series.append(2) }
        await #expect(throws: StrataError.closed) { try await series.query(.values) }
        await #expect(throws: StrataError.closed) { try await room.publish("x") }
        await #expect(throws: StrataError.closed) { try await room.history() }
        await #expect(throws: StrataError.closed) { try await db.save(Document(id: "x")) }
        await #expect(throws: StrataError.closed) { try await db.document(id: "x") }
        await #expect(throws: StrataError.closed) { try await db.changes(since: 0) }
        // A store opened again in the directory has an executor of its own.
        let reopened = try await Store.open(at: tmp.url)
        #expect(try await reopened.timeSeries("s", of: Int64.self).query(.values).events.map(\.value) == [1])
        try await reopened.close()
    }

    /// A close on another thread while jobs wait for the executor's busy threads: the waiting
    /// jobs throw `.closed` at once (none hangs), and the running ones finish.
    @Test func closeFailsTheQueuedJobsWithClosed() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        let series = try await store.timeSeries("s", of: Int64.self)
        let executor = store.executor
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() }
        let blockers = try #require(await occupyEveryThread(of: executor, until: gate))

        let appends = (0..<20).map { i in Task { try await series.append(Int64(i)) } }
        #expect(await eventually { executor.queuedCount == 20 })
        let closed = runBounded { try store.close() }
        #expect(closed != nil)
        if case .failure(let error)? = closed { Issue.record("close failed: \(error)") }
        for append in appends {
            switch await awaitBounded({ try await append.value }) {
            case nil: Issue.record("a queued append hung after close")
            case .success(let m)?: Issue.record("a queued append ran after close: \(m)")
            case .failure(let error)?: #expect(error as? StrataError == .closed)
            }
        }
        gate.signal()
        for blocker in blockers { #expect(await awaitBounded { try await blocker.value } != nil) }
    }

    /// An `async` close queued behind appends: the appends queued before it start first, each
    /// commits or throws `.closed`, the close returns, and what committed survives the reopen.
    @Test func asyncCloseQueuedBehindWritesDoesNotHang() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try await Store.open(at: tmp.url)
        defer { try? store.close() }
        let series = try await store.timeSeries("s", of: Int64.self)
        let executor = store.executor
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() }
        let blockers = try #require(await occupyEveryThread(of: executor, until: gate))

        let appends = (0..<20).map { i in Task { try await series.append(Int64(i)) } }
        #expect(await eventually { executor.queuedCount == 20 })
        let close = Task { try await store.close() }
        #expect(await eventually { executor.queuedCount == 21 })
        gate.signal()

        var committed: [UInt64] = []
        for append in appends {
            switch await awaitBounded({ try await append.value }) {
            case nil: Issue.record("an append hung")
            case .success(let m)?: committed.append(m.sequence)
            case .failure(let error)?: #expect(error as? StrataError == .closed)
            }
        }
        #expect(await awaitBounded { try await close.value } != nil)
        for blocker in blockers { try await blocker.value }
        #expect(committed.sorted() == Array(0..<UInt64(committed.count)))

        let reopened = try await Store.open(at: tmp.url)
        defer { try? reopened.close() }
        #expect(try await reopened.timeSeries("s", of: Int64.self).query(.values).events.count == committed.count)
    }
}
