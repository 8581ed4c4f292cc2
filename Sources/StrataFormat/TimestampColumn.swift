/// A column of `Int64` millisecond timestamps: Gorilla's delta-of-delta (Pelkonen et al., VLDB
/// 2015) with variable-width buckets whose widths the encoder picks per column. Layout:
///
///     header    ColumnHeader, encoding .timestampBuckets
///     first     zigzag varint t[0]                           (count ≥ 1)
///     mode      1 bit  0: residual = delta-of-delta          (count ≥ 2, as every field below)
///                      1: residual = delta - base
///     base      zigzag varint: in mode 0 the delta before the first (so the first residual is
///               d[1] - base), in mode 1 the reference every delta is taken from
///     widths    3 × 6 bits w0, w1, w2 (0…63)
///     residuals count - 1 of them, each a prefix and a two's-complement field:
///               '0'   + w0 bits      ('0' alone when w0 = 0: the residual is 0)
///               '10'  + w1 bits
///               '110' + w2 bits
///               '111' + 64 bits      (any Int64: the full-width escape)
///
/// Deltas are `t[i] &- t[i-1]` and residuals wrap too, so any Int64 sequence — unsorted,
/// Int64.min next to Int64.max — round-trips. Gorilla fixes the buckets at 7, 9 and 12 bits for
/// second-resolution timestamps; here the encoder chooses the three widths minimising the column's
/// size from a histogram of the residuals' widths, and chooses delta-of-delta (regular spacing,
/// drift) or delta from a base (independent jitter around a nominal spacing), whichever is smaller.
package enum TimestampColumn {
    package static let what = "timestamp column"

    /// Appends the column for `timestamps` to `writer`. Throws `.invalidArgument` over
    /// ``ColumnHeader/maximumCount`` values.
    package static func encode(_ timestamps: [Int64], to writer: inout BitWriter) throws {
        try ColumnHeader.checkEncodable(count: timestamps.count, what: what)
        ColumnHeader(encoding: .timestampBuckets, count: timestamps.count).write(to: &writer)
        guard let first = timestamps.first else { return }
        writer.writeSignedVarint(first)
        guard timestamps.count > 1 else { return }
        let base = medianDelta(timestamps)
        // Histograms of the residuals' two's-complement widths, for both modes.
        var dodWidths = [Int](repeating: 0, count: 65)
        var deltaWidths = [Int](repeating: 0, count: 65)
        var previousDelta = base
        for i in 1..<timestamps.count {
            let delta = timestamps[i] &- timestamps[i - 1]
            dodWidths[SignedBits.width(of: delta &- previousDelta)] += 1
            deltaWidths[SignedBits.width(of: delta &- base)] += 1
            previousDelta = delta
        }
        let dod = bestWidths(dodWidths)
        let fromBase = bestWidths(deltaWidths)
        let useBase = fromBase.bits < dod.bits
        let widths = useBase ? fromBase.widths : dod.widths
        writer.write(bit: useBase)
        writer.writeSignedVarint(base)
        writer.write(UInt64(widths.0), bits: 6)
        writer.write(UInt64(widths.1), bits: 6)
        writer.write(UInt64(widths.2), bits: 6)
        previousDelta = base
        for i in 1..<timestamps.count {
            let delta = timestamps[i] &- timestamps[i - 1]
            let residual = delta &- previousDelta
            if !useBase { previousDelta = delta }
            let needed = SignedBits.width(of: residual)
            let raw = UInt64(bitPattern: residual)
            if needed <= widths.0 {
                writer.write(0b0, bits: 1); writer.write(raw, bits: widths.0)
            } else if needed <= widths.1 {
                writer.write(0b10, bits: 2); writer.write(raw, bits: widths.1)
            } else if needed <= widths.2 {
                writer.write(0b110, bits: 3); writer.write(raw, bits: widths.2)
            } else {
                writer.write(0b111, bits: 3); writer.write(raw, bits: 64)
            }
        }
    }

    /// The column for `timestamps` as bytes.
    package static func encode(_ timestamps: [Int64]) throws -> [UInt8] {
        var writer = BitWriter(capacity: timestamps.count + 16)
        try encode(timestamps, to: &writer)
        return writer.finish()
    }

    /// Reads a column and appends its timestamps to `timestamps`, through the fast decoder.
    /// Throws `.corrupted` on any malformed input; `timestamps` is then as it was.
    package static func decode(from reader: inout BitReader, into timestamps: inout [Int64]) throws {
        let count = try reader.peekHeader(what: what, expected: .timestampBuckets).count
        try reader.appendColumn(count: count, zero: 0, to: &timestamps) { r, out in
            try decode(from: &r, count: count, offset: 0, into: out)
        }
    }

    /// Reads the column at the start of `bytes` and appends its timestamps to `timestamps`.
    package static func decode(_ bytes: [UInt8], into timestamps: inout [Int64]) throws {
        var reader = BitReader(bytes)
        try decode(from: &reader, into: &timestamps)
    }

    /// The median of up to 63 deltas sampled evenly: the nominal spacing, robust to outliers.
    package static func medianDelta(_ timestamps: [Int64]) -> Int64 {
        let deltas = timestamps.count - 1
        let samples = min(deltas, 63)
        var sample: [Int64] = []
        sample.reserveCapacity(samples)
        for k in 0..<samples {
            let i = 1 + k * deltas / samples
            sample.append(timestamps[i] &- timestamps[i - 1])
        }
        sample.sort()
        return sample[samples / 2]
    }

    /// The bucket widths w0 < w1 < w2 (each 0…63) that minimise the bits of residuals whose
    /// widths have histogram `histogram` (index = width 0…64), and that size.
    package static func bestWidths(_ histogram: [Int]) -> (widths: (Int, Int, Int), bits: Int) {
        // upTo[w] = residuals of width ≤ w.
        var upTo = [Int](repeating: 0, count: 65)
        var running = 0
        for w in 0...64 { running += histogram[w]; upTo[w] = running }
        let total = running
        var best = (widths: (0, 1, 2), bits: Int.max)
        for w0 in 0...61 {
            let cost0 = upTo[w0] * (1 + w0)
            if cost0 >= best.bits { break }
            for w1 in (w0 + 1)...62 {
                let cost1 = cost0 + (upTo[w1] - upTo[w0]) * (2 + w1)
                if cost1 >= best.bits { break }
                for w2 in (w1 + 1)...63 {
                    let bits = cost1 + (upTo[w2] - upTo[w1]) * (3 + w2) + (total - upTo[w2]) * 67
                    if bits < best.bits { best = ((w0, w1, w2), bits) }
                }
            }
        }
        return best
    }
}

