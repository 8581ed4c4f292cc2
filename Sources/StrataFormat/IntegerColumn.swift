/// A column of `Int64` values: delta (or plain) frame-of-reference bit-packing, with zigzag
/// varints for the signed header fields. Layout:
///
///     header    ColumnHeader, encoding .integerPacked
///     body      PackedIntegers of the values
///
/// Sorted or slowly changing values (sequence numbers, counters) pack as their deltas; values
/// that jump around pack against their minimum. Any Int64 input round-trips.
package enum IntegerColumn {
    package static let what = "integer column"

    /// Appends the column for `values` to `writer`. Throws `.invalidArgument` over
    /// ``ColumnHeader/maximumCount`` values.
    package static func encode(_ values: [Int64], to writer: inout BitWriter) throws {
        try ColumnHeader.checkEncodable(count: values.count, what: what)
        ColumnHeader(encoding: .integerPacked, count: values.count).write(to: &writer)
        values.withUnsafeBufferPointer { PackedIntegers.write($0, to: &writer) }
    }

    /// The column for `values` as bytes.
    package static func encode(_ values: [Int64]) throws -> [UInt8] {
        var writer = BitWriter(capacity: values.count + 16)
        try encode(values, to: &writer)
        return writer.finish()
    }

    /// Reads a column and appends its values to `values`, through the fast decoder. Throws
    /// `.corrupted` on any malformed input; `values` is then as it was.
    package static func decode(from reader: inout BitReader, into values: inout [Int64]) throws {
        let count = try reader.peekHeader(what: what, expected: .integerPacked).count
        try reader.appendColumn(count: count, zero: 0, to: &values) { r, out in try decode(from: &r, count: count, into: out) }
    }

    /// Reads the column at the start of `bytes` and appends its values to `values`.
    package static func decode(_ bytes: [UInt8], into values: inout [Int64]) throws {
        var reader = BitReader(bytes)
        try decode(from: &reader, into: &values)
    }
}

extension IntegerColumn {
    /// Reads a column of exactly `count` values into `out[0..<count]`, with the checks of
    /// ``decode(from:into:)``.
    package static func decode(from reader: inout ColumnReader, count: Int, into out: UnsafeMutablePointer<Int64>) throws {
        _ = try ColumnHeader.read(from: &reader, what: what, count: count, expected: .integerPacked)
        try PackedIntegers.unpack(count: count, from: &reader, what: what) { i, v in out[i] = v }
    }
}
