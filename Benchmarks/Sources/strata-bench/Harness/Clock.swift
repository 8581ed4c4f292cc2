import Foundation

/// The monotonic clock, in nanoseconds.
enum Clock {
    @inline(__always) static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Seconds taken by `body`.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = nanoseconds()
        try body()
        return Double(nanoseconds() - start) / 1e9
    }
}

/// xorshift64*, the generator of Scripts/perf (seeded by `--seed`; a zero seed is replaced).
struct XorShift64Star {
    private var x: UInt64

    init(seed: UInt64) {
        x = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
    }

    @inline(__always) mutating func next() -> UInt64 {
        x ^= x >> 12
        x ^= x << 25
        x ^= x >> 27
        return x &* 0x2545_F491_4F6C_DD1D
    }

    /// A uniform-enough value in 0..<n (n > 0).
    @inline(__always) mutating func below(_ n: Int) -> Int {
        Int(next() % UInt64(n))
    }
}
