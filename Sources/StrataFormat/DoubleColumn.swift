/// A column of `Double` values, lossless bit for bit (NaN payloads, -0.0 and infinities
/// included), in one of two encodings chosen per column:
///
/// **ALP** (Afroozeh, Kuffó, Boncz, SIGMOD 2024) for decimals in disguise — prices, sensor
/// readings with a fixed number of decimals. For an exponent e and factor f (0 ≤ f ≤ e ≤ 18), a
/// value d encodes as n = round(d × 10^e / 10^f) when (n × 10^f) / 10^e gives back d's exact bit
/// pattern; the encoder samples the column for the pair with the smallest estimated size. Values
/// that do not round-trip (NaN, ±inf, -0.0, too many digits, |n| > 2^52, a sum that rounded twice)
/// are exceptions, kept as position + correction: the difference of their bit pattern from that
/// of their slot's decoded integer. A slot holds the value's own rounded integer when that leaves
/// a correction of at most 16 bits (a value an ulp or two off a decimal), else the previous
/// integer so the packing stays narrow.
///
///     header      ColumnHeader, encoding .doubleALP
///     e           5 bits  0…18
///     f           5 bits  0…e
///     exceptions  varint  ≤ count
///     integers    PackedIntegers of the count integers n (plain or delta FOR)
///     width       7 bits  W, 0…64, only when exceptions > 0
///     exception × exceptions: position (bit width of count - 1 bits, strictly increasing),
///                             correction (W bits, two's complement): bits = slot's bits &+ it
///
/// **XOR** (Gorilla, VLDB 2015), the fallback when ALP does not pay (random doubles):
///
///     header      ColumnHeader, encoding .doubleXOR
///     first       64 bits, the first bit pattern
///     each next   x = bits ^ previous bits
///                 '0'                    x = 0
///                 '10'  + meaningful     x's set bits lie within the previous window
///                                        (leading ≥ L, trailing ≥ T): 64 - L - T bits
///                 '11'  + 5 bits L (leading zeros, ≤ 31) + 6 bits (meaningful count - 1)
///                       + meaningful bits; this sets the window (L, T = 64 - L - count)
package enum DoubleColumn {
    package static let what = "double column"

    /// 10^0 … 10^18, exact in a Double.
    package static let powers: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
        1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    ]
    package static let maximumExponent = 18
    /// Integers beyond ±2^52 are exceptions (a Double holds every integer up to 2^53 exactly).
    package static let integerLimit = Double(1 << 52)

    /// ALP's integer for `value` under (e, f), or nil when it does not round-trip exactly.
    @inlinable @inline(__always)
    package static func alpEncode(_ value: Double, e: Int, f: Int) -> Int64? {
        guard let n = alpCandidate(value, e: e, f: f) else { return nil }
        return alpDecode(n, e: e, f: f).bitPattern == value.bitPattern ? n : nil
    }

    /// round(value × 10^e / 10^f) when within ±2^52 (nil for NaN and infinities too).
    @inlinable @inline(__always)
    package static func alpCandidate(_ value: Double, e: Int, f: Int) -> Int64? {
        let scaled = (value * powers[e] / powers[f]).rounded()
        guard scaled.magnitude <= integerLimit else { return nil } // also false for NaN
        return Int64(scaled)
    }

    /// The value of ALP's integer `n` under (e, f): (n × 10^f) / 10^e in IEEE 754 binary64
    /// arithmetic, rounding to nearest even. Dividing by the exact power (not multiplying by the
    /// inexact 10^-e) makes it the correctly rounded quotient, so every decimal of up to 15
    /// significant digits read as the nearest Double (or made by `Double(k) / 10^e`) round-trips
    /// with its own number of decimals as e and no exception.
    @inlinable @inline(__always)
    package static func alpDecode(_ n: Int64, e: Int, f: Int) -> Double {
        Double(n) * powers[f] / powers[e]
    }

    /// Appends the column for `values` to `writer`. Throws `.invalidArgument` over
    /// ``ColumnHeader/maximumCount`` values.
    package static func encode(_ values: [Double], to writer: inout BitWriter) throws {
        try ColumnHeader.checkEncodable(count: values.count, what: what)
        guard !values.isEmpty else {
            ColumnHeader(encoding: .doubleALP, count: 0).write(to: &writer)
            writer.write(0, bits: 10)
            writer.writeVarint(0)
            return
        }
        let (e, f) = chooseExponents(values)
        var alp = BitWriter(capacity: values.count * 2 + 16)
        let exceptions = writeALP(values, e: e, f: f, to: &alp)
        // ALP with few exceptions and narrow integers is as good as it gets; otherwise compare.
        if exceptions * 8 <= values.count && alp.bitCount <= values.count * 24 {
            writer.append(alp)
            return
        }
        var xor = BitWriter(capacity: values.count * 8 + 16)
        writeXOR(values, to: &xor)
        writer.append(xor.bitCount < alp.bitCount ? xor : alp)
    }

    /// The column for `values` as bytes.
    package static func encode(_ values: [Double]) throws -> [UInt8] {
        var writer = BitWriter(capacity: values.count * 2 + 16)
        try encode(values, to: &writer)
        return writer.finish()
    }

    /// The (e, f) pair with the smallest estimated size on a sample of up to 32 values: exceptions
    /// cost their 64 bits plus a position, the rest the width of their integers' range. Ties go to
    /// the smallest e, then the largest f.
    package static func chooseExponents(_ values: [Double]) -> (e: Int, f: Int) {
        let samples = min(values.count, 32)
        var best = (e: 0, f: 0, bits: Int.max)
        for e in 0...maximumExponent {
            for f in stride(from: e, through: 0, by: -1) {
                var lo = Int64.max, hi = Int64.min, exceptions = 0
                for k in 0..<samples {
                    if let n = alpEncode(values[k * values.count / samples], e: e, f: f) {
                        lo = min(lo, n); hi = max(hi, n)
                    } else {
                        exceptions += 1
                    }
                }
                let width = lo <= hi ? PackedIntegers.width(min: lo, max: hi) : 0
                let bits = (samples - exceptions) * width + exceptions * 80
                if bits < best.bits { best = (e, f, bits) }
            }
        }
        return (best.e, best.f)
    }

    /// Writes the ALP form and returns the number of exceptions.
    package static func writeALP(_ values: [Double], e: Int, f: Int, to writer: inout BitWriter) -> Int {
        var integers: [Int64] = []
        integers.reserveCapacity(values.count)
        var exceptions: [(position: Int, correction: Int64)] = []
        var fill: Int64 = 0
        for value in values {
            if let n = alpEncode(value, e: e, f: f) { fill = n; break }
        }
        for (i, value) in values.enumerated() {
            if let n = alpEncode(value, e: e, f: f) {
                integers.append(n)
                fill = n
                continue
            }
            var slot = fill
            if let near = alpCandidate(value, e: e, f: f) {
                let correction = Int64(bitPattern: value.bitPattern &- alpDecode(near, e: e, f: f).bitPattern)
                if SignedBits.width(of: correction) <= 16 { slot = near; fill = near }
            }
            integers.append(slot)
            exceptions.append((i, Int64(bitPattern: value.bitPattern &- alpDecode(slot, e: e, f: f).bitPattern)))
        }
        ColumnHeader(encoding: .doubleALP, count: values.count).write(to: &writer)
        writer.write(UInt64(e), bits: 5)
        writer.write(UInt64(f), bits: 5)
        writer.writeVarint(UInt64(exceptions.count))
        integers.withUnsafeBufferPointer { PackedIntegers.write($0, to: &writer) }
        guard !exceptions.isEmpty else { return 0 }
        let width = exceptions.map { SignedBits.width(of: $0.correction) }.max() ?? 64
        writer.write(UInt64(width), bits: 7)
        let positionWidth = positionBits(count: values.count)
        for (position, correction) in exceptions {
            writer.write(UInt64(position), bits: positionWidth)
            writer.write(UInt64(bitPattern: correction), bits: width)
        }
        return exceptions.count
    }

    /// The bits of an exception's position in a column of `count` values.
    package static func positionBits(count: Int) -> Int {
        count <= 1 ? 0 : 64 - UInt64(count - 1).leadingZeroBitCount
    }

    package static func writeXOR(_ values: [Double], to writer: inout BitWriter) {
        ColumnHeader(encoding: .doubleXOR, count: values.count).write(to: &writer)
        guard let first = values.first else { return }
        var previous = first.bitPattern
        writer.write(previous, bits: 64)
        var leading = -1, trailing = 0 // no window yet
        for value in values.dropFirst() {
            let bits = value.bitPattern
            let x = bits ^ previous
            previous = bits
            if x == 0 { writer.write(0, bits: 1); continue }
            let lz = min(x.leadingZeroBitCount, 31), tz = x.trailingZeroBitCount
            if leading >= 0 && lz >= leading && tz >= trailing {
                writer.write(0b10, bits: 2)
                writer.write(x >> UInt64(trailing), bits: 64 - leading - trailing)
            } else {
                let meaningful = 64 - lz - tz
                writer.write(0b11, bits: 2)
                writer.write(UInt64(lz), bits: 5)
                writer.write(UInt64(meaningful - 1), bits: 6)
                writer.write(x >> UInt64(tz), bits: meaningful)
                leading = lz; trailing = tz
            }
        }
    }

    /// Reads a column and appends its values to `values`, through the fast decoder. Throws
    /// `.corrupted` on any malformed input; `values` is then as it was.
    package static func decode(from reader: inout BitReader, into values: inout [Double]) throws {
        let count = try reader.peekHeader(what: what, expected: .doubleALP, or: .doubleXOR).count
        try reader.appendColumn(count: count, zero: 0, to: &values) { r, out in try decode(from: &r, count: count, into: out) }
    }

    /// Reads the column at the start of `bytes` and appends its values to `values`.
    package static func decode(_ bytes: [UInt8], into values: inout [Double]) throws {
        var reader = BitReader(bytes)
        try decode(from: &reader, into: &values)
    }
}

