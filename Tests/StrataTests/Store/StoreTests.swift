import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The public API of `Store` (API.md "Store"): opening, the per-process registry, closing, destroy,
// durability across reopen, sync, compaction, snapshots, write batches, options and edge cases.

// MARK: - Deterministic randomness

// MARK: - Helpers

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

/// A unique directory under the temporary directory (not created); `remove()` deletes it.
private struct StoreDirectory {
    let url: URL

    init(_ label: String) {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-store-\(label)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
    }

    /// Closes the store if open and removes the directory, retrying a few times: files a store's
    /// background work deletes while the removal walks the directory make it fail.
    func remove() {
        if let s = Store.opened(at: url) { try? s.close() }
        for _ in 0..<20 {
            if (try? FileManager.default.removeItem(at: url)) != nil || !FileManager.default.fileExists(atPath: url.path) { return }
            usleep(20_000)
        }
    }

    /// The path with symlinks resolved, as the store names it.
    var canonicalPath: String {
        guard let p = realpath(url.path, nil) else { return url.path }
        defer { free(p) }
        return String(cString: p)
    }
}

/// Options that make flushes and compactions happen with little data.
private func smallOptions(_ durability: Durability = .buffered) -> StoreOptions {
    var o = StoreOptions(durability: durability)
    o.memtableSize = 64 << 10
    o.segmentSize = 64 << 10
    o.blockSize = 1024
    o.cacheSize = 256 << 10
    return o
}

private func sizeOfFiles(in directory: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    var total = 0
    for name in names {
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
        total += (attributes?[.size] as? Int) ?? 0
    }
    return total
}

private func keys(_ pairs: [(key: [UInt8], value: [UInt8])]) -> [String] {
    pairs.map { String(decoding: $0.key, as: UTF8.self) }
}

private func isInvalidArgument(_ error: any Error) -> Bool {
    if case StrataError.invalidArgument = error { return true }
    return false
}

/// Key `i` of a numbered set, in key order.
private func numbered(_ i: Int) -> [UInt8] { b("key" + String(repeating: "0", count: 6 - String(i).count) + String(i)) }

// MARK: - Tests

@Suite struct StoreTests {
    // MARK: Opening and the registry

