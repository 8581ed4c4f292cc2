import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// No engine or collection lock is held across recovery or collection creation: opening one
// store or collection never waits for another one being opened. Each test holds one open at a
// system call until the other open is done, with a 20 s bound so that a deadlock fails the test
// instead of hanging the suite.

private func canonical(_ url: URL) -> String { url.standardizedFileURL.resolvingSymlinksInPath().path }

@Suite struct StoreConcurrencyTests {
    @Test("Store.open of one directory does not wait for the recovery of another")
    func openWhileAnotherRecovers() throws {
        let a = try TemporaryDirectory()
        let b = try TemporaryDirectory()
        defer { a.remove(); b.remove() }
        do {
            let store = try Store.open(at: a.url)
            try store.put(Array("k".utf8), Array("v".utf8))
            try store.close()
        }
        let recovering = Signal()
        let otherOpened = Signal()
        let held = Atomic<Bool>(false)
        let heldTooLong = Atomic<Bool>(false)
        let lockPath = canonical(a.url) + "/LOCK"
        let faults = IOFaults()
        let options = { var o = StoreOptions(); o.fileSystem = .injecting(faults); return o }()
        try faults.with({ op, path in
            // Hold the recovery of `a` (it takes its LOCK first) until `b` is open.
            if op == .flock, path == lockPath, !held.exchange(true, ordering: .relaxed) {
                recovering.fire()
                if !otherOpened.wait(seconds: 20) { heldTooLong.store(true, ordering: .relaxed) }
            }
            return nil
        }) {
            let thread = Signal()
            let opened = Mutex<Store?>(nil)
            Thread {
                opened.withLock { $0 = try? Store.open(at: a.url, options: options) }
                thread.fire()
            }.start()
            #expect(recovering.wait(seconds: 20))
            let other = runBounded(seconds: 20) { try Store.open(at: b.url) }
            otherOpened.fire()
            #expect(other != nil, "Store.open of another directory waited for a recovery")
            #expect(thread.wait(seconds: 60))
            let tooLong = heldTooLong.load(ordering: .relaxed)
            #expect(!tooLong)
            try opened.withLock { $0 }?.close()
            if case .success(let store)? = other { try store.close() }
        }
    }

    @Test("two concurrent opens of one directory while it recovers return one instance")
    func concurrentOpensOfOneDirectoryWhileRecovering() throws {
        let a = try TemporaryDirectory()
        defer { a.remove() }
        let recovering = Signal()
        let release = Signal()
        let held = Atomic<Bool>(false)
        let lockPath = canonical(a.url) + "/LOCK"
        let faults = IOFaults()
        let options = { var o = StoreOptions(); o.fileSystem = .injecting(faults); return o }()
        try faults.with({ op, path in
            if op == .flock, path == lockPath, !held.exchange(true, ordering: .relaxed) {
                recovering.fire()
                _ = release.wait(seconds: 20)
            }
            return nil
        }) {
            let done = Signal()
            let first = Mutex<Store?>(nil)
            Thread {
                first.withLock { $0 = try? Store.open(at: a.url, options: options) }
                done.fire()
            }.start()
            #expect(recovering.wait(seconds: 20))
            let secondDone = Signal()
            let second = Mutex<Store?>(nil)
            Thread {
                second.withLock { $0 = try? Store.open(at: a.url, options: options) }
                secondDone.fire()
            }.start()
            release.fire()
            #expect(done.wait(seconds: 20))
            #expect(secondDone.wait(seconds: 20))
            let s1 = try #require(first.withLock { $0 })
            let s2 = try #require(second.withLock { $0 })
            #expect(s1 === s2)
            try s1.close()
        }
    }

    @Test("creating one collection does not block opening another; concurrent opens share one state")
    func collectionCreationDoesNotBlockOthers() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            _ = try store.channel("room", of: String.self)
            try store.close()
        }
        let faults = IOFaults()
        let options = { var o = StoreOptions(); o.fileSystem = .injecting(faults); return o }()
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let creating = Signal()
        let otherOpened = Signal()
        let armed = Atomic<Bool>(false)
        let heldTooLong = Atomic<Bool>(false)
        let prefix = canonical(dir.url) + "/"
        try faults.with({ op, path in
            // Hold the synced catalog write that creates the series until the channel is open.
            if op == .fsync, path.hasPrefix(prefix), armed.exchange(false, ordering: .relaxed) {
                creating.fire()
                if !otherOpened.wait(seconds: 20) { heldTooLong.store(true, ordering: .relaxed) }
            }
            return nil
        }) {
            _ = try SeriesRetention.of(store)
            armed.store(true, ordering: .relaxed)
            let done = Signal()
            let series = Mutex<Result<TimeSeries<Int64>, any Error>?>(nil)
            Thread {
                let r = Result { try store.timeSeries("big", of: Int64.self) }
                series.withLock { $0 = r }
                done.fire()
            }.start()
            #expect(creating.wait(seconds: 20))
            let channel = runBounded(seconds: 20) { try store.channel("room", of: String.self) }
            otherOpened.fire()
            #expect(channel != nil, "opening a channel waited for the creation of a series")
            #expect(done.wait(seconds: 60))
            let tooLong = heldTooLong.load(ordering: .relaxed)
            #expect(!tooLong)
            if case .failure(let e)? = series.withLock({ $0 }) { Issue.record(e) }
        }
        // Concurrent opens of one new collection get one state.
        let states = Mutex<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let s = try? store.timeSeries("shared", of: Int64.self) {
                states.withLock { $0.append(ObjectIdentifier(s.state)) }
            }
        }
        #expect(states.withLock { Set($0).count } == 1)
        #expect(states.withLock { $0.count } == 8)
    }
}