extension TimestampColumn {
    /// Reads a column of exactly `count` timestamps and stores each plus `offset` (wrapping) in
    /// `out[0..<count]`, with the checks of ``decode(from:into:)``. A run of zero residuals in
    /// the shortest bucket (regular spacing) is taken as a run of zero bits out of one word.
    package static func decode(from reader: inout ColumnReader, count: Int, offset: Int64,
                       into out: UnsafeMutablePointer<Int64>) throws {
        _ = try ColumnHeader.read(from: &reader, what: what, count: count, expected: .timestampBuckets)
        guard count > 0 else { return }
        guard let first = reader.readSignedVarint() else { throw ColumnHeader.truncated(what, reader) }
        let previous = first &+ offset
        out[0] = previous
        guard count > 1 else { return }
        guard let useBase = reader.readBit(), let base = reader.readSignedVarint(),
              let w0 = reader.read(bits: 6), let w1 = reader.read(bits: 6), let w2 = reader.read(bits: 6) else {
            throw ColumnHeader.truncated(what, reader)
        }
        guard count - 1 <= reader.remainingBits else { throw ColumnHeader.truncated(what, reader) }
        // The width of each prefix's field, 16 bits each, indexed by the prefix's count of 1 bits.
        let widths = w0 | w1 << 16 | w2 << 32 | 64 << 48
        // One copy of the loop for each mode, so that neither tests the mode per residual.
        if useBase {
            try decodeResiduals(from: &reader, count: count, widths: widths, base: base, useBase: true, previous: previous, into: out)
        } else {
            try decodeResiduals(from: &reader, count: count, widths: widths, base: base, useBase: false, previous: previous, into: out)
        }
    }

    /// The residuals of ``decode(from:count:offset:into:)``: `out[1..<count]` from `out[0]` =
    /// `previous`.
    @inline(__always)
    private static func decodeResiduals(from reader: inout ColumnReader, count: Int, widths: UInt64, base: Int64,
                                        useBase: Bool, previous first: Int64, into out: UnsafeMutablePointer<Int64>) throws {
        let zeroRuns = widths & 0xFFFF == 0
        var previous = first
        // In delta mode previousDelta stays the base; either way a zero residual repeats it.
        var previousDelta = base
        var i = 1
        // The position lives in a local (stored back at the end and before each throw).
        let words = reader
        let limit = reader.wordLimit
        var position = reader.position
        while i < count {
            let residual: Int64
            if position < limit {
                // A whole word from `position`: its top 57 bits are the record's.
                let word = words.word(at: position)
                if zeroRuns && word &>> 63 == 0 {
                    // '0' bits, each a zero residual: as many as the word holds for sure.
                    let run = min(word.leadingZeroBitCount, 57, count &- i)
                    for _ in 0..<run {
                        previous &+= previousDelta
                        out[i] = previous
                        i &+= 1
                    }
                    position &+= run
                    continue
                }
                let ones = min((~word).leadingZeroBitCount, 3)
                let prefix = min(ones &+ 1, 3)
                let width = Int(truncatingIfNeeded: (widths &>> UInt64(ones &* 16)) & 0xFFFF)
                let end = prefix &+ width
                if end <= 57 {
                    // Branch-free: the field's bits, sign-extended; a zero width is a zero residual.
                    let field = Int64(bitPattern: word &<< UInt64(prefix)) &>> Int64(64 &- width)
                    residual = width == 0 ? 0 : field
                    position &+= end
                } else {
                    reader.position = position
                    residual = try readResidual(from: &reader, widths: widths)
                    position = reader.position
                }
            } else {
                reader.position = position
                residual = try readResidual(from: &reader, widths: widths)
                position = reader.position
            }
            let delta = previousDelta &+ residual
            if !useBase { previousDelta = delta }
            previous &+= delta
            out[i] = previous
            i &+= 1
        }
        reader.position = position
    }

    /// One residual through checked reads: near the end of the record, or wider than a word holds.
    @inline(never)
    private static func readResidual(from reader: inout ColumnReader, widths: UInt64) throws -> Int64 {
        var ones = 0
        while ones < 3 {
            guard let bit = reader.readBit() else { throw ColumnHeader.truncated(what, reader) }
            if !bit { break }
            ones += 1
        }
        let width = Int(truncatingIfNeeded: (widths &>> UInt64(ones &* 16)) & 0xFFFF)
        guard let raw = reader.read(bits: width) else { throw ColumnHeader.truncated(what, reader) }
        return SignedBits.extend(raw, bits: width)
    }
}
