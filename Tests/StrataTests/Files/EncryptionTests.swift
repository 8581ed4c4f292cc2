import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Encryption at rest (FORMAT.md 5.12, 4.1, 6.1; issue 28): nothing in clear, every bit flip
// refused, wrong and missing keys refused without a change.

enum EncryptionFixture {
    /// The published test key of FORMAT.md 11.4: the bytes 00 01 … 1f.
    static let testKey = try! EncryptionKey(bytes: (0..<32).map { UInt8($0) })
    static let otherKey = try! EncryptionKey(bytes: (0..<32).map { UInt8(255 - $0) })
    static let marker = "MARKER-7f3a9c"

    static func options(_ key: EncryptionKey? = testKey) -> StoreOptions {
        var o = StoreOptions(encryptionKey: key)
        o.memtableSize = 64 << 10
        return o
    }

    /// Writes the marker into every kind of thing a store names or holds: a series path and
    /// value, a channel name and message, a database name, a document id and field, a raw key and
    /// value; flushes part of it to segments and leaves the rest in the log.
    static func writeMarkers(_ store: Store) throws {
        let series = try store.timeSeries("series/\(marker)", of: String.self)
        let channel = try store.channel("channel-\(marker)", of: String.self)
        let db = try store.documents("db-\(marker)")
        for i in 0..<200 {
            _ = try series.append("value \(marker) \(i)")
            _ = try channel.publish("message \(marker) \(i)")
            _ = try db.save(Document(id: "doc-\(marker)-\(i)", fields: ["field": .string("\(marker) \(i)")]))
        }
        try store.compact()
        _ = try series.append("after \(marker)")
        _ = try channel.publish("after \(marker)")
        _ = try db.save(Document(id: "late-\(marker)", fields: ["f": .string(marker)]))
    }

    /// The names of the store's files whose bytes contain `needle`.
    static func filesContaining(_ needle: String, in dir: TemporaryDirectory) throws -> [String] {
        let n = Array(needle.utf8)
        return try dir.list().filter { name in
            let b = try dir.read(name)
            guard b.count >= n.count else { return false }
            return (0...(b.count - n.count)).contains { i in b[i] == n[0] && Array(b[i..<(i + n.count)]) == n }
        }
    }
}

@Suite struct EncryptionTests {
    typealias F = EncryptionFixture

    @Test("no byte of a marker appears in any file of an encrypted store; in clear it does")
    func nothingInClear() throws {
        for encrypted in [true, false] {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let store = try Store.open(at: dir.url, options: F.options(encrypted ? F.testKey : nil))
            try F.writeMarkers(store)
            // Before close (log and segments), and after (the close's flush).
            let open = try F.filesContaining(F.marker, in: dir)
            try store.close()
            let closed = try F.filesContaining(F.marker, in: dir)
            if encrypted {
                #expect(open.isEmpty && closed.isEmpty, "marker in clear in \(open) \(closed)")
                #expect(dir.list().contains { $0.hasSuffix(".seg") }, "no segment was written")
            } else {
                #expect(!open.isEmpty && !closed.isEmpty, "the test cannot see a marker in a store in clear")
            }
        }
    }

