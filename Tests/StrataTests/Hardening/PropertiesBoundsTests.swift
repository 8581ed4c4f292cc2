import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: the bounds a reader trusts are checked. A segment's properties give the key range the
// engine picks segments by (point reads, counts); open checks them against the index and the
// first data block, as `strata-dump verify` does (FORMAT.md 5.11).

@Suite struct PropertiesBoundsTests {
    /// A closed store whose one segment holds `k000` … `k199` (keys of one length) in several
    /// data blocks.
    private static func segmentStore(blockSize: Int = 1024) throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        var options = StoreOptions()
        options.blockSize = blockSize
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        for i in 0..<200 { try store.put(Array(String(format: "k%03d", i).utf8), Array(repeating: UInt8(i & 0xFF), count: 40)) }
        try store.compact()
        return dir
    }

    @Test("properties whose smallestKey is set to their largestKey, or whose bounds are empty (CRCs valid): open refuses, naming the properties block")
    func propertiesBounds() throws {
        let changes: [(String, (inout SegmentProperties) -> Void)] = [
            ("smallest = largest", { $0.smallestKey = $0.largestKey }),
            ("empty bounds", { $0.smallestKey = []; $0.largestKey = [] }),
            ("largest too small", { $0.largestKey = $0.smallestKey }),
            ("keyspace bounds empty", { for i in $0.keyspaces.indices { $0.keyspaces[i].smallestKey = []; $0.keyspaces[i].largestKey = [] } }),
        ]
        for (what, change) in changes {
            let dir = try Self.segmentStore()
            defer { dir.remove() }
            let segment = try #require(Hardening.segments(dir).first)
            try Hardening.rewriteProperties(dir, segment: segment, change)
            let e = try Hardening.expectRefusedOpen(dir)
            guard case .corrupted(let file, _, _)? = e else {
                Issue.record("\(what): expected .corrupted, got \(String(describing: e))")
                continue
            }
            #expect(file.hasSuffix(segment), "\(what)")
            Hardening.everyDumpVerb(dir)
            // verify finds the same.
            let report = try StoreVerifier.verify(storeAt: dir.path)
            #expect(!report.faults.isEmpty, "\(what): verify")
        }
    }

    @Test("a segment whose bounds are right opens, and every point read agrees with the scan")
    func rightBoundsAgree() throws {
        let dir = try Self.segmentStore()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let scanned = try store.scan()
        #expect(scanned.count == 200)
        for (k, v) in scanned { #expect(try store.get(k) == v) }
    }
}
