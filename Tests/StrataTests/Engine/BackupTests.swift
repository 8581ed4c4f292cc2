import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Online backup (Engine+Backup.swift, Store.backup(to:), FORMAT.md 9.6): the copy opens, verifies
// and equals the source at one sequence, with writes going on, under `.buffered` durability, with
// every system call of the backup failing in turn, and after `kill -9` in the middle of one.

/// Every record of a snapshot (tombstones and older versions left out), in key order.
private func records(_ snapshot: Snapshot) throws -> [([UInt8], [UInt8])] {
    let cursor = snapshot.cursor()
    var out: [([UInt8], [UInt8])] = []
    while try cursor.next() { out.append((cursor.key, Array(cursor.value))) }
    return out
}

/// Whether two record lists are equal; records the first difference as an issue.
@discardableResult
private func expectEqual(_ a: [([UInt8], [UInt8])], _ b: [([UInt8], [UInt8])], _ label: String,
                         sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    guard a.count == b.count else {
        Issue.record("\(label): \(a.count) records, expected \(b.count)", sourceLocation: sourceLocation)
        return false
    }
    for (x, y) in zip(a, b) where x.0 != y.0 || x.1 != y.1 {
        Issue.record("\(label): first difference at key \(KeyRendering.describe(x.0)) / \(KeyRendering.describe(y.0))",
                     sourceLocation: sourceLocation)
        return false
    }
    return true
}

/// Small memtables and segments, so that a few hundred writes flush and compact.
private func smallStoreOptions(_ durability: Durability = .synchronous, faults: IOFaults? = nil) -> StoreOptions {
    var o = StoreOptions(durability: durability)
    o.memtableSize = 64 << 10
    o.segmentSize = 256 << 10
    o.blockSize = 4 << 10
    if let faults { o.fileSystem = .injecting(faults) }
    return o
}

/// Writes something to every collection kind: raw keys, a series, a channel, a database with an
/// index, the security policy and push subscriptions; `rounds` rounds of it. Returns the push
/// device's id.
@discardableResult
private func populate(_ store: Store, rounds: Int) throws -> String {
    let series = try store.timeSeries("prices/AAPL", of: Double.self)
    let channel = try store.channel("chat", of: String.self)
    let db = try store.documents("db", indexes: [DocumentIndex(name: "byN", version: "1") { d, emit in emit(d["n"], nil) }])
    let push = try store.pushNotifications()
    let device = try push.register(PushDevice(platform: .apple, applicationID: "com.example", deviceToken: "ab12"))
    var subscription = PushSubscription(mode: .merge, items: ["prices/AAPL"], fields: ["value"])
    subscription.notificationFormat = PushFormat.apple(alert: "AAPL ${value}")
    _ = try push.subscribe(subscription, device: device.id)
    _ = try store.setSecurityPolicy(SecurityPolicy())
    for i in 0..<rounds {
        try store.put(Array("raw/\(i)".utf8), Array(repeating: UInt8(i & 0xFF), count: 40))
        _ = try series.append(Double(i))
        _ = try channel.publish("message \(i)")
        _ = try db.save(Document(id: "d\(i)", fields: ["n": .int(Int64(i))]))
        if i % 7 == 3 { try store.delete(Array("raw/\(i - 2)".utf8)) }
    }
    return device.id
}

/// The verifier's faults for a closed store directory.
private func verifyFaults(_ path: String) throws -> [VerifyReport.Fault] {
    try StoreVerifier.verify(storeAt: path).faults
}

/// A fresh path for a backup (not created).
private func backupPath() -> String {
    FileManager.default.temporaryDirectory.standardizedFileURL.resolvingSymlinksInPath().path
        + "/strata-backup-\(UUID().uuidString)"
}

