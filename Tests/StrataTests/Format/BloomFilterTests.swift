import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

private func mayContain(_ filter: [UInt8], _ key: [UInt8]) -> Bool {
    filter.withUnsafeBytes { BloomFilter.mayContain($0, hash: KeyHash.hash64(key)) }
}

/// Keys shaped like the store's: a keyspace prefix, then a decimal id.
private func key(_ group: String, _ i: Int) -> [UInt8] { Keyspace(id: 7).prefix + Array("\(group)/\(i)".utf8) }

@Suite struct BloomFilterTests {
    @Test func noFalseNegatives() {
        let keys = (0..<10_000).map { key("present", $0) }
        for bitsPerKey in [1, 4, 10, 20] {
            let filter = BloomFilter.build(hashes: keys.map { KeyHash.hash64($0) }, bitsPerKey: bitsPerKey)
            let missing = keys.filter { !mayContain(filter, $0) }
            #expect(missing.isEmpty, "\(missing.count) false negatives at \(bitsPerKey) bits/key")
        }
    }

    @Test func falsePositiveRateAtTenBitsPerKey() {
        let keys = (0..<10_000).map { key("present", $0) }
        let filter = BloomFilter.build(hashes: keys.map { KeyHash.hash64($0) }, bitsPerKey: 10)
        var positives = 0
        for i in 0..<100_000 where mayContain(filter, key("absent", i)) { positives += 1 }
        let rate = Double(positives) / 100_000
        print("BloomFilter false-positive rate at 10 bits/key: \(rate * 100)%")
        #expect(rate < 0.02, "false-positive rate \(rate)")
    }

    @Test func layout() {
        // One 64-byte line per 512 bits (at least one line), plus one byte of probes.
        #expect(BloomFilter.build(hashes: [], bitsPerKey: 10).count == 64 + 1)
        #expect(BloomFilter.build(hashes: [1], bitsPerKey: 10).count == 64 + 1)
        #expect(BloomFilter.build(hashes: Array(repeating: 1, count: 51), bitsPerKey: 10).count == 64 + 1)
        #expect(BloomFilter.build(hashes: Array(repeating: 1, count: 52), bitsPerKey: 10).count == 128 + 1)
        #expect(BloomFilter.build(hashes: Array(repeating: 1, count: 10_000), bitsPerKey: 10).count == 196 * 64 + 1)
        // probes = round(bitsPerKey * 0.69), within 1…30.
        for (bitsPerKey, probes) in [(1, 1), (2, 1), (3, 2), (10, 7), (20, 14), (32, 22), (50, 30), (100, 30)] {
            #expect(BloomFilter.build(hashes: [42], bitsPerKey: bitsPerKey).last == UInt8(probes), "\(bitsPerKey) bits/key")
        }
        #expect(BloomFilter.build(hashes: [], bitsPerKey: 10).dropLast().allSatisfy { $0 == 0 })
    }

    /// The bits a key sets, worked out by hand from FORMAT.md "Filter block".
    @Test func bitPositionsFollowTheSpec() {
        // x = 0x00600003: delta = (x >> 17) | (x << 15) = 0x00018030, whose low nine bits are 48,
        // so probe i sets bit 3 + 48 i of the line: bytes 0, 6, 12, 18, … each get 0x08.
        let x: UInt64 = 0x0060_0003
        let one = BloomFilter.build(hashes: [x], bitsPerKey: 3)  // one line, 2 probes
        var expected = [UInt8](repeating: 0, count: 64)
        expected[0] = 0x08
        expected[6] = 0x08
        #expect(Array(one.dropLast()) == expected)
        #expect(one.last == 2)

        // Two lines (52 keys × 10 bits > 512); the high half 1 selects line 1; 7 probes.
        let two = BloomFilter.build(hashes: Array(repeating: (1 << 32) | x, count: 52), bitsPerKey: 10)
        expected = [UInt8](repeating: 0, count: 128)
        for i in 0..<7 { expected[64 + (3 + 48 * i) / 8] = 0x08 }
        #expect(Array(two.dropLast()) == expected)
        #expect(two.last == 7)
    }

