import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A point in time in 100-nanosecond units since the Unix epoch (17 decimal digits today): the
/// identity and the order of a message in a ``Channel``.
///
/// The store assigns one to every published message. Timetokens it assigns are unique and strictly
/// increasing across all channels of the store — also when the system clock goes back, when two
/// messages are published within the same 100 ns, and across a reopen — so a timetoken is also a
/// cursor for paging and counting.
///
/// ```swift
/// let tt = try room.publish(["text": "hello"])
/// print(tt, tt.date)                                        // 17218459036160000 2024-07-24 …
/// try room.deleteMessages(start: tt - 1, end: tt)           // deletes exactly that message
/// let since = Timetoken(date: Date().addingTimeInterval(-3600))
/// let lastHour = try room.messageCount(since: since)
/// ```
///
/// Arithmetic with `+` and `-` saturates at 0 and `UInt64.max` instead of trapping.
public struct Timetoken: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The number of 100-ns units since 1970-01-01T00:00:00Z.
    public let rawValue: UInt64

    /// A timetoken from its raw value.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// A timetoken from its raw value.
    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The timetoken of `date`, rounded down to 100 ns; dates before 1970 give 0, dates past the
    /// year 60,000 or so give `UInt64.max`.
    public init(date: Date) {
        let units = date.timeIntervalSince1970 * Self.unitsPerSecond
        if !(units > 0) {
            rawValue = 0
        } else if units >= 18_446_744_073_709_549_568 {  // the largest Double below 2^64
            rawValue = .max
        } else {
            rawValue = UInt64(units)
        }
    }

    /// The time of the timetoken (to the precision of `Date`, about a microsecond today).
    public var date: Date {
        Date(timeIntervalSince1970: Double(rawValue) / Self.unitsPerSecond)
    }

    /// 100-ns units per second.
    package static let unitsPerSecond: Double = 10_000_000

    /// The smallest timetoken.
    public static let zero = Timetoken(0)

    public static func < (lhs: Timetoken, rhs: Timetoken) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `lhs` moved `rhs` units (100 ns each) later, saturating at `UInt64.max`.
    public static func + (lhs: Timetoken, rhs: UInt64) -> Timetoken {
        let (sum, overflow) = lhs.rawValue.addingReportingOverflow(rhs)
        return Timetoken(overflow ? .max : sum)
    }

    /// `lhs` moved `rhs` units (100 ns each) earlier, saturating at 0.
    public static func - (lhs: Timetoken, rhs: UInt64) -> Timetoken {
        Timetoken(lhs.rawValue >= rhs ? lhs.rawValue - rhs : 0)
    }

    /// The raw value in decimal, as PubNub prints timetokens.
    public var description: String { String(rawValue) }

    /// Decodes the raw value as a single unsigned integer.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    /// Encodes the raw value as a single unsigned integer.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// `duration` in 100-ns units (rounded down, saturating); nil for a duration that is not positive.
    static func units(of duration: Duration) -> UInt64? {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || (seconds == 0 && attoseconds >= 100_000_000_000) else { return nil }
        let whole = UInt64(seconds).multipliedReportingOverflow(by: 10_000_000)
        if whole.overflow { return .max }
        let (sum, overflow) = whole.partialValue.addingReportingOverflow(UInt64(attoseconds / 100_000_000_000))
        return overflow ? .max : sum
    }
}
