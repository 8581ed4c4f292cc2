import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Stored times as the tools print them: milliseconds since 1970 as an `Int64`. A stored time
/// can be any bit pattern — a `Double` that is NaN or infinite, or milliseconds so near the
/// `Int64` limits that the round trip through `Date` leaves them — and a tool reading hostile
/// files reports it, never traps on the conversion.
enum InspectedTime {
    /// `date` in milliseconds since 1970, clamped to the `Int64` range (a stored 2⁶³ − 1 ms reads
    /// back as itself, not as the 2⁶³ its `Double` rounds to). A NaN or infinite date is
    /// corruption of `what`.
    static func milliseconds(_ date: Date, _ what: @autoclosure () -> String) throws -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        guard ms.isFinite else {
            throw StrataError.corrupted(file: what(), offset: 0, reason: "stored time \(date.timeIntervalSince1970) s is not a finite number")
        }
        if ms >= 9_223_372_036_854_775_807.0 { return .max }
        if ms <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(ms)
    }
}
