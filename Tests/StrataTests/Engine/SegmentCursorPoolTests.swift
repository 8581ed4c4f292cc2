import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The segment cursors a sorted run keeps for its next readers (SegmentCursorPool): bounded, and a
// reused cursor reads exactly what a new one would, whatever segment and position it came from.

@Suite struct SegmentCursorPoolTests {
    private static let prefix: [UInt8] = [0xF0]

    private static func key(_ i: Int) -> [UInt8] { prefix + Array(String(format: "%06d", i).utf8) }
    /// About 100 bytes that do not compress, so that the run has several segments.
    private static func value(_ i: Int) -> [UInt8] {
        var rng = SplitMix64(seed: UInt64(i))
        return Array("value \(i) ".utf8) + (0..<(60 + i % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    /// The keys and values of `cursor`, `limit` at most.
    private func read(_ cursor: MergedCursor, limit: Int) throws -> [([UInt8], [UInt8])] {
        var out: [([UInt8], [UInt8])] = []
        while out.count < limit, try cursor.next() {
            out.append(cursor.withCurrent { (Array($0), Array($1)) })
        }
        return out
    }

    @Test func reusedCursorsReadWhatNewOnesRead() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options(small: true))
        defer { try? store.close() }
        // 4,000 records of about 100 bytes, every third one deleted: a run of several segments of
        // 1 KiB blocks, with tombstones in the memtable for part of the reads.
        var live: [Int: [UInt8]] = [:]
        for chunk in stride(from: 0, to: 4_000, by: 500) {
            var batch = CommitBatch()
            for i in chunk..<(chunk + 500) {
                batch.records.putRaw(Self.key(i), Self.value(i))
                live[i] = Self.value(i)
            }
            try store.engine.commit(batch)
        }
        try store.compact()
        let runs = try store.engine.snapshot().version.runs
        #expect(runs.count == 1 && runs[0].segments.count > 2, "expected one run of several segments")
        var rng = SplitMix64(seed: 0x5E6_C0DE)
        var reads = 0
        for round in 0..<300 {
            if round == 150 {
                var batch = CommitBatch()
                for i in stride(from: 0, to: 4_000, by: 3) {
                    batch.records.deleteRaw(Self.key(i))
                    live[i] = nil
                }
                try store.engine.commit(batch)
            }
            let snapshot = try store.engine.snapshot()
            let a = rng.below(4_100), b = rng.below(4_100)
            let (lo, hi) = (min(a, b), max(a, b))
            let reverse = rng.below(2) == 0
            let limit = 1 + rng.below(300)
            // Sometimes two cursors of the run at once, so that both take from the pool.
            let other = rng.below(3) == 0 ? snapshot.cursor(lower: Self.key(hi), upper: nil) : nil
            let cursor = snapshot.cursor(lower: Self.key(lo), upper: Self.key(hi), reverse: reverse)
            let got = try read(cursor, limit: limit)
            var expected = (lo..<hi).compactMap { i in live[i].map { (Self.key(i), $0) } }
            if reverse { expected.reverse() }
            expected = Array(expected.prefix(limit))
            #expect(got.map(\.0) == expected.map(\.0), "round \(round): keys")
            #expect(got.map(\.1) == expected.map(\.1), "round \(round): values")
            if let other { _ = try read(other, limit: 5) }
            reads += got.count
        }
        #expect(reads > 10_000)
        #expect(runs[0].cursorPool.count >= 1 && runs[0].cursorPool.count <= SegmentCursorPool.capacity)
    }

    @Test func keepsAtMostItsCapacity() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options(small: true))
        defer { try? store.close() }
        var batch = CommitBatch()
        for i in 0..<100 { batch.records.putRaw(Self.key(i), Self.value(i)) }
        try store.engine.commit(batch)
        try store.compact()
        let snapshot = try store.engine.snapshot()
        guard let run = snapshot.version.runs.first else {
            Issue.record("no run after compaction")
            return
        }
        let pool = SegmentCursorPool()
        #expect(pool.take(for: run.segments[0], fillCache: true) == nil)
        for _ in 0..<(SegmentCursorPool.capacity + 3) { pool.give(SegmentCursor(run.segments[0])) }
        #expect(pool.count == SegmentCursorPool.capacity)
        let c = try #require(pool.take(for: run.segments[0], fillCache: false))
        #expect(pool.count == SegmentCursorPool.capacity - 1)
        try c.seekToFirst()
        #expect(c.isValid && c.key == Self.key(0))
    }
}
