import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Store.changeEncryptionKey(at:from:to:) (FORMAT.md 9.6): every record survives, the files are
// sealed with the new key only, and a power cut at any system call leaves a store that opens with
// the old key or the new one.

@Suite struct KeyChangeTests {
    typealias F = EncryptionFixture

    /// A closed store (sealed with `key`) holding a series, a channel and a database, some of it
    /// in segments and some in the log.
    static func makeStore(_ dir: TemporaryDirectory, key: EncryptionKey?, count: Int = 60) throws {
        let store = try Store.open(at: dir.url, options: F.options(key))
        let series = try store.timeSeries("s/\(F.marker)", of: Double.self)
        let channel = try store.channel("c-\(F.marker)", of: String.self)
        let db = try store.documents("db")
        for i in 0..<count {
            try store.transaction { tx in
                _ = try tx.timeSeries("s/\(F.marker)", of: Double.self).append(Double(i))
                _ = try tx.channel("c-\(F.marker)", of: String.self).publish("\(F.marker) \(i)")
                _ = try tx.documents("db").save(Document(id: "d\(i)", fields: ["v": .string(F.marker)]))
            }
            if i == count / 2 { try store.compact() }
        }
        _ = (series, channel, db)
        try store.close()
    }

    /// What the store holds, read with `key`: the series' values, the channel's count, the ids.
    static func contents(_ dir: String, key: EncryptionKey?) throws -> [String] {
        let store = try Store.open(at: URL(fileURLWithPath: dir), options: F.options(key))
        defer { try? store.close() }
        let values = try store.timeSeries("s/\(F.marker)", of: Double.self).query(.values).events.map { "\($0.value)" }
        let count = try store.channel("c-\(F.marker)", of: String.self).messageCount(since: Timetoken(0))
        let docs = try store.documents("db").changes(since: 0).changes.map(\.id).sorted()
        return values + ["messages \(count)"] + docs
    }

    /// Opens the store at `dir` with each of `keys`, expecting exactly one to open it (the other
    /// refusing with an encryption-key error) and to read `expected`; returns the names that opened.
    @discardableResult
    static func opensWithOneKey(_ dir: String, _ keys: [(String, EncryptionKey?)], expected: [String], label: String) -> [String] {
        var opened: [String] = []
        for (name, key) in keys {
            do {
                #expect(try contents(dir, key: key) == expected, "\(label): the \(name) key reads other contents")
                opened.append(name)
            } catch StrataError.encryptionKey {
            } catch {
                Issue.record("\(label): opening with the \(name) key: \(error)")
            }
        }
        #expect(opened.count == 1, "\(label): opened with \(opened)")
        return opened
    }

