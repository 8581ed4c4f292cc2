/// Random ids of replication (a message's upload id, a series' writer id): bytes from the
/// system's generator, eight per call (one `getrandom` each on Linux, not one per byte).
enum RandomID {
    /// `count` random bytes. REQUIRES: `count` is a multiple of 8.
    static func bytes(_ count: Int, using generator: inout SystemRandomNumberGenerator) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for _ in 0..<(count / 8) {
            var word = generator.next()
            for _ in 0..<8 {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }
}
