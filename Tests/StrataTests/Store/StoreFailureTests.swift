import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A store whose engine fails (issue 10, "No swallowed errors"): every open stream ends by
// throwing the failure, every later stream throws it at once; a store directory's entry is made
// durable at every open; `prepareForShutdown` closes every store and returns what failed.

/// Drains `iterator` to its end; the error it ended with, or nil if it ended normally.
private func endError<I: AsyncIteratorProtocol>(_ iterator: inout I) async -> (any Error)? {
    do {
        while try await iterator.next() != nil {}
        return nil
    } catch {
        return error
    }
}

/// Options whose file system consults `faults`.
private func options(_ faults: IOFaults) -> StoreOptions {
    var o = StoreOptions(durability: .synchronous)
    o.fileSystem = .injecting(faults)
    return o
}

/// Fails every log fsync under `directory` through `faults` (the store's), runs `body`, removes
/// the fault.
private func withFailingLogSync<R>(_ directory: String, _ faults: IOFaults, _ body: () throws -> R) rethrows -> R {
    try faults.with({ op, path in
        op == .fsync && path.hasPrefix(directory + "/") && path.hasSuffix(".log") ? EIO : nil
    }, body)
}

@Suite struct StoreFailureTests {
    @Test("a failed log sync ends every open stream by throwing it; later streams throw it at once")
    func failureEndsEveryStream() async throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let faults = IOFaults()
        let store = try await Store.open(at: tmp.url, options: options(faults))
        defer { try? store.close() }
        let directory = store.directory.path
        let series = try await store.timeSeries("s", of: Int64.self, options: TimeSeriesOptions(subscriptionRange: .none))
        let room = try await store.channel("room", of: String.self)
        let index = DocumentIndex(name: "k", version: "1", map: { doc, emit in emit(doc["k"], nil) })
        let db = try await store.documents("d", indexes: [index])
        _ = try await series.append(1)
        _ = try await room.publish("hello")
        try await db.save(Document(id: "1", fields: ["k": "a"]))

        var events = series.subscribe().makeAsyncIterator()
        var messages = try room.messages().makeAsyncIterator()
        var live = try db.observe("k", .all).makeAsyncIterator()
        #expect(try await live.next()?.rows.count == 1)  // the current result
        var changes = try db.changes().makeAsyncIterator()

        let failure: StrataError? = withFailingLogSync(directory, faults) {
            do {
                try store.put([1], [2])
                return nil
            } catch {
                return error as? StrataError
            }
        }
        let injected = try #require(failure)
        #expect(store.statistics.writeError == injected)

        // The streams end as soon as the failure observer has run: no waiting on a stream that
        // would never end if they did not.
        store.engine.waitForFailureObserver()
        store.broadcaster.waitForDeliveries()
        #expect(series.state.broadcaster.count == 0)
        #expect(room.state.broadcaster.count == 0)
        #expect(db.state.broadcaster.count == 0)
        guard series.state.broadcaster.count == 0, room.state.broadcaster.count == 0,
              db.state.broadcaster.count == 0 else { return }

        #expect(await endError(&events) as? StrataError == injected)
        #expect(await endError(&messages) as? StrataError == injected)
        #expect(await endError(&live) as? StrataError == injected)
        #expect(await endError(&changes) as? StrataError == injected)

        // New subscriptions throw the failure at once.
        var later = series.subscribe().makeAsyncIterator()
        #expect(await endError(&later) as? StrataError == injected)
        #expect(throws: injected) { _ = try room.messages() }
        #expect(throws: injected) { _ = try store.channel("room", of: String.self).messages() }
        #expect(throws: injected) { _ = try db.observe("k", .all) }
        #expect(throws: injected) { _ = try db.changes() }
        // Writes fail with it too; reads go on.
        #expect(throws: injected) { _ = try series.append(2) }
        #expect(throws: injected) { _ = try room.publish("again") }
        #expect(try await series.bounds().next == 1)
    }

    @Test("a collection opened after the failure refuses subscriptions with it")
    func collectionOpenedAfterTheFailure() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let faults = IOFaults()
        do {
            let store = try Store.open(at: tmp.url, options: options(faults))
            _ = try store.channel("room", of: String.self).publish("hello")
            try store.close()
        }
        let store = try Store.open(at: tmp.url, options: options(faults))
        defer { try? store.close() }
        let failure: StrataError? = withFailingLogSync(store.directory.path, faults) {
            do { try store.put([1], [2]); return nil } catch { return error as? StrataError }
        }
        let injected = try #require(failure)
        store.engine.waitForFailureObserver()
        store.broadcaster.waitForDeliveries()
        // The channel's state is made only now, after the failure observer ran.
        let room = try store.channel("room", of: String.self)
        #expect(throws: injected) { _ = try room.messages() }
        #expect(try room.history(limit: 10).messages.map(\.message) == ["hello"])
    }

    @Test("closing every store closes each one even when one fails, and returns the failure")
    func shutdownReturnsTheFailures() throws {
        let a = try TemporaryDirectory(), b = try TemporaryDirectory()
        defer { a.remove(); b.remove() }
        let faults = IOFaults()
        let failing = try Store.open(at: a.url, options: options(faults))
        let healthy = try Store.open(at: b.url, options: StoreOptions(durability: .synchronous))
        try healthy.put([1], [1])
        let failure: StrataError? = withFailingLogSync(failing.directory.path, faults) {
            do { try failing.put([1], [2]); return nil } catch { return error as? StrataError }
        }
        let injected = try #require(failure)
        // `prepareForShutdown()` closes the stores of every test running meanwhile; it hands its
        // list to this.
        let failures = Store.close([failing, healthy])
        #expect(failures == [failing.directory: injected])
        #expect(Store.opened(at: a.url) == nil)
        #expect(Store.opened(at: b.url) == nil)
        #expect(throws: StrataError.closed) { try failing.get([1]) }
        #expect(throws: StrataError.closed) { try healthy.get([1]) }
        let reopened = try Store.open(at: b.url)
        #expect(try reopened.get([1]) == [1])
        try reopened.close()
    }
}
