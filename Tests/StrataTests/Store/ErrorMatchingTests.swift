import Foundation
import Testing
@testable import Strata
@testable import StrataInspection

// A program matches `StrataError`'s payloads, never its text: these tests only `catch` and
// `switch` on cases, kinds and argument names (Conventions, "Errors").

/// The error `body` throws, or nil.
private func thrown(_ body: () throws -> Void) -> (any Error)? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// What `body` did not find: the kind and name of a `.notFound`, nil for any other outcome.
private func notFound(_ body: () throws -> Void) -> (StrataError.NotFoundKind, String)? {
    guard case StrataError.notFound(let kind, let name, _)? = thrown(body) else { return nil }
    return (kind, name)
}

/// The argument a `.invalidArgument` of `body` names, nil for any other outcome.
private func invalidArgument(_ body: () throws -> Void) -> String? {
    guard case StrataError.invalidArgument(let argument, _)? = thrown(body) else { return nil }
    return argument
}

private struct Invoice: Codable {
    var number: String
    var total: Int
}

@Suite struct ErrorMatchingTests {
    @Test("a missing document, index, push device or subscription is matched by kind and name")
    func notFoundInAStore() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try store.documents("main")

        do {
            try db.delete(id: "a")
            Issue.record("deleted a missing document")
        } catch StrataError.notFound(.document, let id, _) {
            #expect(id == "a")
        }
        #expect(notFound { _ = try db.update(Document(id: "b")) } ?? (.store, "") == (.document, "b"))
        #expect(notFound { _ = try db.resolveConflict(id: "c", with: Document()) } ?? (.store, "") == (.document, "c"))
        #expect(notFound { _ = try db.query("byTotal", .all) } ?? (.store, "") == (.index, "byTotal"))
        #expect(notFound { try db.dropIndex("byTotal") } ?? (.store, "") == (.index, "byTotal"))

        let push = try store.pushNotifications()
        #expect(notFound { _ = try push.subscribe(PushStateTests.stockSubscription(), device: "D999") } ?? (.store, "")
                == (.pushDevice, "D999"))
        #expect(notFound { try push.unsubscribe("S7") } ?? (.store, "") == (.pushSubscription, "S7"))
    }

    @Test("the inspection tools name a missing store, series, channel, database or index by kind")
    func notFoundByInspection() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        #expect(notFound { _ = try SeriesInspector.dump(series: "prices", ofStoreAt: dir.path) }?.0 == .store)
        do {
            let store = try Store.open(at: dir.url)
            _ = try store.documents("main")
            try store.close()
        }
        #expect(notFound { _ = try SeriesInspector.dump(series: "prices", ofStoreAt: dir.path) } ?? (.store, "")
                == (.timeSeries, "prices"))
        #expect(notFound { _ = try ChannelInspector.dump(channel: "room", ofStoreAt: dir.path) } ?? (.store, "")
                == (.channel, "room"))
        #expect(notFound { _ = try DocumentInspector.dump(database: "other", ofStoreAt: dir.path) } ?? (.store, "")
                == (.documentDatabase, "other"))
        #expect(notFound { _ = try DocumentInspector.dump(database: "main", ofStoreAt: dir.path, index: "byTotal") }
                ?? (.store, "") == (.index, "byTotal"))
    }

    @Test("an invalid argument is matched by the name the API spells it with")
    func invalidArguments() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var tiny = StoreOptions()
        tiny.blockSize = 0
        #expect(invalidArgument { _ = try Store.open(at: dir.url, options: tiny) } == "blockSize")

        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        do {
            _ = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
            Issue.record("a second open with other options was accepted")
        } catch StrataError.invalidArgument("options", _) {
        }
        let room = try store.channel("room", of: String.self)
        #expect(invalidArgument { _ = try room.history(limit: 0) } == "limit")
        #expect(invalidArgument { _ = try room.messages(bufferSize: 0) } == "bufferSize")
        #expect(invalidArgument { _ = try store.channel("", of: String.self) } == "name")
        #expect(invalidArgument { _ = try store.timeSeries("", of: Double.self) } == "path")
        let series = try store.timeSeries("prices", of: Double.self)
        #expect(invalidArgument { _ = try series.edit(originalSequence: 0, value: 1) } == "originalSequence")
        #expect(invalidArgument {
            _ = try store.timeSeries("short", of: Double.self, options: TimeSeriesOptions(retainedRange: .limit(0)))
        } == "retainedRange")
        let db = try store.documents("main")
        var query = IndexQuery.all
        query.skip = -1
        let indexed = try store.documents("indexed", indexes: [DocumentIndex(name: "n", version: "1", map: { _, emit in emit(1, nil) })])
        #expect(invalidArgument { _ = try indexed.query("n", query) } == "skip")
        #expect(invalidArgument { _ = try db.changes(since: 0, limit: -1) } == "limit")
        #expect(invalidArgument { _ = try Document(json: "[1]") } == "json")
        #expect(invalidArgument { _ = try JSON(parsing: "{") } == "json")
        #expect(invalidArgument { _ = try store.pushNotifications().register(PushDevice(platform: .apple, applicationID: "",
                                                                                          deviceToken: "t")) } == "applicationID")
        #expect(invalidArgument { _ = try store.pushNotifications().pendingNotifications(limit: 0) } == "limit")
        var config = ReplicationConfiguration.oneTimeBidirectionalReplication(with: URL(string: "http://127.0.0.1:1/db")!)
        config.batchSize = 0
        #expect(invalidArgument { _ = try db.startReplication(with: config) } == "batchSize")
    }

    @Test("a stored value that does not fit the Codable type asked for is a type mismatch, not corruption")
    func wrongCodableTypeIsNotCorruption() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try store.documents("main")
        _ = try db.save(["number": "A-1"], id: "a")
        switch thrown({ _ = try db.document(id: "a", as: Invoice.self) }) {
        case StrataError.typeMismatch?: break
        case let other: Issue.record("expected .typeMismatch, got \(String(describing: other))")
        }
    }

    @Test("an async twin whose task is cancelled before it starts throws CancellationError")
    func cancelledTwins() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try await Store.open(at: dir.url)
        defer { try? store.close() }
        let db = try await store.documents("main")
        let room = try await store.channel("room", of: String.self)
        let task = Task { () async throws -> Int in
            try? await Task.sleep(for: .seconds(3_600))  // ends at once: the task is cancelled
            var done = 0
            for step in 0..<3 {
                do {
                    switch step {
                    case 0: _ = try await db.conflicts(id: "a")
                    case 1: _ = try await db.save(Document(id: "b"))
                    default: _ = try await room.publish("x")
                    }
                } catch is CancellationError {
                    done += 1
                }
            }
            return done
        }
        task.cancel()
        #expect(try await task.value == 3)
        #expect(try await db.document(id: "b") == nil, "the cancelled save wrote nothing")
    }

    @Test("descriptions read as before: the reason, after what went wrong")
    func descriptions() {
        #expect(StrataError.notFound(kind: .document, name: "a", reason: "document \"a\" in database \"main\"").description
                == "not found: document \"a\" in database \"main\"")
        #expect(StrataError.invalidArgument(argument: "limit", reason: "limit -1 is negative").description
                == "invalid argument: limit -1 is negative")
        #expect(StrataError.NotFoundKind.allCases.map(\.description).allSatisfy { !$0.isEmpty && !$0.contains("(") })
        #expect(StrataError.NotFoundKind.timeSeries.description == "time series")
    }
}
