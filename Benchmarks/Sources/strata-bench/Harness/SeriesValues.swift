import Foundation

/// The values the ts-* workloads append, per series and sequence, for `--values` (``ValueShape``).
/// Generated once per run from `--seed`, so every engine stores (and every read is checked
/// against) the same values.
///
/// - `random`: `100 + ((series·7919 + sequence·104729) mod 100000) / 100`, values scattered over
///   100.00…1099.99 with two decimals and no correlation from one event to the next.
/// - `walk`: a random walk in cents from 100.00, each step ±0.01…±0.50 (uniform), reflected at
///   1.00 so it stays positive; stored as `cents / 100`, a price.
/// - `sensor`: `20 + 5·sin((sequence + 97·series) / 60) + N(0, 0.05)`, rounded to two decimals:
///   a slow signal sampled once per sequence, with measurement noise.
struct SeriesValues: Sendable {
    let shape: ValueShape
    /// Per series, its values in sequence order (empty for `random`, which is computed).
    private let table: [[Double]]

    /// The values of `series` series holding `lengths[s]` events each.
    init(shape: ValueShape, seed: UInt64, lengths: [Int]) {
        self.shape = shape
        guard shape != .random else { table = []; return }
        table = lengths.enumerated().map { s, length in
            var rng = XorShift64Star(seed: seed &+ 0x9E37_79B9_7F4A_7C15 &* UInt64(s + 1))
            var out = [Double]()
            out.reserveCapacity(length)
            switch shape {
            case .random:
                break
            case .walk:
                var cents = 10_000
                for _ in 0..<length {
                    out.append(Double(cents) / 100)
                    let step = 1 + rng.below(50)
                    cents += rng.next() & 1 == 0 ? step : -step
                    if cents < 100 { cents = 200 - cents }
                }
            case .sensor:
                for i in 0..<length {
                    let t = Double(i + 97 * s)
                    let signal = 20 + 5 * sin(t / 60) + 0.05 * Self.gaussian(&rng)
                    out.append((signal * 100).rounded() / 100)
                }
            }
            return out
        }
    }

    /// The values of the events `ts-*` appends for `config` (`count` events, `batch` per write,
    /// round-robin over the series).
    init(config: BenchConfig, count: Int) {
        self.init(shape: config.values, seed: config.seed,
                  lengths: Self.lengths(count: count, series: config.series, batch: config.batch))
    }

    /// The events per series after `count` events are appended `batch` per write, round-robin.
    static func lengths(count: Int, series: Int, batch: Int) -> [Int] {
        var lengths = [Int](repeating: 0, count: series)
        var written = 0, op = 0
        while written < count {
            let n = min(batch, count - written)
            lengths[op % series] += n
            written += n
            op += 1
        }
        return lengths
    }

    /// The value of event `sequence` of `series`.
    @inline(__always) func value(series: Int, sequence: UInt64) -> Double {
        switch shape {
        case .random: 100 + Double((UInt64(series) &* 7919 &+ sequence &* 104_729) % 100_000) / 100
        case .walk, .sensor: table[series][Int(sequence)]
        }
    }

    /// A standard normal sample (Box–Muller).
    private static func gaussian(_ rng: inout XorShift64Star) -> Double {
        let u1 = (Double(rng.next() >> 11) + 1) * 0x1p-53  // (0, 1]
        let u2 = Double(rng.next() >> 11) * 0x1p-53
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}
