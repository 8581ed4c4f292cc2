import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

@Suite struct FileNamesTests {
    @Test func names() {
        #expect(FileNames.log(0) == "000000.log")
        #expect(FileNames.log(1) == "000001.log")
        #expect(FileNames.segment(42) == "000042.seg")
        #expect(FileNames.segment(999_999) == "999999.seg")
        #expect(FileNames.log(1_000_000) == "1000000.log")
        #expect(FileNames.segment(UInt64.max) == "18446744073709551615.seg")
        #expect(FileNames.manifest == "MANIFEST")
        #expect(FileNames.lock == "LOCK")
    }

    @Test func parseRoundTrip() {
        var rng = SplitMix64(seed: 0xF11E_0001)
        var numbers: [UInt64] = [0, 1, 9, 10, 99_999, 999_999, 1_000_000, UInt64.max]
        for _ in 0..<500 { numbers.append(rng.next() >> (rng.next() % 64)) }
        for n in numbers {
            #expect(FileNames.parse(FileNames.log(n)) == .log(n))
            #expect(FileNames.parse(FileNames.segment(n)) == .segment(n))
        }
    }

    @Test func parseSpecialFiles() {
        #expect(FileNames.parse("MANIFEST") == .manifest)
        #expect(FileNames.parse("LOCK") == .lock)
        #expect(FileNames.parse("MANIFEST.tmp") == .temporary)
        #expect(FileNames.parse("000007.seg.tmp") == .temporary)
        #expect(FileNames.parse(".tmp") == .temporary)
    }

    @Test func parseJunk() {
        let junk = [
            "", "manifest", "MANIFEST2", "LOCK.old", "lock", "README", ".log", ".seg", "log", "000001",
            "abc.log", "00000a.seg", "000001.LOG", "000001.log.bak", "000001.seg~", " 000001.log", "000001 .log",
            "-1.log", "+1.log", "+000001.seg", "-000000.log", "0x10.seg", "1e3.log", "١٢٣٤٥٦.log",
            "18446744073709551616.seg",  // one past UInt64.max
            "99999999999999999999999.log",
        ]
        for name in junk {
            #expect(FileNames.parse(name) == .other, "\"\(name)\"")
        }
    }

    /// FORMAT.md section 2: only the canonical spelling names a store file; others are foreign.
    @Test func onlyCanonicalNamesParse() {
        #expect(FileNames.parse("1.log") == .other)
        #expect(FileNames.parse("00001.log") == .other)
        #expect(FileNames.parse("0000001.log") == .other)
        #expect(FileNames.parse("7.seg") == .other)
        #expect(FileNames.parse("0000000042.seg") == .other)
        #expect(FileNames.parse("000001.log") == .log(1))
        #expect(FileNames.parse("1234567.seg") == .segment(1_234_567))
        #expect(FileNames.parse("18446744073709551615.log") == .log(.max))
    }

    /// A file named like a log but not canonically (`6.log`) is foreign: it must neither break
    /// opening (recovery reopens logs by their canonical name) nor be replayed or deleted.
    @Test func unpaddedLogNameDoesNotBreakOpening() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-FileNamesTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store.open(at: dir)
        try store.put([1], [2])
        try store.close()
        // An empty log (a header only) numbered 6, under the unpadded name.
        try Data(LogFormat.header(logNumber: 6)).write(to: dir.appendingPathComponent("6.log"))
        do {
            let reopened = try Store.open(at: dir)
            #expect(try reopened.get([1]) == [2])
            try reopened.close()
        } catch {
            Issue.record("a store holding \"6.log\" cannot be opened: \(error)")
        }
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("6.log").path))
    }
}