    @Test("an encrypted store reopens with its key and reads back everything")
    func reopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var store = try Store.open(at: dir.url, options: F.options())
        try F.writeMarkers(store)
        try store.close()
        store = try Store.open(at: dir.url, options: F.options())
        defer { try? store.close() }
        let series = try store.timeSeries("series/\(F.marker)", of: String.self)
        #expect(try series.query(.values).events.count == 201)
        let channel = try store.channel("channel-\(F.marker)", of: String.self)
        #expect(try channel.messageCount(since: Timetoken(0)) == 201)
        #expect(try channel.history(limit: 1).messages.map(\.message) == ["after \(F.marker)"])
        let db = try store.documents("db-\(F.marker)")
        #expect(try db.document(id: "late-\(F.marker)")?.fields["f"] == .string(F.marker))
        #expect(try StoreVerifier.verify(storeAt: dir.path, key: F.testKey).faults.isEmpty)
    }

    @Test("a wrong key, a missing key and a key on a store in clear are typed errors naming the store, and change nothing")
    func keyMismatches() throws {
        let encrypted = try TemporaryDirectory(), clear = try TemporaryDirectory()
        defer { encrypted.remove(); clear.remove() }
        for (dir, key) in [(encrypted, F.testKey), (clear, nil)] {
            let store = try Store.open(at: dir.url, options: F.options(key))
            try F.writeMarkers(store)
            try store.close()
        }
        let cases: [(TemporaryDirectory, EncryptionKey?, EncryptionKeyProblem)] = [
            (encrypted, F.otherKey, .wrongKey), (encrypted, nil, .missingKey), (clear, F.testKey, .storeNotEncrypted),
        ]
        for (dir, key, problem) in cases {
            let error = try Hardening.expectRefusedOpen(dir, options: F.options(key))
            #expect(error == .encryptionKey(store: dir.path, problem: problem), "\(problem): \(String(describing: error))")
        }
        // The inspectors too.
        #expect(throws: StrataError.encryptionKey(store: encrypted.path, problem: .missingKey)) {
            _ = try StoreImage.snapshot(directory: encrypted.path)
        }
        #expect(throws: StrataError.encryptionKey(store: encrypted.path, problem: .wrongKey)) {
            _ = try StoreImage.snapshot(directory: encrypted.path, key: F.otherKey)
        }
    }

    @Test("a backup of an encrypted store is encrypted: it opens with the key only, and holds nothing in clear")
    func encryptedBackup() throws {
        let dir = try TemporaryDirectory(), scratch = try TemporaryDirectory()
        defer { dir.remove(); scratch.remove() }
        let store = try Store.open(at: dir.url, options: F.options())
        try F.writeMarkers(store)
        let copy = TemporaryDirectory(existing: scratch.path + "/copy")
        try store.backup(to: copy.url)
        try store.close()
        #expect(try F.filesContaining(F.marker, in: copy).isEmpty)
        let refusal = try Hardening.expectRefusedOpen(copy, options: F.options(nil))
        #expect(refusal == .encryptionKey(store: copy.path, problem: .missingKey))
        #expect(try StoreVerifier.verify(storeAt: copy.path, key: F.testKey).faults.isEmpty)
        let reopened = try Store.open(at: copy.url, options: F.options())
        defer { try? reopened.close() }
        #expect(try reopened.timeSeries("series/\(F.marker)", of: String.self).query(.values).events.count == 201)
        #expect(try reopened.documents("db-\(F.marker)").document(id: "late-\(F.marker)") != nil)
    }

    @Test("an encryption key is 32 bytes")
    func keyLength() {
        for n in [0, 16, 31, 33, 64] {
            #expect(throws: StrataError.invalidArgument(argument: "encryptionKey", reason: "an encryption key is 32 bytes, not \(n)")) {
                _ = try EncryptionKey(bytes: [UInt8](repeating: 1, count: n))
            }
        }
        #expect(EncryptionKey.random() != EncryptionKey.random())
        #expect(!F.testKey.description.contains("000102"))
    }

    @Test("a unit sealed at one position or in one file does not open at another or in another")
    func noncesBindPositionAndFile() throws {
        let a = FileCipher.forNewFile(key: F.testKey, purpose: .segment, fileNumber: 7)
        let b = FileCipher.forNewFile(key: F.testKey, purpose: .segment, fileNumber: 7)
        #expect(a.salt != b.salt)
        let plain = Array("hello".utf8), header: [UInt8] = [1, 2]
        var sealed: [UInt8] = []
        plain.withUnsafeBytes { p in header.withUnsafeBytes { a.seal(p, position: 100, header: $0, to: &sealed) } }
        sealed.withUnsafeBytes { s in
            header.withUnsafeBytes { h in
                #expect(a.open(s, position: 100, header: h) == plain)
                #expect(a.open(s, position: 101, header: h) == nil)
                #expect(b.open(s, position: 100, header: h) == nil)
            }
            #expect(a.open(s, position: 100, header: UnsafeRawBufferPointer(start: nil, count: 0)) == nil)
        }
    }

    /// A small encrypted store, flushed: a segment, a manifest and a log with records.
    private func smallStore() throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        let engine = try Engine(directory: dir.path, options: {
            var o = EngineOptions()
            o.encryptionKey = F.testKey
            o.segment.blockSize = 128
            return o
        }())
        for round in 0..<2 {
            var batch = WriteBatch()
            for i in 0..<12 { batch.putRaw(Array("\(F.marker)-\(round)-\(i)".utf8), Array("v\(i)".utf8)) }
            _ = try engine.commit(CommitBatch(records: batch))
            if round == 0 { try engine.compactAll() }
        }
        // Closed without a flush of the second batch: it stays in the log.
        try engine.close()
        return dir
    }

    @Test("every single-bit flip of an encrypted segment, manifest and log is refused at read or open")
    func everyBitFlipRefused() throws {
        let dir = try smallStore()
        defer { dir.remove() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let names = dir.list()
        let segment = try #require(names.first { $0.hasSuffix(".seg") })
        let log = try #require(names.filter { $0.hasSuffix(".log") }.max { (try? dir.read($0).count) ?? 0 < (try? dir.read($1).count) ?? 0 })
        let number = try #require(UInt64(segment.dropLast(4)))

        // Segment: the reader refuses at open, or when each block is read.
        func readAll(_ path: String) throws -> [[UInt8]] {
            let r = try SegmentReader(path: path, number: number, cache: nil, fileSystem: .real, key: F.testKey)
            var out: [[UInt8]] = []
            let c = SegmentCursor(r)
            try c.seekToFirst()
            while c.isValid { out.append(c.withKey { Array($0) }); try c.next() }
            return out
        }
        let original = try dir.read(segment)
        let keys = try readAll(dir.file(segment))
        #expect(keys.count == 12)
        // Every byte of an encrypted segment is in a sealed block, its trailer, the encryption
        // header or the footer: each flip fails a CRC or a tag, at open or at the first read.
        for bit in 0..<(original.count * 8) {
            var b = original
            b[bit / 8] ^= 1 << (bit % 8)
            try scratch.write(segment, b)
            #expect(throws: StrataError.self, "segment bit \(bit) was not refused") { _ = try readAll(scratch.file(segment)) }
        }

        // Manifest: every flip refused.
        let manifest = try dir.read(FileNames.manifest)
        for bit in 0..<(manifest.count * 8) {
            var b = manifest
            b[bit / 8] ^= 1 << (bit % 8)
            #expect(throws: StrataError.self, "manifest bit \(bit)") { _ = try Manifest.decode(b, file: "MANIFEST", key: F.testKey) }
        }

        // Log: a flip is refused, or it turns the final record into a torn tail; never different data.
        let logBytes = try dir.read(log)
        let records = try LogReader(path: log, bytes: logBytes, key: F.testKey).records.map(\.payload)
        #expect(!records.isEmpty)
        for bit in 0..<(logBytes.count * 8) {
            var b = logBytes
            b[bit / 8] ^= 1 << (bit % 8)
            do {
                let r = try LogReader(path: log, bytes: b, key: F.testKey)
                let read = r.records.map(\.payload)
                #expect(read.count < records.count && Array(records.prefix(read.count)) == read,
                        "log bit \(bit) read as data (\(read.count) records)")
            } catch is StrataError {}
        }
    }
}
