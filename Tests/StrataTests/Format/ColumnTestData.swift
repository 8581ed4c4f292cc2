import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Seeded series shared by the column codec tests.
enum ColumnTestData {
    /// The bytes `build` writes: a crafted column.
    static func column(_ build: (inout BitWriter) -> Void) -> [UInt8] {
        var writer = BitWriter()
        build(&writer)
        return writer.finish()
    }

    /// Millisecond timestamps one second apart from a 2023 epoch, each off by a jitter uniform in
    /// -2…2 ms (as scrape times are).
    static func timestamps(_ count: Int, seed: UInt64) -> [Int64] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { i in 1_700_000_000_000 + Int64(i) * 1000 + Int64(rng.below(5) - 2) }
    }

    /// A price-like random walk with two decimals: from 100.00, steps uniform in -0.50…0.50.
    static func walk(_ count: Int, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        var cents = 10_000
        return (0..<count).map { _ in
            cents += rng.below(101) - 50
            return Double(cents) / 100
        }
    }

    /// A smooth signal with noise, rounded to two decimals: 20 + 5·sin(t/60) + noise uniform in
    /// -0.05…0.05, t in seconds.
    static func sensor(_ count: Int, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { t in
            let noise = Double(rng.below(10_001) - 5_000) / 100_000
            let value = 20 + 5 * sin(Double(t) / 60) + noise
            return (value * 100).rounded() / 100
        }
    }

    /// Arbitrary bit patterns: every kind of Double, NaNs with payloads included.
    static func randomBits(_ count: Int, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in Double(bitPattern: rng.next()) }
    }

    /// Uniform doubles in 0..<1000 (full-precision mantissas).
    static func uniform(_ count: Int, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in Double.random(in: 0..<1000, using: &rng) }
    }

    static let edgeDoubles: [Double] = [
        0, -0.0, 1, -1, .nan, -.nan, .signalingNaN, Double(bitPattern: 0x7FF0_0000_0000_0001),
        Double(bitPattern: 0xFFF8_DEAD_BEEF_0001), .infinity, -.infinity, .greatestFiniteMagnitude,
        -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude,
        .ulpOfOne, 0.1, 0.2, 0.30000000000000004, 1e-300, 1e300, 4503599627370496, 4503599627370497,
        9_007_199_254_740_994, -9.223372036854776e18, 123.45, 123.45.nextUp, 123.45.nextDown,
    ]

    static let edgeIntegers: [Int64] = [
        0, .min, .max, -1, 1, .min + 1, .max - 1, 0, .max, .min, 1 << 32, -(1 << 32), 42, .min, .min,
    ]

    /// True when `body` throws `StrataError.corrupted`.
    static func throwsCorrupted(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return false
        } catch let error as StrataError {
            if case .corrupted = error { return true }
            return false
        } catch {
            return false
        }
    }

    /// True when `body` returns or throws `StrataError.corrupted` (for mutated input, which may
    /// still be a valid column).
    static func returnsOrThrowsCorrupted(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return true
        } catch let error as StrataError {
            if case .corrupted = error { return true }
            return false
        } catch {
            return false
        }
    }

    /// Every strict prefix of `bytes`.
    static func prefixes(_ bytes: [UInt8]) -> [[UInt8]] {
        (0..<bytes.count).map { Array(bytes[..<$0]) }
    }

    /// `count` copies of `bytes` with 1…3 random bits flipped or a random byte overwritten.
    static func mutations(_ bytes: [UInt8], count: Int, seed: UInt64) -> [[UInt8]] {
        guard !bytes.isEmpty else { return [] }
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            var copy = bytes
            if rng.chance(500) {
                copy[rng.below(copy.count)] = UInt8(truncatingIfNeeded: rng.next())
            } else {
                for _ in 0...rng.below(3) { copy[rng.below(copy.count)] ^= 1 << UInt8(rng.below(8)) }
            }
            return copy
        }
    }
}
