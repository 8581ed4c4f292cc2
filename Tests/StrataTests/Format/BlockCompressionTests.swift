import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

private func randomBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
}

/// Text-like data from a small vocabulary: compresses well.
private func compressibleBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
    let words = ["strata", "segment", "block", "key", "value", "tombstone", "log", "manifest", " ", "/", "0001"]
    var out: [UInt8] = []
    while out.count < count { out += Array(words[Int(rng.next() % UInt64(words.count))].utf8) }
    return Array(out.prefix(count))
}

private let canary: UInt8 = 0xC5
private let guardSize = 64

/// Decompresses `payload` into a buffer of `length` bytes placed between two guard zones, and
/// checks that the guards are untouched. Returns the result and the bytes written.
private func decompress(
    _ payload: [UInt8], length: Int, sourceLocation: SourceLocation = #_sourceLocation
) -> (Bool, [UInt8]) {
    var area = [UInt8](repeating: canary, count: guardSize + length + guardSize)
    let ok = payload.withUnsafeBytes { src in
        area.withUnsafeMutableBytes { all in
            BlockCompression.decompressLZ4(
                src, into: UnsafeMutableRawBufferPointer(rebasing: all[guardSize..<(guardSize + length)]))
        }
    }
    let before = area[0..<guardSize], after = area[(guardSize + length)...]
    #expect(before.allSatisfy { $0 == canary } && after.allSatisfy { $0 == canary },
            "decompressLZ4 wrote outside its destination", sourceLocation: sourceLocation)
    return (ok, Array(area[guardSize..<(guardSize + length)]))
}

@Suite struct BlockCompressionTests {
    @Test func compressibleDataIsStoredAsLZ4AndRoundTrips() {
        var rng = SplitMix64(seed: 0x1A40_0001)
        for size in [64, 100, 1000, 4096, 32 * 1024, 300_000] {
            let raw = compressibleBytes(size, &rng)
            let (kind, payload) = BlockCompression.compress(raw)
            #expect(kind == .lz4, "\(size) bytes of text")
            // LZ4 is only used when it saves at least an eighth.
            #expect(payload.count <= raw.count - raw.count / 8)
            let (ok, out) = decompress(payload, length: raw.count)
            #expect(ok)
            #expect(out == raw, "round trip of \(size) bytes")
        }
        // A run of one byte: the best case.
        let zeros = [UInt8](repeating: 0, count: 64 << 10)
        let (kind, payload) = BlockCompression.compress(zeros)
        #expect(kind == .lz4)
        #expect(payload.count < 1024)
        #expect(decompress(payload, length: zeros.count) == (true, zeros))
    }

    @Test func incompressibleDataIsStoredRaw() {
        var rng = SplitMix64(seed: 0x1A40_0002)
        for size in [64, 1000, 4096, 65_536] {
            let raw = randomBytes(size, &rng)
            let (kind, payload) = BlockCompression.compress(raw)
            #expect(kind == .none, "\(size) random bytes")
            #expect(payload == raw)
        }
    }

    @Test func tinyInputsAreStoredRaw() {
        for size in [0, 1, 2, 16, 63] {
            let raw = [UInt8](repeating: 0x61, count: size)  // compressible, but too small to bother
            let (kind, payload) = BlockCompression.compress(raw)
            #expect(kind == .none, "\(size) bytes")
            #expect(payload == raw)
        }
        #expect(BlockCompression.compress([UInt8](repeating: 0x61, count: 64)).0 == .lz4)
    }

    @Test func mixedDataRoundTripsWhicheverWayItIsStored() {
        var rng = SplitMix64(seed: 0x1A40_0003)
        var counts = [BlockCompression.none: 0, .lz4: 0]
        for _ in 0..<300 {
            let size = Int(rng.next() % 9000)
            // Part text, part noise, in a random proportion.
            let textShare = Int(rng.next() % 101)
            let text = compressibleBytes(size * textShare / 100, &rng)
            let raw = text + randomBytes(size - text.count, &rng)
            let (kind, payload) = BlockCompression.compress(raw)
            counts[kind, default: 0] += 1
            switch kind {
            case .none:
                #expect(payload == raw)
            case .lz4:
                #expect(payload.count <= raw.count - raw.count / 8)
                #expect(decompress(payload, length: raw.count) == (true, raw))
            }
        }
        #expect(counts[.none]! > 0 && counts[.lz4]! > 0, "both ways are exercised: \(counts)")
    }

    @Test func emptyOutput() {
        // The one-byte LZ4 block that decodes to nothing.
        #expect(decompress([0x00], length: 0).0 == true)
        #expect(decompress([0x00], length: 10).0 == false)
        #expect(decompress([], length: 10).0 == false)
        #expect(decompress([0x10, 0x61], length: 0).0 == false)
    }

    @Test func truncatedPayloadsAreRejected() {
        var rng = SplitMix64(seed: 0x1A40_0004)
        let raw = compressibleBytes(5000, &rng)
        let (kind, payload) = BlockCompression.compress(raw)
        #expect(kind == .lz4)
        #expect(decompress(payload, length: raw.count) == (true, raw))
        for cut in 0..<payload.count {
            #expect(decompress(Array(payload[0..<cut]), length: raw.count).0 == false, "payload cut to \(cut) bytes")
        }
    }

    @Test func wrongExpectedLengthIsRejected() {
        var rng = SplitMix64(seed: 0x1A40_0005)
        let raw = compressibleBytes(4000, &rng)
        let (_, payload) = BlockCompression.compress(raw)
        for length in [0, 1, raw.count / 2, raw.count - 1, raw.count + 1, raw.count + 1000] {
            #expect(decompress(payload, length: length).0 == false, "expected length \(length) of \(raw.count)")
        }
        #expect(decompress(payload, length: raw.count).0 == true)
    }

    /// Random garbage and mutated payloads: never a crash, never a write outside the destination,
    /// and a mutated payload that still "decodes" has the requested length exactly.
    @Test func fuzzedPayloadsNeverCrash() {
        var rng = SplitMix64(seed: 0x1A40_F022)
        let raw = compressibleBytes(3000, &rng)
        let (_, valid) = BlockCompression.compress(raw)
        var rejected = 0, total = 0
        for round in 0..<10_000 {
            let payload: [UInt8]
            let length: Int
            if round % 2 == 0 {
                payload = randomBytes(Int(rng.next() % 300), &rng)
                length = Int(rng.next() % 4000)
            } else {
                var p = valid
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    let i = Int(rng.next() % UInt64(p.count))
                    p[i] = rng.next() % 2 == 0 ? p[i] ^ (1 << UInt8(rng.next() % 8)) : UInt8(truncatingIfNeeded: rng.next())
                }
                payload = p
                length = rng.next() % 4 == 0 ? Int(rng.next() % 4000) : raw.count
            }
            let (ok, _) = decompress(payload, length: length)
            total += 1
            if !ok { rejected += 1 }
        }
        print("BlockCompressionTests fuzz: \(rejected) of \(total) payloads rejected")
        #expect(rejected > total / 2)
    }
}
