/// A cache-line-blocked bloom filter over whole keys, for point lookups in a segment
/// (FORMAT.md, "Filter block"). All probes of a key fall in one 64-byte line, so a lookup costs
/// one cache miss.
///
/// ```
/// filter := line[L] probes:u8          line := 64 bytes (512 bits)
/// ```
/// For a key with hash `h` (``KeyHash/hash64(_:)``): the line is `(h >> 32) % L`; with
/// `x = UInt32(h & 0xFFFFFFFF)` and `delta = (x >> 17) | (x << 15)` (a 32-bit rotation), probe `i`
/// sets bit `x_i & 511` of the line, where `x_0 = x` and `x_{i+1} = x_i + delta` (wrapping);
/// bit `b` is bit `b % 8` of the line's byte `b / 8`.
package struct BloomFilter {
    package static let lineBytes = 64

    /// Builds a filter for keys with the given hashes.
    package static func build(hashes: [UInt64], bitsPerKey: Int) -> [UInt8] {
        let lines = max(1, (hashes.count * bitsPerKey + 511) / 512)
        let probes = UInt8(clamping: max(1, min(30, Int((Double(bitsPerKey) * 0.69).rounded()))))
        var out = [UInt8](repeating: 0, count: lines * lineBytes + 1)
        out.withUnsafeMutableBytes { f in
            for h in hashes {
                let base = Int((h >> 32) % UInt64(lines)) * lineBytes
                var x = UInt32(truncatingIfNeeded: h)
                let delta = (x >> 17) | (x << 15)
                for _ in 0..<probes {
                    let bit = Int(x & 511)
                    f[base + bit / 8] |= 1 << (bit % 8)
                    x &+= delta
                }
            }
        }
        out[lines * lineBytes] = probes
        return out
    }

    /// Whether `hash` may be in the filter stored in `filter`. A malformed filter answers true
    /// (it can only cost a lookup, never hide a key).
    package static func mayContain(_ filter: UnsafeRawBufferPointer, hash h: UInt64) -> Bool {
        guard filter.count > lineBytes, (filter.count - 1) % lineBytes == 0 else { return true }
        let probes = filter[filter.count - 1]
        guard probes >= 1, probes <= 30 else { return true }
        let lines = (filter.count - 1) / lineBytes
        let base = Int((h >> 32) % UInt64(lines)) * lineBytes
        var x = UInt32(truncatingIfNeeded: h)
        let delta = (x >> 17) | (x << 15)
        for _ in 0..<probes {
            let bit = Int(x & 511)
            if filter[base + bit / 8] & (1 << (bit % 8)) == 0 { return false }
            x &+= delta
        }
        return true
    }

    package init() {
    }
}

/// The 64-bit key hash stored filters are built with (FORMAT.md, "Key hash"). Never change it.
package enum KeyHash {
    private static let k0: UInt64 = 0x9E37_79B9_7F4A_7C15
    private static let k1: UInt64 = 0x87C3_7B91_1142_53D5
    private static let k2: UInt64 = 0x4CF5_AD43_2745_937F

    @inline(__always)
    private static func mix(_ w: UInt64) -> UInt64 {
        var x = w &* k1
        x = (x << 31) | (x >> 33)
        return x &* k2
    }

    package static func hash64(_ key: UnsafeRawBufferPointer) -> UInt64 {
        var h = k0 ^ (UInt64(key.count) &* k0)
        var i = 0
        while i + 8 <= key.count {
            let w = UInt64(littleEndian: key.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            h = (h ^ mix(w)) &* k0
            h = (h << 27) | (h >> 37)
            i += 8
        }
        if i < key.count {
            var w: UInt64 = 0
            var shift: UInt64 = 0
            while i < key.count { w |= UInt64(key[i]) << shift; shift += 8; i += 1 }
            h = (h ^ mix(w)) &* k0
            h = (h << 27) | (h >> 37)
        }
        h ^= h >> 33; h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33; h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h
    }

    package static func hash64(_ key: [UInt8]) -> UInt64 { key.withUnsafeBytes { hash64($0) } }
}