    @Test func openCreatesTheDirectory() throws {
        let root = StoreDirectory("create")
        defer { root.remove() }
        let nested = root.url.appendingPathComponent("a/b/store")
        #expect(!FileManager.default.fileExists(atPath: nested.path))
        let store = try Store.open(at: nested, options: smallOptions())
        defer { try? store.close() }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: nested.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: nested.path)).isEmpty, "the store writes its files there")
        #expect(store.directory.path == StoreDirectory(url: nested).canonicalPath)
        try store.put(b("k"), b("v"))
        #expect(try store.get(b("k")) == b("v"))
    }

    @Test func openingAgainReturnsTheSameInstance() throws {
        let root = StoreDirectory("same")
        defer { root.remove() }
        try FileManager.default.createDirectory(at: root.url.appendingPathComponent("sibling"), withIntermediateDirectories: true)
        let url = root.url.appendingPathComponent("store")
        let store = try Store.open(at: url, options: smallOptions())
        defer { try? store.close() }

        #expect(try Store.open(at: url) === store)
        // Through `..`, a trailing slash and a symlink to the directory or to a parent.
        let dotted = URL(fileURLWithPath: root.url.path + "/sibling/../store")
        #expect(try Store.open(at: dotted) === store)
        #expect(try Store.open(at: URL(fileURLWithPath: url.path + "/")) === store)
        let link = root.url.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: url.path)
        #expect(try Store.open(at: link) === store)
        let parentLink = root.url.appendingPathComponent("parent-link")
        try FileManager.default.createSymbolicLink(atPath: parentLink.path, withDestinationPath: root.url.path)
        #expect(try Store.open(at: parentLink.appendingPathComponent("store")) === store)

        // `opened(at:)` finds it by any of these names.
        #expect(Store.opened(at: url) === store)
        #expect(Store.opened(at: dotted) === store)
        #expect(Store.opened(at: link) === store)

        // A later open with the same options shares the instance; with other options it is
        // refused, naming what differs, and the first open's stay.
        #expect(try Store.open(at: url, options: smallOptions()) === store)
        var other = smallOptions()
        other.blockSize = 8 * 1024
        other.durability = store.options.durability == .buffered ? .synchronous : .buffered
        do {
            _ = try Store.open(at: url, options: other)
            Issue.record("a second open with other options was not refused")
        } catch StrataError.invalidArgument(_, let message) {
            #expect(message.contains("blockSize: 1024 ≠ 8192"), "\(message)")
            #expect(message.contains("durability"), "\(message)")
        }
        let again = try Store.open(at: url)
        #expect(again === store)
        #expect(again.options.blockSize == 1024)

        // What one name writes, the other reads.
        try store.put(b("k"), b("v"))
        #expect(try Store.open(at: link).get(b("k")) == b("v"))
    }

    @Test func openedIsNilUnlessOpen() throws {
        let dir = StoreDirectory("opened")
        defer { dir.remove() }
        #expect(Store.opened(at: dir.url) == nil)
        let store = try Store.open(at: dir.url, options: smallOptions())
        #expect(Store.opened(at: dir.url) === store)
        try store.close()
        #expect(Store.opened(at: dir.url) == nil)
    }

    @Test func concurrentOpensShareOneInstance() throws {
        let dir = StoreDirectory("concurrent-open")
        defer { dir.remove() }
        let url = dir.url
        let results = Mutex<[ObjectIdentifier]>([])
        let errors = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let s = try Store.open(at: url, options: smallOptions())
                results.withLock { $0.append(ObjectIdentifier(s)) }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
        let ids = results.withLock { $0 }
        #expect(ids.count == 8)
        #expect(Set(ids).count == 1, "every open of one directory returns the same store")
        if let s = Store.opened(at: url) { #expect(ObjectIdentifier(s) == ids.first) }
    }

    // MARK: Closing

    @Test func closeIsIdempotentAndLaterCallsThrowClosed() throws {
        let dir = StoreDirectory("close")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        try store.put(b("k"), b("v"))
        let snapshotBefore = try store.snapshot()
        try store.close()
        try store.close()
        try store.close()

        var batch = WriteBatch()
        batch.put(b("x"), b("y"))
        #expect(throws: StrataError.closed) { try store.put(b("k"), b("w")) }
        #expect(throws: StrataError.closed) { try store.delete(b("k")) }
        #expect(throws: StrataError.closed) { try store.write(batch) }
        #expect(throws: StrataError.closed) { try store.write(batch, durability: .synchronous) }
        #expect(throws: StrataError.closed) { try store.get(b("k")) }
        #expect(throws: StrataError.closed) { try store.scan() }
        #expect(throws: StrataError.closed) { try store.scan(from: b("a"), to: b("z"), reverse: true, limit: 1) }
        #expect(throws: StrataError.closed) { try store.cursor() }
        #expect(throws: StrataError.closed) { try store.snapshot() }
        #expect(throws: StrataError.closed) { try store.sync() }
        #expect(throws: StrataError.closed) { try store.compact() }
        _ = snapshotBefore
    }

    /// API.md: after `close()`, any call on the store throws `.closed` — an empty batch included.
    @Test func writingAnEmptyBatchAfterCloseThrowsClosed() throws {
        let dir = StoreDirectory("close-empty-batch")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        try store.write(WriteBatch())
        try store.close()
        #expect(throws: StrataError.closed) { try store.write(WriteBatch()) }
    }

    @Test func reopeningAfterCloseGivesANewWorkingInstance() throws {
        let dir = StoreDirectory("reopen-new")
        defer { dir.remove() }
        let first = try Store.open(at: dir.url, options: smallOptions())
        try first.put(b("k"), b("1"))
        try first.close()
        let second = try Store.open(at: dir.url, options: smallOptions())
        #expect(second !== first)
        #expect(try second.get(b("k")) == b("1"))
        // Closing the old instance again must not close or unregister the new one.
        try first.close()
        #expect(Store.opened(at: dir.url) === second)
        try second.put(b("k"), b("2"))
        #expect(try second.get(b("k")) == b("2"))
        try second.close()
    }

    /// Opening a directory while this process is closing it must not fail with `.locked` (which
    /// says another process has it): the closing store leaves the registry before it releases the
    /// lock file. One thread closes; another opens as soon as the store has left the registry.
    @Test func openWhileClosingInThisProcessIsNotLocked() async throws {
        let dir = StoreDirectory("open-during-close")
        defer { dir.remove() }
        let url = dir.url
        var outcomes: [String] = []
        for attempt in 0..<20 {
            let store = try await Store.open(at: url, options: smallOptions(.buffered))
            var batch = WriteBatch()
            for i in 0..<300 { batch.put(numbered(i), [UInt8](repeating: UInt8(truncatingIfNeeded: attempt), count: 300)) }
            try await store.write(batch)
            let openError = Mutex<String?>(nil)
            let group = DispatchGroup()
            group.enter()
            Thread {
                // As soon as the closing store has left the registry, open again.
                let deadline = Date().addingTimeInterval(10)
                while Store.opened(at: url) != nil && Date() < deadline {}
                do {
                    _ = try Store.open(at: url, options: smallOptions(.buffered))
                } catch {
                    openError.withLock { $0 = "\(error)" }
                }
                group.leave()
            }.start()
            try await store.close()
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in group.notify(queue: .global()) { c.resume() } }
            if let e = openError.withLock({ $0 }) { outcomes.append("attempt \(attempt): \(e)") }
            if let s = await Store.opened(at: url) { try await s.close() }
        }
        #expect(outcomes.isEmpty, Comment(rawValue: "Store.open failed while the same process closed the store:\n" + outcomes.joined(separator: "\n")))
        // Afterwards the store opens and holds the last attempt's data.
        let store = try await Store.open(at: url, options: smallOptions())
        #expect(try await store.get(numbered(7)) == [UInt8](repeating: 19, count: 300))
        try await store.close()
    }

    /// Once `close()` has returned, the store no longer touches its directory: a program may copy
    /// or remove it. Here `compact()` runs on another thread when `close()` is called; close waits
    /// for it, and afterwards no file may appear or disappear.
    @Test func nothingChangesInTheDirectoryAfterClose() async throws {
        let dir = StoreDirectory("quiet-after-close")
        defer { dir.remove() }
        let url = dir.url
        var changes: [String] = []
        for attempt in 0..<6 {
            let store = try await Store.open(at: url, options: smallOptions())
            for round in 0..<3 {
                var batch = WriteBatch()
                for i in 0..<3_000 { batch.put(numbered(i), [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 100)) }
                try await store.write(batch)
            }
            let group = DispatchGroup()
            group.enter()
            Thread {
                _ = try? store.compact()
                group.leave()
            }.start()
            try await Task.sleep(for: .milliseconds(30))
            try await store.close()
            let atClose = Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in group.notify(queue: .global()) { c.resume() } }
            try await Task.sleep(for: .milliseconds(50))
            let later = Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
            if atClose != later {
                changes.append("attempt \(attempt): removed after close \(atClose.subtracting(later).sorted()), created \(later.subtracting(atClose).sorted())")
            }
        }
        #expect(changes.isEmpty, Comment(rawValue: "files changed after close() returned:\n" + changes.joined(separator: "\n")))
    }

    /// `prepareForShutdown()` closes every store of the process, those of tests running in
    /// parallel included, so it only runs when asked for:
    /// `STRATA_TEST_PREPARE_FOR_SHUTDOWN=1 swift test --filter StoreTests/prepareForShutdown`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_TEST_PREPARE_FOR_SHUTDOWN"] == "1",
                   "closes every open store of the process, other tests' too"))
    func prepareForShutdownClosesEveryStore() throws {
        let a = StoreDirectory("shutdown-a"), c = StoreDirectory("shutdown-b")
        defer { a.remove(); c.remove() }
        let first = try Store.open(at: a.url, options: smallOptions())
        let second = try Store.open(at: c.url, options: smallOptions(.synchronous))
        try first.put(b("k"), b("a"))
        try second.put(b("k"), b("b"))
        Store.prepareForShutdown()
        #expect(Store.opened(at: a.url) == nil)
        #expect(Store.opened(at: c.url) == nil)
        #expect(throws: StrataError.closed) { try first.get(b("k")) }
        #expect(throws: StrataError.closed) { try second.put(b("k"), b("c")) }
        // Closed cleanly: the data is there on reopen, and close stays idempotent.
        try first.close()
        let reopened = try Store.open(at: a.url, options: smallOptions())
        #expect(try reopened.get(b("k")) == b("a"))
        try reopened.close()
        let reopened2 = try Store.open(at: c.url, options: smallOptions())
        #expect(try reopened2.get(b("k")) == b("b"))
        try reopened2.close()
    }

    // MARK: destroy

    @Test func destroyClosesAndRemovesTheFiles() throws {
        let dir = StoreDirectory("destroy")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        for i in 0..<2_000 { try store.put(numbered(i), [UInt8](repeating: 7, count: 100)) }
        try Store.destroy(at: dir.url)
        #expect(Store.opened(at: dir.url) == nil)
        #expect(throws: StrataError.closed) { try store.get(numbered(0)) }
        #expect(!FileManager.default.fileExists(atPath: dir.url.path), "the emptied directory is removed")

        // A new store there starts empty.
        let fresh = try Store.open(at: dir.url, options: smallOptions())
        #expect(try fresh.scan().isEmpty)
        try fresh.close()
    }

    @Test func destroyOfAClosedStoreKeepsForeignFiles() throws {
        let dir = StoreDirectory("destroy-foreign")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        try store.put(b("k"), b("v"))
        try store.close()
        let foreign = dir.url.appendingPathComponent("notes.txt")
        try Data("mine".utf8).write(to: foreign)
        try Store.destroy(at: dir.url)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["notes.txt"])
        let reopened = try Store.open(at: dir.url, options: smallOptions())
        #expect(try reopened.get(b("k")) == nil)
        try reopened.close()
    }

    /// A store directory that cannot be examined (EACCES on its `stat`) is not one that does not
    /// exist: destroy throws the error and removes nothing.
    @Test func destroyOfADirectoryThatCannotBeSeenThrows() throws {
        let dir = StoreDirectory("destroy-unseen")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        try store.put(b("k"), b("v"))
        try store.close()
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()
        let name = "/" + dir.url.lastPathComponent
        let faults = IOFaults({ op, path in op == .stat && path.hasSuffix(name) ? EACCES : nil })
        let thrown: StrataError?
        do {
            try Store.destroy(at: dir.url, fileSystem: .injecting(faults))
            thrown = nil
        } catch {
            thrown = error as? StrataError
        }
        guard case .io(_, EACCES, "stat")? = thrown else {
            Issue.record("destroy of a directory it could not stat: \(String(describing: thrown))")
            return
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == before)
        let reopened = try Store.open(at: dir.url, options: smallOptions())
        #expect(try reopened.get(b("k")) == b("v"))
        try reopened.close()
    }

    @Test func destroyOfNothingIsNotAnError() throws {
        let dir = StoreDirectory("destroy-nothing")
        defer { dir.remove() }
        try Store.destroy(at: dir.url)
        #expect(!FileManager.default.fileExists(atPath: dir.url.path))
    }

    // MARK: Durability across close and reopen

    @Test(arguments: [Durability.synchronous, .buffered])
    func dataSurvivesCloseAndReopen(durability: Durability) throws {
        let dir = StoreDirectory("survive")
        defer { dir.remove() }
        var options = smallOptions(durability)
        options.syncInterval = .milliseconds(10)
        var rng = SplitMix64(seed: durability == .synchronous ? 1 : 2)
        var expected: [[UInt8]: [UInt8]] = [:]
        var store = try Store.open(at: dir.url, options: options)

        for round in 0..<3 {
            // Enough to flush several memtables, then a tail that stays in the log.
            for i in 0..<(round == 0 ? 1_500 : 300) {
                var batch = WriteBatch()
                for j in 0..<4 {
                    let k = numbered(rng.below(3_000))
                    let v = [UInt8](repeating: UInt8(truncatingIfNeeded: i + j + round), count: rng.below(120))
                    batch.put(k, v)
                    expected[k] = v
                }
                if i % 10 == 0 {
                    let k = numbered(rng.below(3_000))
                    batch.delete(k)
                    expected[k] = nil
                }
                try store.write(batch)
            }
            let s = rng.below(2_900)
            try store.write({ var x = WriteBatch(); x.deleteRange(from: numbered(s), to: numbered(s + 50)); return x }())
            for i in s..<(s + 50) { expected[numbered(i)] = nil }

            try store.close()
            store = try Store.open(at: dir.url, options: options)
            let all = try store.scan()
            #expect(all.count == expected.count, "round \(round)")
            #expect(all.allSatisfy { expected[$0.key] == $0.value }, "round \(round)")
            #expect(try store.get(numbered(s)) == nil)
        }
        try store.close()
    }

    @Test func syncMakesWritesDurableAndKeepsWorking() throws {
        let dir = StoreDirectory("sync")
        defer { dir.remove() }
        var options = smallOptions(.buffered)
        options.syncInterval = .seconds(60)
        let store = try Store.open(at: dir.url, options: options)
        try store.sync()
        for i in 0..<100 { try store.put(numbered(i), b("v\(i)")) }
        try store.sync()
        try store.sync()
        #expect(try store.scan().count == 100)
        try store.write({ var x = WriteBatch(); x.put(b("s"), b("1")); return x }(), durability: .synchronous)
        try store.sync()
        try store.close()
        #expect(throws: StrataError.closed) { try store.sync() }
        let reopened = try Store.open(at: dir.url, options: options)
        #expect(try reopened.get(numbered(99)) == b("v99"))
        #expect(try reopened.get(b("s")) == b("1"))
        try reopened.close()
    }

    // MARK: compact

    @Test func compactShrinksTheStoreAfterOverwritesAndDeletes() throws {
        let dir = StoreDirectory("compact")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        var rng = SplitMix64(seed: 99)
        func value(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        for round in 0..<4 {
            for i in 0..<1_500 { try store.put(numbered(i), value(200 + round)) }
        }
        for i in stride(from: 0, to: 1_500, by: 2) { try store.delete(numbered(i)) }
        try store.write({ var x = WriteBatch(); x.deleteRange(from: numbered(1_000), to: numbered(1_500)); return x }())
        let before = sizeOfFiles(in: dir.url)
        try store.compact()
        let after = sizeOfFiles(in: dir.url)
        // Live data: 500 values of 203 bytes, about 100 KB; before: about 1.2 MB written.
        #expect(after < before / 3, "on disk \(before) bytes before compact(), \(after) after")
        #expect(after < 300_000, "on disk \(after) bytes after compact()")
        #expect(store.statistics.sortedRuns <= 1)
        let all = try store.scan()
        #expect(all.count == 500)
        #expect(all.first?.key == numbered(1))
        #expect(all.last?.key == numbered(999))
        #expect(all.allSatisfy { $0.value.count == 203 })

        // Compacting again changes nothing; compacting an empty store works.
        try store.compact()
        #expect(try store.scan().count == 500)
        try store.write({ var x = WriteBatch(); x.deleteRange(from: [], to: [0xFF, 0xFF]); return x }())
        try store.compact()
        #expect(try store.scan().isEmpty)
        #expect(store.statistics.segments == 0, "everything deleted: no segment is left")
        try store.close()
        let reopened = try Store.open(at: dir.url, options: smallOptions())
        #expect(try reopened.scan().isEmpty)
        try reopened.close()
    }

    // MARK: Snapshots

    @Test func snapshotsAreIsolatedFromLaterWrites() throws {
        let dir = StoreDirectory("snapshot")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        defer { try? store.close() }
        for k in ["a", "b", "c", "d"] { try store.put(b(k), b(k + "1")) }
        let snapshot = try store.snapshot()
        let before = try snapshot.scan()

        var batch = WriteBatch()
        batch.put(b("a"), b("a2"))
        batch.delete(b("b"))
        batch.deleteRange(from: b("c"), to: b("d"))
        batch.put(b("e"), b("e2"))
        try store.write(batch)
        // Plenty more, so that memtables flush and compact under the snapshot.
        for i in 0..<3_000 { try store.put(numbered(i), [UInt8](repeating: 1, count: 64)) }
        try store.compact()

        #expect(try snapshot.get(b("a")) == b("a1"))
        #expect(try snapshot.get(b("b")) == b("b1"))
        #expect(try snapshot.get(b("c")) == b("c1"))
        #expect(try snapshot.get(b("e")) == nil)
        #expect(try snapshot.get(numbered(5)) == nil)
        #expect(keys(try snapshot.scan()) == ["a", "b", "c", "d"])
        #expect(keys(try snapshot.scan(reverse: true)) == ["d", "c", "b", "a"])
        let again = try snapshot.scan()
        #expect(again.count == before.count && zip(again, before).allSatisfy { $0.key == $1.key && $0.value == $1.value })
        let cursor = snapshot.cursor(from: b("b"), to: b("d"))
        var seen: [String] = []
        while let (key, _) = try cursor.next() { seen.append(String(decoding: key, as: UTF8.self)) }
        #expect(seen == ["b", "c"])

        #expect(try store.get(b("a")) == b("a2"))
        #expect(try store.get(b("b")) == nil)
        #expect(try store.get(b("c")) == nil)
        #expect(try store.get(b("d")) == b("d1"))
        #expect(try store.get(b("e")) == b("e2"))
        #expect(try store.scan(to: b("key")).count == 3)
        // A new snapshot sees the new state.
        #expect(keys(try store.snapshot().scan(to: b("f"))) == ["a", "d", "e"])
    }

    // MARK: Write batches

    @Test func batchOperationsApplyInOrder() throws {
        let dir = StoreDirectory("batch-order")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        defer { try? store.close() }
        for k in ["p", "q", "r1", "r2", "r3"] { try store.put(b(k), b("old")) }

        var batch = WriteBatch()
        #expect(batch.isEmpty)
        batch.put(b("k1"), b("1"))
        batch.put(b("k1"), b("2"))            // a later put wins
        batch.put(b("k2"), b("1"))
        batch.delete(b("k2"))                   // put then delete: absent
        batch.delete(b("k3"))
        batch.put(b("k3"), b("3"))            // delete then put: present
        batch.delete(b("p"))
        batch.put(b("p"), b("new"))
        batch.put(b("q"), b("new"))
        batch.delete(b("q"))
        batch.deleteRange(from: b("r"), to: b("s"))
        batch.put(b("r2"), b("new"))          // a put after a range deletion in the same batch
        batch.put(b("r9"), b("x"))
        batch.deleteRange(from: b("r9"), to: b("r9\u{0}"))  // ... and before one
        #expect(batch.count == 14)
        #expect(!batch.isEmpty)
        #expect(batch.byteSize > 14)
        try store.write(batch)

        #expect(try store.get(b("k1")) == b("2"))
        #expect(try store.get(b("k2")) == nil)
        #expect(try store.get(b("k3")) == b("3"))
        #expect(try store.get(b("p")) == b("new"))
        #expect(try store.get(b("q")) == nil)
        #expect(try store.get(b("r1")) == nil)
        #expect(try store.get(b("r2")) == b("new"))
        #expect(try store.get(b("r3")) == nil)
        #expect(try store.get(b("r9")) == nil)
        #expect(keys(try store.scan()) == ["k1", "k3", "p", "r2"])

        // The same after the memtable is flushed and merged, and after reopening.
        try store.compact()
        #expect(keys(try store.scan()) == ["k1", "k3", "p", "r2"])
        #expect(try store.get(b("k1")) == b("2"))

        // An empty batch is fine.
        try store.write(WriteBatch())
        #expect(keys(try store.scan()) == ["k1", "k3", "p", "r2"])
    }

    @Test func deleteRangeIsStartInclusiveEndExclusive() throws {
        let dir = StoreDirectory("delete-range")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        defer { try? store.close() }
        let all = ["a", "b", "b\u{0}", "ba", "c", "ca", "d"]
        func reset() throws {
            try store.write({ var x = WriteBatch(); x.deleteRange(from: [], to: [0xFF]); return x }())
            for k in all { try store.put(b(k), b("v")) }
        }
        func deleteRange(_ s: String, _ e: String) throws {
            var x = WriteBatch()
            x.deleteRange(from: b(s), to: b(e))
            try store.write(x)
        }

        try reset()
        try deleteRange("b", "c")
        #expect(keys(try store.scan()) == ["a", "c", "ca", "d"])
        try reset()
        try deleteRange("b\u{0}", "ca")
        #expect(keys(try store.scan()) == ["a", "b", "ca", "d"])
        // An empty or inverted range deletes nothing.
        try reset()
        try deleteRange("b", "b")
        try deleteRange("d", "a")
        #expect(keys(try store.scan()) == all)
        // The empty key is the smallest start.
        try reset()
        try deleteRange("", "c")
        #expect(keys(try store.scan()) == ["c", "ca", "d"])
        // Also once the puts are in segments and the deletion is in the memtable, and after compaction.
        try reset()
        try store.compact()
        try deleteRange("b", "c")
        #expect(keys(try store.scan()) == ["a", "c", "ca", "d"])
        #expect(keys(try store.scan(reverse: true)) == ["d", "ca", "c", "a"])
        try store.compact()
        #expect(keys(try store.scan()) == ["a", "c", "ca", "d"])
    }

    // MARK: Scans

    @Test func scanBoundsLimitsAndDirection() throws {
        let dir = StoreDirectory("scan")
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: smallOptions())
        defer { try? store.close() }
        for k in ["a", "b", "c", "d", "e"] { try store.put(b(k), b(k.uppercased())) }

        #expect(keys(try store.scan()) == ["a", "b", "c", "d", "e"])
        #expect(keys(try store.scan(from: b("b"), to: b("d"))) == ["b", "c"])
        #expect(keys(try store.scan(from: b("b"), to: b("d"), reverse: true)) == ["c", "b"])
        #expect(keys(try store.scan(from: b("bb"))) == ["c", "d", "e"])
        #expect(keys(try store.scan(to: b("c"), reverse: true)) == ["b", "a"])
        #expect(keys(try store.scan(limit: 2)) == ["a", "b"])
        #expect(keys(try store.scan(reverse: true, limit: 2)) == ["e", "d"])
        #expect(try store.scan(limit: 0).isEmpty)
        #expect(try store.scan(from: b("c"), to: b("c")).isEmpty)
        #expect(try store.scan(from: b("d"), to: b("b")).isEmpty)
        #expect(try store.scan(from: b("d"), to: b("b"), reverse: true).isEmpty)
        #expect(try store.scan(from: b("b"), to: b("c")).map(\.value) == [b("B")])
        #expect(throws: StrataError.self) { try store.scan(limit: -1) }
        do {
            _ = try store.scan(limit: -1)
        } catch {
            #expect(isInvalidArgument(error), "\(error)")
        }

        let cursor = try store.cursor(from: b("b"), reverse: true)
        var seen: [String] = []
        while let (key, value) = try cursor.next() { seen.append(String(decoding: key, as: UTF8.self) + String(decoding: value, as: UTF8.self)) }
        #expect(seen == ["eE", "dD", "cC", "bB"])
        #expect(try cursor.next() == nil, "a finished cursor stays finished")
        #expect(try cursor.nextUnsafe { _, _ in Issue.record("body called past the end") } == nil)
    }

    // MARK: Options

    @Test func invalidOptionsThrowInvalidArgument() throws {
        let dir = StoreDirectory("options")
        defer { dir.remove() }
        var cases: [(String, StoreOptions)] = []
        func add(_ name: String, _ change: (inout StoreOptions) -> Void) {
            var o = StoreOptions()
            change(&o)
            cases.append((name, o))
        }
        add("blockSize 512") { $0.blockSize = 512 }
        add("blockSize 8 MiB") { $0.blockSize = 8 << 20 }
        add("memtableSize 1000") { $0.memtableSize = 1_000 }
        add("memtableSize 8 GiB") { $0.memtableSize = 8 << 30 }
        add("segmentSize 0") { $0.segmentSize = 0 }
        add("segmentSize 32 GiB") { $0.segmentSize = 32 << 30 }
        add("cacheSize -1") { $0.cacheSize = -1 }
        add("bloomBitsPerKey -1") { $0.bloomBitsPerKey = -1 }
        add("bloomBitsPerKey 33") { $0.bloomBitsPerKey = 33 }
        add("syncInterval 0") { $0.syncInterval = .zero }
        add("syncInterval 999 µs") { $0.syncInterval = .microseconds(999) }
        add("syncInterval 60 s + 1 ns") { $0.syncInterval = .seconds(60) + .nanoseconds(1) }
        add("syncInterval -1 s") { $0.syncInterval = .seconds(-1) }
        for (name, options) in cases {
            do {
                let s = try Store.open(at: dir.url, options: options)
                try? s.close()
                Issue.record("\(name): opened")
            } catch {
                #expect(isInvalidArgument(error), "\(name): \(error)")
            }
            #expect(Store.opened(at: dir.url) == nil, "\(name)")
        }
        // The limits themselves are valid.
        var edge = StoreOptions(durability: .buffered)
        edge.blockSize = 1 << 10
        edge.memtableSize = 64 << 10
        edge.segmentSize = 64 << 10
        edge.cacheSize = 0
        edge.bloomBitsPerKey = 0
        edge.syncInterval = .milliseconds(1)
        let store = try Store.open(at: dir.url, options: edge)
        for i in 0..<2_000 { try store.put(numbered(i), [UInt8](repeating: 3, count: 50)) }
        #expect(try store.get(numbered(1_234)) == [UInt8](repeating: 3, count: 50))
        #expect(try store.get(b("absent")) == nil)
        try store.close()

        // A URL that is not a file URL.
        #expect(throws: StrataError.self) { try Store.open(at: URL(string: "https://example.com/store")!) }
    }

    // MARK: Edge cases

    @Test func emptyKeysAndValues() throws {
        let dir = StoreDirectory("empty")
        defer { dir.remove() }
        var store = try Store.open(at: dir.url, options: smallOptions())
        try store.put([], b("empty key"))
        try store.put(b("k"), [])
        try store.put(b("l"), b("x"))
        try store.put(b("l"), [])
        func check(_ when: String) throws {
            #expect(try store.get([]) == b("empty key"), "\(when)")
            #expect(try store.get(b("k")) == [], "\(when): an empty value is not an absent one")
            #expect(try store.get(b("l")) == [], "\(when)")
            #expect(try store.scan().map(\.key) == [[], b("k"), b("l")], "\(when)")
            #expect(try store.scan(reverse: true).map(\.key) == [b("l"), b("k"), []], "\(when)")
            #expect(try store.scan(from: [], to: [0]).map(\.key) == [[]], "\(when)")
            #expect(try store.scan(from: [0]).map(\.key) == [b("k"), b("l")], "\(when)")
            #expect(try store.scan(to: []).isEmpty, "\(when)")
        }
        try check("in the memtable")
        try store.compact()
        try check("after compact()")
        try store.close()
        store = try Store.open(at: dir.url, options: smallOptions())
        try check("after reopen")

        try store.delete([])
        #expect(try store.get([]) == nil)
        try store.put([], [])
        #expect(try store.get([]) == [])
        try store.write({ var x = WriteBatch(); x.deleteRange(from: [], to: [0]); return x }())
        #expect(try store.get([]) == nil)
        #expect(try store.scan().map(\.key) == [b("k"), b("l")])
        try store.close()
    }

    @Test func keysWithExtremeBytesAndLargeValues() throws {
        let dir = StoreDirectory("extreme")
        defer { dir.remove() }
        var store = try Store.open(at: dir.url, options: smallOptions())
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let ks: [[UInt8]] = [[0x00], [0x00, 0x00], [0x00, 0xFF], [0x01], [0xFE, 0xFF], [0xFF], [0xFF, 0x00], [0xFF, 0xFF, 0xFF],
                             [UInt8](repeating: 0xFF, count: 2_000)]
        for (i, k) in ks.enumerated() { try store.put(k, i == 4 ? large : [UInt8(i)]) }
        func check(_ when: String) throws {
            #expect(try store.scan().map(\.key) == ks, "\(when)")
            #expect(try store.scan(reverse: true).map(\.key) == ks.reversed(), "\(when)")
            #expect(try store.get([0xFE, 0xFF]) == large, "\(when)")
            #expect(try store.get([0xFF, 0xFF, 0xFF]) == [7], "\(when)")
            #expect(try store.scan(from: [0xFF]).map(\.key) == Array(ks[5...]), "\(when)")
        }
        try check("in the memtable")
        try store.compact()
        try check("after compact()")
        try store.close()
        store = try Store.open(at: dir.url, options: smallOptions())
        try check("after reopen")
        try store.close()
    }
}

private extension StoreDirectory {
    init(url: URL) { self.url = url }
}

@Suite struct CollectionNameTests {
    @Test("canonically equivalent names are two collections, as the catalog stores them, across reopen")
    func canonicallyEquivalentNames() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed)   // Swift's String equality: canonical equivalence
        for round in 0..<2 {
            let store = try Store.open(at: tmp.url)
            let a = try store.timeSeries(composed, of: Int64.self)
            let b = try store.timeSeries(decomposed, of: Int64.self)
            if round == 0 {
                try a.append(1)
                try b.append(2)
                try b.append(3)
                let da = try store.documents(composed), db = try store.documents(decomposed)
                try da.save(Document(id: "x", fields: ["in": "composed"]))
                try db.save(Document(id: "x", fields: ["in": "decomposed"]))
            }
            #expect(try a.query(.values.fromStart()).events.map(\.value) == [1])
            #expect(try b.query(.values.fromStart()).events.map(\.value) == [2, 3])
            #expect(try store.documents(composed).document(id: "x")?["in"] == "composed")
            #expect(try store.documents(decomposed).document(id: "x")?["in"] == "decomposed")
            try store.close()
        }
    }
}