    /// An independent rendering of the spec, compared byte for byte on random hashes.
    @Test func matchesTheSpecOnRandomHashes() {
        var rng = SplitMix64(seed: 0xB100_0003)
        for (count, bitsPerKey) in [(1, 10), (50, 10), (1000, 10), (777, 3), (300, 32)] {
            let hashes = (0..<count).map { _ in rng.next() }
            let lines = max(1, (count * bitsPerKey + 511) / 512)
            let probes = max(1, min(30, Int((Double(bitsPerKey) * 0.69).rounded())))
            var expected = [UInt8](repeating: 0, count: lines * 64)
            for h in hashes {
                let line = Int((h >> 32) % UInt64(lines))
                var xi = UInt32(truncatingIfNeeded: h)
                let delta = (xi >> 17) | (xi << 15)  // rotate right by 17
                for _ in 0..<probes {
                    let bit = Int(xi % 512)
                    expected[line * 64 + bit / 8] |= UInt8(1) << UInt8(bit % 8)
                    xi = xi &+ delta
                }
            }
            expected.append(UInt8(probes))
            #expect(BloomFilter.build(hashes: hashes, bitsPerKey: bitsPerKey) == expected, "\(count) keys at \(bitsPerKey) bits/key")
        }
    }

    @Test func malformedFiltersAnswerTrue() {
        var rng = SplitMix64(seed: 0xB100_0001)
        let hashes = (0..<100).map { _ in rng.next() }
        // Every bit clear: a well-formed filter says "absent" to everything.
        var zeros = [UInt8](repeating: 0, count: 128)
        zeros.append(7)
        #expect(hashes.allSatisfy { h in !zeros.withUnsafeBytes { BloomFilter.mayContain($0, hash: h) } })
        for probes: UInt8 in [0, 31, 100, 255] {
            zeros[zeros.count - 1] = probes
            #expect(hashes.allSatisfy { h in zeros.withUnsafeBytes { BloomFilter.mayContain($0, hash: h) } },
                    "probes \(probes)")
        }
        // Too short, or not a whole number of lines.
        for bytes: [UInt8] in [[], [7], [UInt8](repeating: 0, count: 64), [UInt8](repeating: 0, count: 64) + [0, 7],
                               [UInt8](repeating: 0, count: 100) + [7]] {
            #expect(hashes.allSatisfy { h in bytes.withUnsafeBytes { BloomFilter.mayContain($0, hash: h) } },
                    "\(bytes.count)-byte filter")
        }
        #expect(BloomFilter.mayContain(UnsafeRawBufferPointer(start: nil, count: 0), hash: 1))
    }

    /// The key hash is part of the on-disk format (every stored filter is built with it): these
    /// values were computed independently from the algorithm of FORMAT.md "Key hash" and pinned.
    @Test func keyHashGoldenValues() {
        let golden: [([UInt8], UInt64)] = [
            ([], 0x9CA0_66F1_A4AB_2EEA),
            (Array("a".utf8), 0x66EB_6F40_82CE_48FD),
            (Array("abcdefgh".utf8), 0x7867_861C_BF75_F235),
            (Array("hello, world".utf8), 0x386B_97AB_9129_A642),
            ((0..<32).map { UInt8($0) }, 0x46E8_5259_057E_C382),
            ([UInt8](repeating: 0xFF, count: 9), 0x7B62_5822_B37D_337B),
            ([0x00, 0x00], 0xD902_D829_CE59_220A),
        ]
        for (key, hash) in golden {
            #expect(KeyHash.hash64(key) == hash, "hash of \(key)")
            #expect(key.withUnsafeBytes { KeyHash.hash64($0) } == hash)
        }
    }

    @Test func keyHashIsStableAcrossAlignmentsAndSensitiveToLength() {
        var rng = SplitMix64(seed: 0xB100_0002)
        let bytes = (0..<41).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let expected = KeyHash.hash64(bytes)
        for shift in 1..<8 {
            let padded = [UInt8](repeating: 0xEE, count: shift) + bytes
            let h = padded.withUnsafeBytes { KeyHash.hash64(UnsafeRawBufferPointer(rebasing: $0[shift...])) }
            #expect(h == expected, "shift \(shift)")
        }
        // Trailing zero bytes change the hash (the length is mixed in).
        var seen = Set<UInt64>()
        for n in 0..<20 { seen.insert(KeyHash.hash64([UInt8](repeating: 0, count: n))) }
        #expect(seen.count == 20)
        // Distinct keys, distinct hashes (no collisions expected among 100,000 64-bit hashes).
        var hashes = Set<UInt64>()
        for i in 0..<100_000 { hashes.insert(KeyHash.hash64(key("k", i))) }
        #expect(hashes.count == 100_000)
    }
}