    @Test("a key change to another key, to none and back keeps every record and seals the files with the new key only")
    func roundTrip() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Self.makeStore(dir, key: F.testKey)
        let expected = try Self.contents(dir.path, key: F.testKey)
        #expect(expected.count == 60 + 1 + 60)
        for (old, new) in [(F.testKey, F.otherKey), (F.otherKey, nil), (nil, F.testKey)] as [(EncryptionKey?, EncryptionKey?)] {
            try Store.changeEncryptionKey(at: dir.url, from: old, to: new)
            #expect(try Self.contents(dir.path, key: new) == expected)
            #expect(try StoreVerifier.verify(storeAt: dir.path, key: new).faults.isEmpty)
            // The old key no longer opens it, and no file is left from it.
            let refusal = try Hardening.expectRefusedOpen(dir, options: F.options(old))
            if case .encryptionKey? = refusal {} else { Issue.record("old key: \(String(describing: refusal))") }
            let inClear = try F.filesContaining(F.marker, in: dir)
            #expect(new == nil ? !inClear.isEmpty : inClear.isEmpty, "marker in \(inClear) with key \(String(describing: new))")
        }
    }

    @Test("a key change is refused, changing nothing, for a wrong old key, an open store and a missing store")
    func refusals() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Self.makeStore(dir, key: F.testKey, count: 5)
        let before = try Hardening.files(dir)
        #expect(throws: StrataError.encryptionKey(store: dir.path, problem: .wrongKey)) {
            try Store.changeEncryptionKey(at: dir.url, from: F.otherKey, to: nil)
        }
        #expect(throws: StrataError.encryptionKey(store: dir.path, problem: .missingKey)) {
            try Store.changeEncryptionKey(at: dir.url, from: nil, to: F.otherKey)
        }
        #expect(try Hardening.files(dir) == before)
        let store = try Store.open(at: dir.url, options: F.options())
        #expect {
            try Store.changeEncryptionKey(at: dir.url, from: F.testKey, to: F.otherKey)
        } throws: { e in
            if case StrataError.invalidArgument("directory", _) = e { return true }
            return false
        }
        try store.close()
        let missing = try TemporaryDirectory()
        defer { missing.remove() }
        #expect {
            try Store.changeEncryptionKey(at: missing.url, from: nil, to: F.otherKey)
        } throws: { e in
            if case StrataError.notFound(.store, _, _) = e { return true }
            return false
        }
        #expect(missing.list().isEmpty)
    }

    @Test("kill -9 during key changes leaves a store that opens with the old key or the new one, whole")
    func killDuringKeyChange() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Self.makeStore(dir, key: F.testKey, count: 30)
        let expected = try Self.contents(dir.path, key: F.testKey)
        var random = SplitMix64(seed: 0x4B45_5901)
        var changes = 0
        for trial in 0..<4 {
            let child = try CrashHelperProcess(["rekey", dir.path])
            child.run(for: Double(20 + random.below(400)) / 1000)
            _ = child.killAndWait()
            changes += child.lines.filter { $0.hasPrefix("KEY ") }.count
            Self.opensWithOneKey(dir.path, [("test", F.testKey), ("reverse", F.otherKey)], expected: expected,
                                 label: "trial \(trial) (helper: \(child.errorText))")
        }
        #expect(changes > 0, "no key change completed before a kill")
    }

    @Test("a key change whose n-th system call fails, for every n: a typed error, and a store that opens with the old key or the new one, whole")
    func failingSystemCalls() throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        try Self.makeStore(base, key: F.testKey, count: 20)
        let expected = try Self.contents(base.path, key: F.testKey)
        var failures = 0
        for n in 1... {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            let calls = Mutex(0)
            var options = F.options()
            options.fileSystem = FileSystem(environment: IOEnvironment(faults: IOFaults { _, path in
                guard path.hasPrefix(dir.path) else { return nil }
                return calls.withLock { $0 += 1; return $0 == n ? EIO : nil }
            }))
            do {
                try Store.changeEncryptionKey(at: dir.url, from: F.testKey, to: F.otherKey, options: options)
            } catch let error as StrataError {
                failures += 1
                if case .io = error {} else { Issue.record("system call \(n): \(error) is not an I/O error") }
            }
            // A failure the key change survives (a deletion of an old file, retried at the next
            // open) is not an error; either way the store opens with one key.
            Self.opensWithOneKey(dir.path, [("old", F.testKey), ("new", F.otherKey)], expected: expected,
                                 label: "system call \(n) failing")
            if calls.withLock({ $0 }) < n { break }
        }
        #expect(failures > 20, "only \(failures) system calls were failed")
    }

    @Test("a power cut at each system call of a key change leaves a store that opens with the old key or the new one, whole",
          arguments: [(true, true), (true, false), (false, true)])
    func powerCutAtEverySystemCall(fromEncrypted: Bool, toEncrypted: Bool) throws {
        let old = fromEncrypted ? F.testKey : nil, new = toEncrypted ? F.otherKey : nil
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let dir = TemporaryDirectory(existing: temporary.path + "/store")
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try Self.makeStore(dir, key: old, count: 30)
        let expected = try Self.contents(dir.path, key: old)
        let simulator = try PowerLossSimulator(directory: dir.path, cloneRoot: temporary.path + "/cut", seed: 7,
                                               cutChance: 1, maxCuts: 100_000, progress: .init(start: [0]))
        do {
            PowerLoss.attach(simulator)
            defer { PowerLoss.detach(simulator) }
            var options = F.options()
            options.fileSystem = PowerLoss.fileSystem
            try Store.changeEncryptionKey(at: dir.url, from: old, to: new, options: options)
        }
        let cuts = simulator.allCuts
        #expect(cuts.count > 20, "only \(cuts.count) system calls were cut")
        var opensWithOld = 0, opensWithNew = 0
        for cut in cuts {
            let opened = Self.opensWithOneKey(cut.directory, [("old", old), ("new", new)], expected: expected,
                                              label: "cut \(cut.number) after \(cut.after)")
            if opened == ["old"] { opensWithOld += 1 } else if opened == ["new"] { opensWithNew += 1 }
            try? FileManager.default.removeItem(atPath: cut.directory)
        }
        #expect(opensWithOld > 0 && opensWithNew > 0, "old \(opensWithOld), new \(opensWithNew)")
    }
}