extension DoubleColumn {
    /// Reads a column of exactly `count` values into `out[0..<count]`, with the checks of
    /// ``decode(from:into:)``. ALP is one multiply-multiply per value straight out of the packed
    /// words, then the exceptions are patched in.
    package static func decode(from reader: inout ColumnReader, count: Int, into out: UnsafeMutablePointer<Double>) throws {
        let encoding = try ColumnHeader.read(from: &reader, what: what, count: count, expected: .doubleALP, or: .doubleXOR)
        if encoding == .doubleXOR {
            try readXOR(count: count, from: &reader, into: out)
            return
        }
        guard let rawE = reader.read(bits: 5), let rawF = reader.read(bits: 5), let rawExceptions = reader.readVarint() else {
            throw ColumnHeader.truncated(what, reader)
        }
        let e = Int(rawE), f = Int(rawF)
        guard e <= maximumExponent, f <= e else {
            throw ColumnHeader.corrupted(what, reader, "ALP exponent \(e) and factor \(f) out of range")
        }
        guard rawExceptions <= UInt64(count) else {
            throw ColumnHeader.corrupted(what, reader, "\(rawExceptions) ALP exceptions in \(count) values")
        }
        let factor = powers[f], divisor = powers[e]
        // alpDecode(n, e, f), exactly as the encoder checked it.
        if f == 0 {
            // × 10^0 is exact: one division a value.
            try PackedIntegers.unpack(count: count, from: &reader, what: what) { i, n in out[i] = Double(n) / divisor }
        } else {
            try PackedIntegers.unpack(count: count, from: &reader, what: what) { i, n in out[i] = Double(n) * factor / divisor }
        }
        let exceptions = Int(rawExceptions)
        guard exceptions > 0 else { return }
        guard let rawWidth = reader.read(bits: 7) else { throw ColumnHeader.truncated(what, reader) }
        let width = Int(rawWidth)
        guard width <= 64 else { throw ColumnHeader.corrupted(what, reader, "ALP correction width \(width) over 64") }
        let positionWidth = positionBits(count: count)
        guard exceptions * (positionWidth + width) <= reader.remainingBits else { throw ColumnHeader.truncated(what, reader) }
        var last = -1
        for _ in 0..<exceptions {
            let position = Int(reader.readUnchecked(bits: positionWidth))
            let correction = SignedBits.extend(reader.readUnchecked(bits: width), bits: width)
            guard position > last, position < count else {
                throw ColumnHeader.corrupted(what, reader, "ALP exception position \(position) out of order or range")
            }
            last = position
            out[position] = Double(bitPattern: out[position].bitPattern &+ UInt64(bitPattern: correction))
        }
    }

