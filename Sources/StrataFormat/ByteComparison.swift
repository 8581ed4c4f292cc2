import CStrataSupport

/// The one key order of every file: unsigned byte-wise lexicographic, a prefix first.
@_spi(Layers) public enum ByteComparison {
    /// `memcmp`: negative, zero or positive as `a` sorts before, equal to or after `b`.
    ///
    /// REQUIRES: `a` and `b` each point to at least `count` readable bytes.
    @inlinable @inline(__always)
    package static func compareMemory(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Int32 {
        strata_compare_memory(a, b, count)
    }

    @inlinable @inline(__always)
    package static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            if n > 64 {
                let c = compareMemory(pa, pb, count: n)
                if c != 0 { return c < 0 ? -1 : 1 }
            } else {
                // Short keys (the common case): eight bytes at a time, compared as big-endian words.
                var i = 0
                while i + 8 <= n {
                    let x = UInt64(bigEndian: pa.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                    let y = UInt64(bigEndian: pb.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                    if x != y { return x < y ? -1 : 1 }
                    i += 8
                }
                while i < n {
                    let x = pa.load(fromByteOffset: i, as: UInt8.self), y = pb.load(fromByteOffset: i, as: UInt8.self)
                    if x != y { return x < y ? -1 : 1 }
                    i += 1
                }
            }
        }
        return a.count < b.count ? -1 : (a.count > b.count ? 1 : 0)
    }

    @inlinable @inline(__always)
    package static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in compare(pa, pb) } }
    }

    @inlinable @inline(__always)
    package static func compare(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Int {
        a.withUnsafeBytes { pa in compare(pa, b) }
    }

    /// The length of the common prefix of `a` and `b`.
    @inlinable @inline(__always)
    package static func sharedPrefixLength(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        var i = 0
        while i + 8 <= n {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                break
            }
            i += 8
        }
        while i < n && a[i] == b[i] { i += 1 }
        return i
    }
}