@Suite("Online backup")
struct BackupTests {
    @Test("a backup of a store with every collection kind opens, verifies and equals the source")
    func everyCollection() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = backupPath()
        defer { try? FileManager.default.removeItem(atPath: target) }
        let store = try Store.open(at: dir.url, options: smallStoreOptions())
        defer { try? store.close() }
        let device = try populate(store, rounds: 600)
        #expect(store.statistics.segments > 0, "the store should have segments to link")
        var captured: Snapshot?
        let report = try store.engine.backup(to: target) { captured = $0 }
        let expected = try records(try #require(captured))
        #expect(expectEqual(try records(try store.engine.snapshot()), expected, "source now"))
        #expect(report.segmentsLinked == store.statistics.segments)
        #expect(report.segmentsCopied == 0)
        #expect(report.logsCopied >= 1)
        #expect(!FileManager.default.fileExists(atPath: target + "/" + FileNames.backupMarker))
        #expect(!FileManager.default.fileExists(atPath: target + "/" + FileNames.lock), "LOCK is not copied")

        // Hard links on one file system: each segment of the backup is the source's file.
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: target).first {
            if case .segment = FileNames.parse($0) { return true } else { return false }
        })
        var st = stat()
        #expect(stat(target + "/" + segment, &st) == 0)
        #expect(st.st_nlink == 2, "\(segment) has \(st.st_nlink) links")

        #expect(try verifyFaults(target).isEmpty)
        let copy = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true), options: smallStoreOptions())
        expectEqual(try records(try copy.engine.snapshot()), expected, "backup")
        // The collections open and read in the copy as in the source.
        #expect(try copy.timeSeries("prices/AAPL", of: Double.self).query(.values).selectedCount == 600)
        #expect(try copy.channel("chat", of: String.self).messageCount(since: Timetoken(0)) == 600)
        #expect(try copy.documents("db").changes(since: 0).changes.count == 600)
        #expect(try copy.pushNotifications().subscriptions(device: device).count == 1)
        // The copy is a store of its own: a write to it is not in the source.
        try copy.put(Array("only in the copy".utf8), [1])
        try copy.close()
        #expect(try store.get(Array("only in the copy".utf8)) == nil)
        #expect(try verifyFaults(target).isEmpty)
    }

    @Test("under concurrent writes on every collection kind the backup equals the source at one sequence")
    func concurrentWrites() throws {
        for durability in [Durability.synchronous, .buffered] {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let store = try Store.open(at: dir.url, options: smallStoreOptions(durability))
            try populate(store, rounds: 50)
            let series = try store.timeSeries("prices/AAPL", of: Double.self)
            let channel = try store.channel("chat", of: String.self)
            let db = try store.documents("db")
            // The writer's operations, in order: round i puts `w/i`, appends to the series,
            // publishes, saves `w<i>`; `rounds` counts the rounds done.
            let rounds = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
            let finished = DispatchSemaphore(value: 0)
            let writerError = Mutex<String?>(nil)
            let writer = Thread {
                defer { finished.signal() }
                var i = 0
                do {
                    while !stop.load(ordering: .relaxed) {
                        try store.put(Array("w/\(100_000 + i)".utf8), Array(repeating: 7, count: 60))
                        _ = try series.append(Double(i))
                        _ = try channel.publish("w \(i)")
                        _ = try db.save(Document(id: "w\(100_000 + i)", fields: ["n": .int(Int64(i))]))
                        i += 1
                        rounds.store(i, ordering: .releasing)
                    }
                } catch {
                    writerError.withLock { $0 = "\(error)" }
                }
            }
            writer.start()
            defer {
                stop.store(true, ordering: .relaxed)
                finished.wait()
            }
            for attempt in 0..<3 {
                // Each backup after one more flush, so that it links segments as well as copying logs.
                while (rounds.load(ordering: .acquiring) < 30 * (attempt + 1) || store.statistics.flushes < UInt64(attempt + 1))
                        && writerError.withLock({ $0 }) == nil {
                    usleep(2_000)
                }
                let target = backupPath()
                defer { try? FileManager.default.removeItem(atPath: target) }
                let before = rounds.load(ordering: .acquiring)
                var captured: Snapshot?
                let report = try store.engine.backup(to: target) { captured = $0 }
                let expected = try records(try #require(captured))
                #expect(report.segmentsLinked > 0 && report.logsCopied > 0, "\(durability) attempt \(attempt): \(report)")
                #expect(try verifyFaults(target).isEmpty, "\(durability) attempt \(attempt)")
                let copy = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
                defer { try? copy.close() }
                expectEqual(try records(try copy.engine.snapshot()), expected, "\(durability) attempt \(attempt)")
                // Every round acknowledged before the call, and a prefix of the writer's operations.
                let raw = try copy.scan(from: Array("w/".utf8), to: Array("w0".utf8)).count
                let events = try copy.timeSeries("prices/AAPL", of: Double.self).query(.values).selectedCount - 50
                let messages = try copy.channel("chat", of: String.self).messageCount(since: Timetoken(0)) - 50
                let documents = try copy.documents("db").changes(since: 0).changes.count - 50
                #expect(documents >= before, "\(durability): \(documents) rounds in the copy, \(before) acknowledged before the call")
                let counts: [Int] = [raw, events, messages, documents]
                let isPrefix = zip(counts, counts.dropFirst()).allSatisfy { $0 >= $1 } && documents + 1 >= raw
                #expect(isPrefix, "\(durability): not a prefix of the writer's operations: \(counts)")
                try copy.close()
            }
            stop.store(true, ordering: .relaxed)
            finished.wait()
            finished.signal()  // for the deferred wait
            #expect(writerError.withLock { $0 } == nil)
            try store.close()
        }
    }

    @Test("under .buffered durability, writes acknowledged before the call are in the backup")
    func bufferedWrites() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = backupPath()
        defer { try? FileManager.default.removeItem(atPath: target) }
        var options = StoreOptions(durability: .buffered)
        options.syncInterval = .seconds(60)  // no timer sync during the test
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        for i in 0..<200 { try store.put(Array("b/\(1000 + i)".utf8), Array("v\(i)".utf8)) }
        try store.backup(to: URL(fileURLWithPath: target, isDirectory: true))
        let copy = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
        defer { try? copy.close() }
        let found = try copy.scan(from: Array("b/".utf8), to: Array("b0".utf8))
        #expect(found.count == 200)
        #expect(found.last.map { String(decoding: $0.value, as: UTF8.self) } == "v199")
    }

    @Test("a target that exists and is not empty, is a file, or is the store's own directory is refused")
    func invalidTargets() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        try store.put([1], [2])
        let other = try TemporaryDirectory()
        defer { other.remove() }
        try other.write("someone's file", [1, 2, 3])
        let file = other.file("someone's file")
        for (label, url) in [("non-empty", other.url), ("a file", URL(fileURLWithPath: file)),
                             ("own directory", dir.url), ("inside the store", dir.url.appendingPathComponent("backup")),
                             ("own directory, spelled otherwise", URL(fileURLWithPath: dir.path + "/./x/.."))] {
            do {
                try store.backup(to: url)
                Issue.record("\(label): the backup was made")
            } catch StrataError.invalidArgument(let argument, _) {
                #expect(argument == "directory", "\(label)")
            } catch {
                Issue.record("\(label): \(error)")
            }
        }
        #expect(other.list() == ["someone's file"])
        #expect(!FileManager.default.fileExists(atPath: dir.file("backup")))
        // An empty directory that exists is fine.
        let empty = try TemporaryDirectory()
        defer { empty.remove() }
        try store.backup(to: empty.url)
        let copy = try Store.open(at: empty.url)
        #expect(try copy.get([1]) == [2])
        try copy.close()
    }

    @Test("open refuses a directory holding the backup marker, changing nothing; destroy removes it")
    func markerRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            try store.put([1], [2])
            try store.close()
        }
        try dir.write(FileNames.backupMarker, [])
        let refusal = try Hardening.expectRefusedOpen(dir)
        guard case .corrupted(let file, _, _)? = refusal else {
            Issue.record("not a corruption error: \(String(describing: refusal))")
            return
        }
        #expect(file.hasSuffix("/" + FileNames.backupMarker))
        #expect(try StoreVerifier.verify(storeAt: dir.path).faults.contains { $0.file.hasSuffix(FileNames.backupMarker) })
        try Store.destroy(at: dir.url)
        #expect(!FileManager.default.fileExists(atPath: dir.path))
    }

    @Test("the copy falls back to copying a segment when link(2) is refused (EXDEV)")
    func copyFallback() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = backupPath()
        defer { try? FileManager.default.removeItem(atPath: target) }
        let faults = IOFaults()
        let store = try Store.open(at: dir.url, options: smallStoreOptions(faults: faults))
        defer { try? store.close() }
        try populate(store, rounds: 400)
        faults.set { op, _ in op == .link ? Errno.crossDevice.code : nil }
        var captured: Snapshot?
        let report = try store.engine.backup(to: target) { captured = $0 }
        faults.set(nil)
        #expect(report.segmentsLinked == 0)
        #expect(report.segmentsCopied > 0)
        var st = stat()
        for name in try FileManager.default.contentsOfDirectory(atPath: target) {
            if case .segment = FileNames.parse(name) {
                #expect(stat(target + "/" + name, &st) == 0 && st.st_nlink == 1, "\(name) is linked")
            }
        }
        #expect(try verifyFaults(target).isEmpty)
        let copy = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
        defer { try? copy.close() }
        expectEqual(try records(try copy.engine.snapshot()), try records(try #require(captured)), "copied backup")
    }

    @Test("a backup onto another file system copies the segments (a real EXDEV), where there is one")
    func otherFileSystem() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var here = stat(), shm = stat()
        guard stat(dir.path, &here) == 0, stat("/dev/shm", &shm) == 0, here.st_dev != shm.st_dev else { return }
        let target = "/dev/shm/strata-backup-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: target) }
        let store = try Store.open(at: dir.url, options: smallStoreOptions())
        defer { try? store.close() }
        try populate(store, rounds: 400)
        var captured: Snapshot?
        let report = try store.engine.backup(to: target) { captured = $0 }
        #expect(report.segmentsLinked == 0 && report.segmentsCopied > 0, "\(report)")
        let copy = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
        defer { try? copy.close() }
        expectEqual(try records(try copy.engine.snapshot()), try records(try #require(captured)), "backup on /dev/shm")
    }

    @Test("every system call of a backup failing in turn: a typed error, the source unchanged and usable, the target refused or complete")
    func everyCallFailing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let faults = IOFaults()
        let store = try Store.open(at: dir.url, options: smallStoreOptions(faults: faults))
        defer { try? store.close() }
        try populate(store, rounds: 100)
        try store.compact()
        // Some records in the log too, too few for a flush: the store is idle during the backups.
        for i in 0..<20 { try store.put(Array("tail/\(i)".utf8), [UInt8(i)]) }
        let expected = try records(try store.engine.snapshot())

        // The calls one backup makes, in order.
        let calls = Mutex<[String]>([])
        let probe = backupPath()
        defer { try? FileManager.default.removeItem(atPath: probe) }
        _ = try faults.with({ op, path in calls.withLock { $0.append("\(op) \(path)") }; return nil }) {
            try store.engine.backup(to: probe)
        }
        let count = calls.withLock { $0.count }
        #expect(count > 10)
        let sourceFiles = try Hardening.files(dir)
        for k in 0..<count {
            let target = backupPath()
            defer { try? FileManager.default.removeItem(atPath: target) }
            let seen = Atomic<Int>(0)
            var failure: Error?
            faults.set { _, _ in seen.add(1, ordering: .relaxed).newValue == k + 1 ? Errno.ioError.code : nil }
            do { try store.engine.backup(to: target) } catch { failure = error }
            faults.set(nil)
            let call = calls.withLock { $0[k] }
            guard let failure else {
                Issue.record("call \(k) (\(call)) failed, and the backup succeeded")
                continue
            }
            #expect(failure is StrataError, "call \(k) (\(call)): \(failure)")
            // The source: the same files, byte for byte, and usable.
            #expect(try Hardening.files(dir) == sourceFiles, "call \(k) (\(call)) changed the source")
            #expect(store.engine.failure == nil, "call \(k) (\(call)) failed the engine")
            #expect(expectEqual(try records(try store.engine.snapshot()), expected, "source after call \(k)"))
            // The target: absent, empty, refused, or (a failure after it was complete) equal.
            let names = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
            if names.contains(FileNames.backupMarker) {
                do {
                    _ = try Engine(directory: target, options: EngineOptions())
                    Issue.record("call \(k) (\(call)): a target with the marker opened")
                } catch StrataError.corrupted(let file, _, _) {
                    #expect(file.hasSuffix(FileNames.backupMarker))
                } catch {
                    Issue.record("call \(k) (\(call)): \(error)")
                }
            } else if !names.isEmpty {
                let copy = try Engine(directory: target, options: EngineOptions())
                expectEqual(try records(try copy.snapshot()), expected, "target after call \(k) (\(call))")
                try copy.close()
            }
        }
        // And the store still writes and backs up.
        try store.put(Array("after".utf8), [1])
        let last = backupPath()
        defer { try? FileManager.default.removeItem(atPath: last) }
        try store.backup(to: URL(fileURLWithPath: last, isDirectory: true))
        #expect(try verifyFaults(last).isEmpty)
    }

    @Test("power loss at any system call of a backup leaves a target that is refused, empty, or the complete copy")
    func powerLoss() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = smallStoreOptions()
        options.fileSystem = PowerLoss.fileSystem
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        try populate(store, rounds: 300)
        for i in 0..<20 { try store.put(Array("tail/\(i)".utf8), [UInt8(i)]) }
        let root = try TemporaryDirectory()
        defer { root.remove() }
        var checked = 0, refused = 0, complete = 0
        for seed in 0..<UInt64(12) {
            let target = root.file("backup-\(seed)")
            let simulator = try PowerLossSimulator(directory: target, cloneRoot: root.file("cut-\(seed)"), seed: seed,
                                                   cutChance: 0.02, maxCuts: 8, progress: .init(start: [0]))
            if seed < 4 { simulator.cut(afterEvents: 1 + Int(seed) * 3) }
            PowerLoss.attach(simulator)
            var captured: Snapshot?
            do {
                defer { PowerLoss.detach(simulator) }
                try store.engine.backup(to: target) { captured = $0 }
            }
            let expected = try records(try #require(captured))
            for cut in simulator.allCuts {
                checked += 1
                let names = (try? FileManager.default.contentsOfDirectory(atPath: cut.directory)) ?? []
                if names.contains(FileNames.backupMarker) {
                    refused += 1
                    do {
                        _ = try Engine(directory: cut.directory, options: EngineOptions())
                        Issue.record("seed \(seed), cut after \(cut.after): a clone with the marker opened")
                    } catch StrataError.corrupted(let file, _, _) {
                        #expect(file.hasSuffix(FileNames.backupMarker))
                    }
                } else if !names.isEmpty {
                    complete += 1
                    let copy = try Engine(directory: cut.directory, options: EngineOptions())
                    expectEqual(try records(try copy.snapshot()), expected, "seed \(seed), cut after \(cut.after)")
                    try copy.close()
                }
            }
        }
        #expect(checked > 10 && refused > 0 && complete > 0, "\(checked) cuts, \(refused) refused, \(complete) complete")
    }

    @Test("the async twin makes the same backup")
    func asyncTwin() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = backupPath()
        defer { try? FileManager.default.removeItem(atPath: target) }
        let store = try await Store.open(at: dir.url)
        try await store.put([1], [2])
        try await store.backup(to: URL(fileURLWithPath: target, isDirectory: true))
        try await store.close()
        let copy = try await Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
        #expect(try await copy.get([1]) == [2])
        try await copy.close()
    }

    @Test("kill -9 during backups: the source holds every acknowledged write, each target is refused or complete")
    func killDuringBackup() throws {
        for round in 0..<3 {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let root = try TemporaryDirectory()
            defer { root.remove() }
            let child = try CrashHelperProcess(["backup", dir.path, root.path])
            let started = child.waitFor(timeout: 60) { $0.contains { $0.hasPrefix("START ") } }
            #expect(started, "round \(round): no backup started: \(String(decoding: child.errorOutput, as: UTF8.self))")
            child.run(for: 0.05 + Double(round) * 0.2 + Double.random(in: 0...0.3))
            _ = child.killAndWait()
            var acknowledged = 0
            var starts: [Int: Int] = [:]
            var done = Set<Int>()
            for line in child.lines {
                let parts = line.split(separator: " ")
                switch parts.first {
                case "ACK": acknowledged = max(acknowledged, Int(parts[1])! + 1)
                case "START": starts[Int(parts[1])!] = Int(parts[2])!
                case "DONE": done.insert(Int(parts[1])!)
                default: break
                }
            }
            // The source: every acknowledged put, and a prefix of them.
            let source = try Store.open(at: dir.url)
            let keys = try source.scan(from: Array("k/".utf8), to: Array("k0".utf8)).map { String(decoding: $0.key, as: UTF8.self) }
            #expect(keys.count >= acknowledged, "round \(round): \(keys.count) puts in the source, \(acknowledged) acknowledged")
            let prefix: [String] = (0..<keys.count).map { (i: Int) -> String in
                let digits = String(i)
                return "k/" + String(repeating: "0", count: 8 - digits.count) + digits
            }
            #expect(keys == prefix, "round \(round): the source's puts are not a prefix")
            try source.close()
            // Each target: refused (its marker is there), or complete with every put acknowledged
            // before its call.
            for (n, before) in starts.sorted(by: { $0.key < $1.key }) {
                let target = root.file(String(n))
                let names = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
                if names.contains(FileNames.backupMarker) {
                    #expect(!done.contains(n), "round \(round): backup \(n) returned but left its marker")
                    do {
                        let store = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
                        try? store.close()
                        Issue.record("round \(round): backup \(n), unfinished, opened")
                    } catch StrataError.corrupted(let file, _, _) {
                        #expect(file.hasSuffix(FileNames.backupMarker))
                    }
                } else if names.isEmpty {
                    #expect(!done.contains(n), "round \(round): backup \(n) returned but is empty")
                } else {
                    #expect(try verifyFaults(target).isEmpty, "round \(round): backup \(n)")
                    let copy = try Store.open(at: URL(fileURLWithPath: target, isDirectory: true))
                    let copied = try copy.scan(from: Array("k/".utf8), to: Array("k0".utf8)).count
                    #expect(copied >= before, "round \(round): backup \(n) holds \(copied) puts, \(before) acknowledged before it")
                    try copy.close()
                }
            }
            #expect(!starts.isEmpty)
        }
    }
}
