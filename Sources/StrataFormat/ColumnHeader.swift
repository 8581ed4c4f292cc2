/// The encoding of a column, the first byte of every encoded column. Numbers never change; a
/// retired number stays reserved.
package enum ColumnEncoding: UInt8, Sendable {
    /// ``IntegerColumn``: ``PackedIntegers`` of `Int64` values.
    case integerPacked = 1
    /// ``TimestampColumn``: Gorilla-style delta-of-delta (or delta) residuals in variable-width buckets.
    case timestampBuckets = 2
    /// ``DoubleColumn``: ALP, doubles as scaled integers plus exceptions.
    case doubleALP = 3
    /// ``DoubleColumn``: Gorilla XOR of consecutive bit patterns.
    case doubleXOR = 4
}

/// The header every column starts with, telling a decoder what it reads:
///
///     encoding  8 bits    ColumnEncoding raw value
///     count     varint    number of values, ≤ maximumCount
///
/// The encoding's own parameters follow (see each column type). The header is written through a
/// ``BitWriter``, so it starts byte-aligned only when the column does.
package struct ColumnHeader: Equatable, Sendable {
    /// The most values a column holds. Columns are meant for chunks of a few hundred events; the
    /// cap bounds what a decoder allocates for a crafted count whose values take zero bits each.
    package static let maximumCount = 1 << 16

    package var encoding: ColumnEncoding
    package var count: Int

    package func write(to writer: inout BitWriter) {
        writer.write(UInt64(encoding.rawValue), bits: 8)
        writer.writeVarint(UInt64(count))
    }

    /// Reads a header, checking the encoding is `expected` (or `alternative`) and the count is in range.
    package static func read(from reader: inout BitReader, what: String, expected: ColumnEncoding,
                     or alternative: ColumnEncoding? = nil) throws -> ColumnHeader {
        guard let tag = reader.read(bits: 8) else { throw ColumnHeader.truncated(what, reader) }
        guard let encoding = ColumnEncoding(rawValue: UInt8(truncatingIfNeeded: tag)), encoding == expected || encoding == alternative else {
            throw StrataError.corrupted(file: what, offset: reader.byteOffset, reason: "unknown column encoding \(tag)")
        }
        guard let count = reader.readVarint() else { throw ColumnHeader.truncated(what, reader) }
        guard count <= UInt64(maximumCount) else {
            throw StrataError.corrupted(file: what, offset: reader.byteOffset,
                                        reason: "column count \(count) over the maximum \(maximumCount)")
        }
        return ColumnHeader(encoding: encoding, count: Int(count))
    }

    /// Reads a header as ``read(from:what:expected:or:)`` does, and checks it holds `count` values.
    package static func read(from reader: inout ColumnReader, what: String, count: Int, expected: ColumnEncoding,
                     or alternative: ColumnEncoding? = nil) throws -> ColumnEncoding {
        guard let tag = reader.read(bits: 8) else { throw truncated(what, reader) }
        guard let encoding = ColumnEncoding(rawValue: UInt8(truncatingIfNeeded: tag)), encoding == expected || encoding == alternative else {
            throw StrataError.corrupted(file: what, offset: reader.byteOffset, reason: "unknown column encoding \(tag)")
        }
        guard let found = reader.readVarint() else { throw truncated(what, reader) }
        guard found == UInt64(count) else {
            throw StrataError.corrupted(file: what, offset: reader.byteOffset, reason: "\(found) values where \(count) were expected")
        }
        return encoding
    }

    /// Throws `.invalidArgument` when `count` values cannot form one column.
    package static func checkEncodable(count: Int, what: String) throws {
        guard count <= maximumCount else {
            throw StrataError.invalidArgument(argument: what, reason: "\(what): \(count) values, at most \(maximumCount) fit one column")
        }
    }

    /// The error for input that ends early.
    package static func truncated(_ what: String, _ reader: BitReader) -> StrataError {
        StrataError.corrupted(file: what, offset: reader.byteOffset, reason: "column truncated")
    }

    /// The error for input that ends early.
    package static func truncated(_ what: String, _ reader: ColumnReader) -> StrataError {
        StrataError.corrupted(file: what, offset: reader.byteOffset, reason: "column truncated")
    }

    /// The error for an inconsistent field.
    package static func corrupted(_ what: String, _ reader: ColumnReader, _ reason: String) -> StrataError {
        StrataError.corrupted(file: what, offset: reader.byteOffset, reason: reason)
    }

    /// The error for an inconsistent field.
    package static func corrupted(_ what: String, _ reader: BitReader, _ reason: String) -> StrataError {
        StrataError.corrupted(file: what, offset: reader.byteOffset, reason: reason)
    }

    package init(encoding: ColumnEncoding, count: Int) {
        self.encoding = encoding
        self.count = count
    }
}
