import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The collection catalog, the per-collection state registry and read-only store images.

private final class CountingState: CollectionState {
    let closed = Mutex(0)
    func storeDidClose() { closed.withLock { $0 += 1 } }
    func storeDidFail(_ error: StrataError) {}
}

private final class OtherState: CollectionState {
    func storeDidClose() {}
    func storeDidFail(_ error: StrataError) {}
}

@Suite struct CatalogTests {
    @Test("ids are unique across kinds, stable across reopen, and never handed out twice")
    func idsAreUniqueAndStable() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var ids: [String: UInt64] = [:]
        do {
            let store = try Store.open(at: tmp.url)
            for (kind, name) in [(CollectionKind.timeSeries, "a"), (.channel, "a"), (.timeSeries, "b"), (.documentDatabase, "")] {
                let (entry, created) = try store.catalog.openOrCreate(kind: kind, name: name) { [9, 8, 7] }
                #expect(created)
                #expect(entry.payload == [9, 8, 7])
                ids["\(kind.id)/\(name)"] = entry.id
            }
            #expect(Set(ids.values).count == 4)
            #expect(Set(ids.values) == [1, 2, 3, 4])
            // Opening again returns the same entry and does not call the payload maker.
            let (again, created) = try store.catalog.openOrCreate(kind: .timeSeries, name: "a") {
                Issue.record("payload made for an existing entry")
                return []
            }
            #expect(!created)
            #expect(again.id == ids["1/a"])
            try store.close()
        }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        #expect(try store.catalog.entry(kind: .channel, name: "a")?.id == ids["2/a"])
        #expect(try store.catalog.entry(kind: .channel, name: "b") == nil)
        // A removed entry's id is not reused.
        var batch = WriteBatch()
        Catalog.remove(kind: .timeSeries, name: "b", into: &batch)
        try store.engine.write(batch)
        let (fresh, created) = try store.catalog.openOrCreate(kind: .timeSeries, name: "b") { [] }
        #expect(created)
        #expect(fresh.id == 5)
    }

    @Test("payload updates go in the caller's batch; entries list in name order through a snapshot")
    func updatesAndListing() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        for name in ["zeta", "alpha", "mid\u{0}dle", "é"] {
            _ = try store.catalog.openOrCreate(kind: .channel, name: name) { Array(name.utf8) }
        }
        _ = try store.catalog.openOrCreate(kind: .timeSeries, name: "other") { [] }
        var entry = try #require(try store.catalog.entry(kind: .channel, name: "alpha"))
        entry.payload = [1, 2]
        var batch = WriteBatch()
        Catalog.put(entry, kind: .channel, name: "alpha", into: &batch)
        try store.engine.write(batch)
        let listed = try Catalog.entries(kind: .channel, in: try store.engine.snapshot())
        #expect(listed.map(\.name) == ["alpha", "mid\u{0}dle", "zeta", "é"])
        #expect(listed.first?.entry.payload == [1, 2])
        #expect(listed.last?.entry.payload == Array("é".utf8))
    }

    @Test("a damaged catalog value is a corruption error naming the key, not a crash")
    func damagedEntry() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        defer { try? store.close() }
        var batch = WriteBatch()
        batch.putRaw(Catalog.key(kind: .timeSeries, name: "x"), [0x80])   // a varint cut short
        batch.putRaw(Catalog.counterKey, [])
        try store.engine.write(batch)
        #expect {
            _ = try store.catalog.entry(kind: .timeSeries, name: "x")
        } throws: { error in
            guard case StrataError.corrupted(_, _, let reason) = error else { return false }
            return reason.contains("\"x\"")
        }
        #expect(throws: StrataError.self) { _ = try store.catalog.openOrCreate(kind: .channel, name: "y") { [] } }
    }

    @Test("the registry makes one state per collection, rejects another type, and closes them with the store")
    func registry() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let store = try Store.open(at: tmp.url)
        let made = Mutex(0)
        let a = try store.collections.state(kind: .timeSeries, name: "s", as: CountingState.self) {
            made.withLock { $0 += 1 }
            return CountingState()
        }
        let b = try store.collections.state(kind: .timeSeries, name: "s", as: CountingState.self) {
            made.withLock { $0 += 1 }
            return CountingState()
        }
        #expect(a === b)
        #expect(made.withLock { $0 } == 1)
        #expect(throws: StrataError.self) {
            _ = try store.collections.state(kind: .timeSeries, name: "s", as: OtherState.self) { OtherState() }
        }
        // Another kind with the same name is another collection.
        let c = try store.collections.state(kind: .channel, name: "s", as: CountingState.self) { CountingState() }
        #expect(c !== a)
        try store.close()
        #expect(a.closed.withLock { $0 } == 1)
        #expect(c.closed.withLock { $0 } == 1)
        try store.close()
        #expect(a.closed.withLock { $0 } == 1)
    }

    @Test("a store image sees flushed and unflushed records without taking the lock or writing")
    func storeImage() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var options = StoreOptions(durability: .synchronous)
        options.memtableSize = 64 << 10
        let store = try Store.open(at: tmp.url, options: options)
        defer { try? store.close() }
        for i in 0..<3_000 {
            if i == 2_000 { try store.compact() }   // the first 2,000 in segments, the rest in the log
            try store.put(Array("k\(100_000 + i)".utf8), Array(repeating: UInt8(i & 0xff), count: 60))
        }
        try store.delete(Array("k100007".utf8))
        let before = tmp.list()
        let image = try StoreImage.snapshot(directory: tmp.path)
        #expect(tmp.list() == before)
        #expect(try image.get(Keyspace.keyValue.prefix + Array("k100007".utf8)) == nil)
        #expect(try image.get(Keyspace.keyValue.prefix + Array("k102999".utf8)) == Array(repeating: UInt8(2999 & 0xff), count: 60))
        let cursor = image.cursor(lower: Keyspace.keyValue.prefix, upper: Keyspace.keyValue.end)
        var count = 0
        while try cursor.next() { count += 1 }
        #expect(count == 2_999)
        #expect(store.statistics.segments > 0)
    }

    @Test("a directory without a store is notFound for a store image")
    func imageOfNothing() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        #expect {
            _ = try StoreImage.snapshot(directory: tmp.path)
        } throws: { error in
            guard case StrataError.notFound = error else { return false }
            return true
        }
    }
}
