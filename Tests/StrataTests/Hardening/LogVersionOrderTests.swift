import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: a log version that goes down within a store is corruption (FORMAT.md §8), not a log
// whose every record reads as a torn tail and is discarded without a word.

@Suite struct LogVersionOrderTests {
    private static func logs(_ dir: TemporaryDirectory) -> [String] {
        dir.list().filter { if case .log = FileNames.parse($0) { return true } else { return false } }
    }

    /// Rewrites log `name`'s header as version 1, its CRC valid.
    private static func downgrade(_ dir: TemporaryDirectory, _ name: String) throws {
        guard case .log(let n) = FileNames.parse(name) else { throw StrataError.invalidArgument(argument: "test", reason: "not a log") }
        var bytes = try dir.read(name)
        bytes.replaceSubrange(0..<LogFormat.headerSize, with: LogFormat.header(logNumber: n, version: 1))
        try dir.write(name, bytes)
    }

    @Test("a CRC-valid log header rewritten from version 2 to 1, the only log or after a version-2 log: open refuses, changing nothing; verify reports it")
    func versionGoesDown() throws {
        for opens in [1, 2] {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            for i in 0..<opens {
                let store = try Store.open(at: dir.url)
                try store.put(Array("k\(i)".utf8), Array("v".utf8))
                try store.close()
            }
            let name = try #require(Self.logs(dir).last)
            try Self.downgrade(dir, name)
            let e = try Hardening.expectRefusedOpen(dir)
            guard case .corrupted(let file, let offset, _)? = e else {
                Issue.record("\(opens) opens: expected .corrupted, got \(String(describing: e))")
                continue
            }
            #expect(file.hasSuffix(name) && offset == 8)
            let report = try StoreVerifier.verify(storeAt: dir.path)
            #expect(report.faults.contains { $0.file.hasSuffix(name) && $0.offset == 8 }, "\(report.faults)")
        }
    }

    @Test("a store an older build left — a version 1 manifest and log — opens, and opens again under the version 2 manifest that open writes, its version 1 log still replayed")
    func olderStoresStillOpen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Store.open(at: dir.url).close()
        let m = try Manifest.decode(try dir.read(FileNames.manifest), file: FileNames.manifest)
        // Log `logNumber` as an older build wrote it: header version 1, one version 1 record.
        var batch = WriteBatch()
        batch.put(Array("k".utf8), Array("v".utf8))
        var payload: [UInt8] = []
        LittleEndian.append(UInt64(m.lastSequence + 1), to: &payload)
        LittleEndian.append(UInt32(batch.count), to: &payload)
        payload += batch.operations
        var record: [UInt8] = [0, 0, 0, 0]
        LittleEndian.append(UInt32(payload.count), to: &record)
        record.append(LogFormat.RecordType.batch.rawValue)
        record += payload
        let crc = CRC32C.mask(CRC32C.checksum(record[4...]))
        for i in 0..<4 { record[i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        try dir.write(FileNames.log(m.logNumber), LogFormat.header(logNumber: m.logNumber, version: 1) + record)
        var manifest = try dir.read(FileNames.manifest)
        manifest[8] = 1  // version 1; the CRC covers the payload only
        try dir.write(FileNames.manifest, manifest)
        for _ in 0..<2 {
            let store = try Store.open(at: dir.url)
            #expect(try store.get(Array("k".utf8)) == Array("v".utf8))
            try store.close()
        }
        #expect(try StoreVerifier.verify(storeAt: dir.path).faults.isEmpty)
    }
}
