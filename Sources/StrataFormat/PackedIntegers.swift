/// `Int64` values frame-of-reference bit-packed, either the values themselves or their deltas,
/// whichever packs narrower. The body of ``IntegerColumn`` and of ALP's integers in
/// ``DoubleColumn``; the count comes from the column header. Layout (nothing at all for 0 values):
///
///     mode      1 bit     0: the packed numbers are the values; 1: they are the deltas
///                         v[i] &- v[i-1] (wrapping), after the first value
///     first     zigzag varint, only in delta mode: v[0]
///     base      zigzag varint, the minimum of the packed numbers (the frame of reference)
///     width     7 bits    0…64
///     packed    n × width bits: number &- base as unsigned, n = count (values) or count - 1 (deltas)
///
/// Wrapping arithmetic makes any Int64 sequence round-trip: the unsigned distance to the base
/// always fits 64 bits.
package enum PackedIntegers {
    /// Width in bits of the unsigned distance `max &- min`.
    @inlinable @inline(__always)
    package static func width(min: Int64, max: Int64) -> Int {
        64 - UInt64(bitPattern: max &- min).leadingZeroBitCount
    }

    /// The number of bits ``write(_:to:)`` appends for `values`, and whether it uses deltas.
    package static func plan(_ values: UnsafeBufferPointer<Int64>) -> (bits: Int, deltas: Bool, base: Int64, width: Int) {
        guard let first = values.first else { return (0, false, 0, 0) }
        var lo = first, hi = first
        var dlo = Int64.max, dhi = Int64.min
        var previous = first
        for value in values.dropFirst() {
            lo = Swift.min(lo, value); hi = Swift.max(hi, value)
            let delta = value &- previous
            dlo = Swift.min(dlo, delta); dhi = Swift.max(dhi, delta)
            previous = value
        }
        let plainWidth = width(min: lo, max: hi)
        let plainBits = 1 + varintBits(ZigZag.encode(lo)) + 7 + values.count * plainWidth
        guard values.count > 1 else { return (plainBits, false, lo, plainWidth) }
        let deltaWidth = width(min: dlo, max: dhi)
        let deltaBits = 1 + varintBits(ZigZag.encode(first)) + varintBits(ZigZag.encode(dlo)) + 7
            + (values.count - 1) * deltaWidth
        return deltaBits < plainBits ? (deltaBits, true, dlo, deltaWidth) : (plainBits, false, lo, plainWidth)
    }

    package static func varintBits(_ value: UInt64) -> Int { Varint.length(of: value) * 8 }

    /// Appends `values` in the layout above.
    package static func write(_ values: UnsafeBufferPointer<Int64>, to writer: inout BitWriter) {
        guard let first = values.first else { return }
        let plan = plan(values)
        writer.write(bit: plan.deltas)
        if plan.deltas { writer.writeSignedVarint(first) }
        writer.writeSignedVarint(plan.base)
        writer.write(UInt64(plan.width), bits: 7)
        if plan.deltas {
            var previous = first
            for value in values.dropFirst() {
                writer.write(UInt64(bitPattern: (value &- previous) &- plan.base), bits: plan.width)
                previous = value
            }
        } else {
            for value in values {
                writer.write(UInt64(bitPattern: value &- plan.base), bits: plan.width)
            }
        }
    }
}

extension PackedIntegers {
    /// Reads `count` values written by ``write(_:to:)``, handing `body` each value's index
    /// and value in order. Throws `.corrupted` when a field is out of range or the packed bits do
    /// not fit in what remains. Each value is a shift of one word ``ColumnReader/peek()`` loads,
    /// after one bounds check for all of them.
    @inlinable @inline(__always)
    package static func unpack(count: Int, from reader: inout ColumnReader, what: String,
                       _ body: (_ index: Int, _ value: Int64) throws -> Void) throws {
        guard count > 0 else { return }
        guard let mode = reader.readBit() else { throw ColumnHeader.truncated(what, reader) }
        var previous: Int64 = 0
        if mode {
            guard let value = reader.readSignedVarint() else { throw ColumnHeader.truncated(what, reader) }
            previous = value
        }
        guard let base = reader.readSignedVarint(), let rawWidth = reader.read(bits: 7) else {
            throw ColumnHeader.truncated(what, reader)
        }
        let width = Int(rawWidth)
        guard width <= 64 else { throw ColumnHeader.corrupted(what, reader, "packed width \(width) over 64") }
        let packed = mode ? count - 1 : count
        let (bits, overflow) = packed.multipliedReportingOverflow(by: width)
        guard !overflow, bits <= reader.remainingBits else { throw ColumnHeader.truncated(what, reader) }
        var i = 0
        if mode {
            try body(0, previous)
            i = 1
        }
        if width == 0 {
            while i < count {
                if mode { previous &+= base } else { previous = base }
                try body(i, previous)
                i &+= 1
            }
        } else if width <= 57 {
            let shift = UInt64(64 &- width)
            let words = reader
            var position = reader.position
            // First the fields whose word lies within the bytes (no check per value), then the
            // last few through peek(at:).
            let direct = min(count, i &+ words.fieldsInWords(from: position, width: width))
            if mode {
                while i < direct {
                    let raw = words.word(at: position) &>> shift
                    position &+= width
                    previous &+= Int64(bitPattern: raw) &+ base
                    try body(i, previous)
                    i &+= 1
                }
                while i < count {
                    let raw = words.peek(at: position) &>> shift
                    position &+= width
                    previous &+= Int64(bitPattern: raw) &+ base
                    try body(i, previous)
                    i &+= 1
                }
            } else {
                while i < direct {
                    let raw = words.word(at: position) &>> shift
                    position &+= width
                    try body(i, Int64(bitPattern: raw) &+ base)
                    i &+= 1
                }
                while i < count {
                    let raw = words.peek(at: position) &>> shift
                    position &+= width
                    try body(i, Int64(bitPattern: raw) &+ base)
                    i &+= 1
                }
            }
            reader.position = position
        } else {
            while i < count {
                let raw = Int64(bitPattern: reader.readUnchecked(bits: width))
                if mode { previous &+= raw &+ base } else { previous = raw &+ base }
                try body(i, previous)
                i &+= 1
            }
        }
    }
}
