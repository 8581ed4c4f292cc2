import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The storage budget for settled `Double` events, met by the codecs alone: one chunk of
/// 1,000 events, a timestamp column (1 s spacing, ±2 ms jitter) and a value column. Measured on
/// seeds 1…3: timestamps 3.8–3.9 bits, walk values about 7 bits (ALP, no exception, delta
/// packing), sensor values about 6 bits — under 1.4 and 1.3 bytes an event. Whole chunk records
/// of the bench's value shapes: SeriesChunkBudgetTests.
@Suite struct ColumnBudgetTests {
    static func bytesPerEvent(_ values: [Double], _ timestamps: [Int64]) throws -> Double {
        let valueBytes = try DoubleColumn.encode(values).count
        let timestampBytes = try TimestampColumn.encode(timestamps).count
        return Double(valueBytes + timestampBytes) / Double(values.count)
    }

    @Test func walkFitsTwoBytesAnEvent() throws {
        for seed in UInt64(1)...5 {
            let perEvent = try Self.bytesPerEvent(ColumnTestData.walk(1000, seed: seed), ColumnTestData.timestamps(1000, seed: seed))
            #expect(perEvent <= 2.0, "walk seed \(seed): \(perEvent) bytes an event")
        }
    }

    @Test func jitteredTimestampsTakeUnderFiveBits() throws {
        for seed in UInt64(1)...5 {
            let bits = try TimestampColumn.encode(ColumnTestData.timestamps(1000, seed: seed)).count * 8
            #expect(bits <= 5 * 1000, "timestamps seed \(seed): \(bits) bits for 1000")
        }
    }

    @Test func sensorFitsOneAndAHalfBytesAnEvent() throws {
        for seed in UInt64(1)...5 {
            let perEvent = try Self.bytesPerEvent(ColumnTestData.sensor(1000, seed: seed), ColumnTestData.timestamps(1000, seed: seed))
            #expect(perEvent <= 1.5, "sensor seed \(seed): \(perEvent) bytes an event")
        }
    }
}

