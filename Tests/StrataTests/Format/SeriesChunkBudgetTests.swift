import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Issue 15's budget for settled `Double` events — ≤ 3 bytes an event on `random`, ≤ 2 on `walk`,
/// ≤ 1.5 on `sensor` — met by whole chunk records of 512 events: values shaped as the bench's
/// `--values` (Benchmarks/…/SeriesValues.swift, regenerated here with the same formulas and
/// distributions), timestamps as `ts-append` stamps them (appends of 1,000 events, one clock
/// reading each, 100 series taking turns) and, harder, one sample a second with ±2 ms jitter.
@Suite struct SeriesChunkBudgetTests {
    static let chunkEvents = 512

    /// `random`: `100 + ((series·7919 + sequence·104729) mod 100000) / 100`.
    static func random(_ count: Int, series: Int) -> [Double] {
        (0..<count).map { i in 100 + Double((UInt64(series) &* 7919 &+ UInt64(i) &* 104_729) % 100_000) / 100 }
    }

    /// `walk`: cents from 100.00, steps ±1…50 uniform, reflected at 1.00.
    static func walk(_ count: Int, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        var cents = 10_000
        return (0..<count).map { _ in
            let value = Double(cents) / 100
            let step = 1 + rng.below(50)
            cents += rng.next() & 1 == 0 ? step : -step
            if cents < 100 { cents = 200 - cents }
            return value
        }
    }

    /// `sensor`: `20 + 5·sin((i + 97·series)/60) + N(0, 0.05)`, two decimals.
    static func sensor(_ count: Int, series: Int, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { i in
            let u1 = (Double(rng.next() >> 11) + 1) * 0x1p-53
            let u2 = Double(rng.next() >> 11) * 0x1p-53
            let noise = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
            let signal = 20 + 5 * sin(Double(i + 97 * series) / 60) + 0.05 * noise
            return (signal * 100).rounded() / 100
        }
    }

    /// ts-append's stamps, relative to the series' base: 1,000 events an append at one clock
    /// reading, the series' next append 100 appends (about 33 ms at 3 M events/s) later.
    static func appendTimestamps(_ count: Int) -> [UInt64] {
        (0..<count).map { UInt64($0 / 1_000 * 33) }
    }

    /// One sample a second, each off by -2…2 ms.
    static func sampledTimestamps(_ count: Int, seed: UInt64) -> [UInt64] {
        ColumnTestData.timestamps(count, seed: seed).map { UInt64($0 - 1_700_000_000_000 + 2) }
    }

    /// The bytes an event of `values` takes in chunk records of 512 events.
    static func bytesPerEvent(_ values: [Double], timestamps: [UInt64]) throws -> Double {
        var bytes = 0
        var start = 0
        while start < values.count {
            let end = min(start + chunkEvents, values.count)
            let n = end - start
            let chunk = SeriesChunk(firstSequence: UInt64(start), timestamps: Array(timestamps[start..<end]),
                                    authors: Array(repeating: 0, count: n), originals: Array(repeating: nil, count: n),
                                    values: .doubles(Array(values[start..<end])))
            let record = try chunk.encode()
            guard case .doubles(let back) = try SeriesChunk.decode(record).values, back == Array(values[start..<end]) else {
                throw StrataError.invalidArgument(argument: "test", reason: "chunk at \(start) does not round-trip")
            }
            bytes += record.count
            start = end
        }
        return Double(bytes) / Double(values.count)
    }

    static let events = 20 * chunkEvents

    @Test("random: at most 3 bytes an event", arguments: [0, 1, 57])
    func random(series: Int) throws {
        let values = Self.random(Self.events, series: series)
        let appended = try Self.bytesPerEvent(values, timestamps: Self.appendTimestamps(Self.events))
        let sampled = try Self.bytesPerEvent(values, timestamps: Self.sampledTimestamps(Self.events, seed: UInt64(series)))
        #expect(appended <= 3, "random, series \(series), appended: \(appended) bytes an event")
        #expect(sampled <= 3, "random, series \(series), sampled: \(sampled) bytes an event")
    }

    @Test("walk: at most 2 bytes an event", arguments: [1, 2, 3])
    func walk(seed: UInt64) throws {
        let values = Self.walk(Self.events, seed: seed)
        let appended = try Self.bytesPerEvent(values, timestamps: Self.appendTimestamps(Self.events))
        let sampled = try Self.bytesPerEvent(values, timestamps: Self.sampledTimestamps(Self.events, seed: seed))
        #expect(appended <= 2, "walk, seed \(seed), appended: \(appended) bytes an event")
        #expect(sampled <= 2, "walk, seed \(seed), sampled: \(sampled) bytes an event")
    }

    @Test("sensor: at most 1.5 bytes an event", arguments: [1, 2, 3])
    func sensor(seed: UInt64) throws {
        let values = Self.sensor(Self.events, series: Int(seed), seed: seed)
        let appended = try Self.bytesPerEvent(values, timestamps: Self.appendTimestamps(Self.events))
        let sampled = try Self.bytesPerEvent(values, timestamps: Self.sampledTimestamps(Self.events, seed: seed))
        #expect(appended <= 1.5, "sensor, seed \(seed), appended: \(appended) bytes an event")
        #expect(sampled <= 1.5, "sensor, seed \(seed), sampled: \(sampled) bytes an event")
    }
}
