/// A bloom filter over whole keys, for point lookups in a segment (FORMAT.md, "Filter block").
///
/// ```
/// filter := bits[m / 8] | probes:u8
/// ```
/// Probe `i` of a key sets bit `(h1 + i * h2) mod m` where `h1`/`h2` are the low and high 32 bits
/// of ``KeyHash/hash64(_:)``; bit `b` is bit `b % 8` of byte `b / 8`.
struct BloomFilter {
    /// Builds a filter for keys with the given hashes.
    static func build(hashes: [UInt64], bitsPerKey: Int) -> [UInt8] {
        let bits = max(64, hashes.count * bitsPerKey)
        let bytes = (bits + 7) / 8
        let m = UInt64(bytes * 8)
        let probes = UInt8(clamping: max(1, min(30, Int((Double(bitsPerKey) * 0.69).rounded()))))
        var out = [UInt8](repeating: 0, count: bytes + 1)
        for h in hashes {
            let h1 = h & 0xFFFF_FFFF, h2 = h >> 32
            for i in 0..<UInt64(probes) {
                let bit = (h1 &+ i &* h2) % m
                out[Int(bit / 8)] |= 1 << (bit % 8)
            }
        }
        out[bytes] = probes
        return out
    }

    /// Whether `hash` may be in the filter stored in `filter`. A malformed filter answers true
    /// (it can only cost a lookup, never hide a key).
    static func mayContain(_ filter: UnsafeRawBufferPointer, hash h: UInt64) -> Bool {
        guard filter.count >= 2 else { return true }
        let probes = UInt64(filter[filter.count - 1])
        guard probes >= 1, probes <= 30 else { return true }
        let m = UInt64((filter.count - 1) * 8)
        let h1 = h & 0xFFFF_FFFF, h2 = h >> 32
        for i in 0..<probes {
            let bit = (h1 &+ i &* h2) % m
            if filter[Int(bit / 8)] & (1 << (bit % 8)) == 0 { return false }
        }
        return true
    }
}

/// The 64-bit key hash stored filters are built with (FORMAT.md, "Key hash"). Never change it.
enum KeyHash {
    private static let k0: UInt64 = 0x9E37_79B9_7F4A_7C15
    private static let k1: UInt64 = 0x87C3_7B91_1142_53D5
    private static let k2: UInt64 = 0x4CF5_AD43_2745_937F

    @inline(__always)
    private static func mix(_ w: UInt64) -> UInt64 {
        var x = w &* k1
        x = (x << 31) | (x >> 33)
        return x &* k2
    }

    static func hash64(_ key: UnsafeRawBufferPointer) -> UInt64 {
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

    static func hash64(_ key: [UInt8]) -> UInt64 { key.withUnsafeBytes { hash64($0) } }
}
