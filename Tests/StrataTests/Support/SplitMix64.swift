/// SplitMix64 (Steele, Lea, Flood 2014): the seeded generator of every randomized test, tiny, fast
/// and deterministic for a given seed, so a failure reproduces from its seed.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private(set) var state: UInt64

    init(seed: UInt64) { state = seed }

    init(state: UInt64) { self.state = state }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (the modulo bias is irrelevant here).
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// True with probability `perMille / 1000`.
    mutating func chance(_ perMille: Int) -> Bool { below(1000) < perMille }
}