    private static func readXOR(count: Int, from reader: inout ColumnReader, into out: UnsafeMutablePointer<Double>) throws {
        guard count > 0 else { return }
        guard let first = reader.read(bits: 64) else { throw ColumnHeader.truncated(what, reader) }
        guard count - 1 <= reader.remainingBits else { throw ColumnHeader.truncated(what, reader) }
        out[0] = Double(bitPattern: first)
        var previous = first
        var leading = -1, trailing = 0
        for i in 1..<count {
            guard let changed = reader.readBit() else { throw ColumnHeader.truncated(what, reader) }
            if changed {
                guard let newWindow = reader.readBit() else { throw ColumnHeader.truncated(what, reader) }
                if newWindow {
                    guard let lz = reader.read(bits: 5), let meaningfulMinusOne = reader.read(bits: 6) else {
                        throw ColumnHeader.truncated(what, reader)
                    }
                    let meaningful = Int(meaningfulMinusOne) + 1
                    guard Int(lz) + meaningful <= 64 else {
                        throw ColumnHeader.corrupted(what, reader, "XOR window of \(lz) + \(meaningful) bits over 64")
                    }
                    leading = Int(lz); trailing = 64 - leading - meaningful
                } else if leading < 0 {
                    throw ColumnHeader.corrupted(what, reader, "XOR value reuses a window before any was set")
                }
                guard let x = reader.read(bits: 64 - leading - trailing) else { throw ColumnHeader.truncated(what, reader) }
                previous ^= x << UInt64(trailing)
            }
            out[i] = Double(bitPattern: previous)
        }
    }
}
