import Foundation

// Collation of JSON values (the order of index keys) and its order-preserving byte encoding
// (FORMAT.md §13.3).
//
//   byte  value                 body
//   0x00  end of array/object   —
//   0x10  null                  —
//   0x20  false                 —
//   0x21  true                  —
//   0x30  -infinity             —
//   0x31  negative number       exponent and fraction of the magnitude, every byte inverted
//   0x32  zero (and -0.0)       —
//   0x33  positive number       u16 BE (E + 1075), fraction: 7-bit groups, high bits first,
//                               each byte (group << 1) | more; a lone 0x00 when the fraction is 0
//   0x34  +infinity             —
//   0x35  NaN                   —
//   0x40  string (and date)     UTF-8, 0x00 written 0x00 0xFF, then 0x00
//   0x50  array                 the elements, then 0x00
//   0x60  object                per member sorted by key: the key as a string (0x40 …), the value;
//                               then 0x00
//
// No element starts with 0xFF, so `key + [0xFF]` is greater than `key` followed by anything.
// The bytes never change.

/// The type bytes of the collation key encoding. Stored in index keys: never change them.
package enum JSONCollationType {
    package static let end: UInt8 = 0x00
    package static let null: UInt8 = 0x10
    package static let `false`: UInt8 = 0x20
    package static let `true`: UInt8 = 0x21
    package static let negativeInfinity: UInt8 = 0x30
    package static let negative: UInt8 = 0x31
    package static let zero: UInt8 = 0x32
    package static let positive: UInt8 = 0x33
    package static let positiveInfinity: UInt8 = 0x34
    package static let nan: UInt8 = 0x35
    package static let string: UInt8 = 0x40
    package static let array: UInt8 = 0x50
    package static let object: UInt8 = 0x60
    /// Greater than every byte that can start an encoded value or end a container.
    package static let afterAll: UInt8 = 0xFF
    /// The bias added to a number's binary exponent (−1074…1023) to store it as a `u16`.
    package static let exponentBias = 1075
}

extension JSON: Comparable {
    /// Whether `lhs` sorts before `rhs` in collation order (CouchDB's order of view keys).
    ///
    /// `null` < `false` < `true` < numbers < strings < arrays < objects.
    ///
    /// - Numbers compare by value, exactly, across `int` and `double` (`int(1)` and `double(1.0)`
    ///   are equal; `Int64.max` is less than the double 2^63). `-0.0` equals `0`. `-infinity` sorts
    ///   before every finite number, `+infinity` after them, and NaN after `+infinity` (all NaNs
    ///   collate equal).
    /// - Strings compare by Unicode code point — CouchDB's `raw` collation. (An index can order
    ///   its strings by the Unicode Collation Algorithm instead, CouchDB's default:
    ///   ``DocumentIndex/Collation/unicode``.)
    /// - A `date` collates as its ISO 8601 string (``iso8601String(_:)``), so a date and that
    ///   string collate equal.
    /// - Arrays compare element by element; a proper prefix sorts first.
    /// - Objects compare their members sorted by key, (key, value) pair by pair; on a common
    ///   prefix, fewer members sort first.
    ///
    /// `==` stays structural: a date and its string, or two NaNs, are neither `<` nor `>` each
    /// other but not `==` either. ``collate(_:_:)`` gives the three-way result.
    public static func < (lhs: JSON, rhs: JSON) -> Bool {
        collate(lhs, rhs) < 0
    }

    /// The three-way collation comparison: negative when `lhs` sorts first, zero when the two
    /// collate equal, positive otherwise. See ``<(_:_:)`` for the order.
    public static func collate(_ lhs: JSON, _ rhs: JSON) -> Int {
        let lr = JSONCollation.rank(lhs), rr = JSONCollation.rank(rhs)
        if lr != rr { return lr < rr ? -1 : 1 }
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): return a == b ? 0 : (a ? 1 : -1)
        case let (.int(a), .int(b)): return a == b ? 0 : (a < b ? -1 : 1)
        case let (.double(a), .double(b)): return JSONCollation.compare(a, b)
        case let (.int(a), .double(b)): return JSONCollation.compare(a, b)
        case let (.double(a), .int(b)): return -JSONCollation.compare(b, a)
        case (.array(let a), .array(let b)):
            for (x, y) in zip(a, b) {
                let c = collate(x, y)
                if c != 0 { return c }
            }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        case (.object(let a), .object(let b)):
            let sa = a.sorted { JSONTextWriter.codePointLess($0.key, $1.key) }
            let sb = b.sorted { JSONTextWriter.codePointLess($0.key, $1.key) }
            for (x, y) in zip(sa, sb) {
                let k = JSONCollation.compare(x.key, y.key)
                if k != 0 { return k }
                let c = collate(x.value, y.value)
                if c != 0 { return c }
            }
            return sa.count == sb.count ? 0 : (sa.count < sb.count ? -1 : 1)
        default:
            // Strings and dates (rank 4), or null.
            if lr == 4 { return JSONCollation.compare(JSONCollation.collatedString(lhs), JSONCollation.collatedString(rhs)) }
            return 0
        }
    }

    /// Appends the collation key of the value: bytes whose `memcmp` order is the collation order
    /// (FORMAT.md §13.3).
    ///
    /// Values that collate equal have identical keys (`int(1)` and `double(1.0)`; a date and its
    /// ISO 8601 string). The key is self-delimiting — no key is a proper prefix of another
    /// value's key — so more bytes (a document id) may follow it inside an engine key, and
    /// ``decodeCollationKey(_:at:)`` finds where it ends.
    ///
    /// ```swift
    /// var key: [UInt8] = []
    /// JSON.array(["a", 1]).appendCollationKey(to: &key)
    /// // 50 40 61 00 33 04 33 00 00
    /// ```
    package func appendCollationKey(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(JSONCollationType.null)
        case .bool(let b): out.append(b ? JSONCollationType.true : JSONCollationType.false)
        case .int(let i):
            if i == 0 {
                out.append(JSONCollationType.zero)
            } else {
                JSONCollation.appendNumber(negative: i < 0, mantissa: i.magnitude, exponent: 0, to: &out)
            }
        case .double(let d):
            if d.isNaN {
                out.append(JSONCollationType.nan)
            } else if d.isInfinite {
                out.append(d < 0 ? JSONCollationType.negativeInfinity : JSONCollationType.positiveInfinity)
            } else if d == 0 {
                out.append(JSONCollationType.zero)
            } else if d.isSubnormal {
                JSONCollation.appendNumber(negative: d < 0, mantissa: d.significandBitPattern, exponent: -1074, to: &out)
            } else {
                JSONCollation.appendNumber(negative: d < 0, mantissa: d.significandBitPattern | (1 << 52),
                                           exponent: Int(d.exponentBitPattern) - 1075, to: &out)
            }
        case .string(let s): JSONCollation.appendString(s, to: &out)
        case .date(let d): JSONCollation.appendString(JSON.iso8601String(d), to: &out)
        case .array(let elements):
            out.append(JSONCollationType.array)
            for element in elements { element.appendCollationKey(to: &out) }
            out.append(JSONCollationType.end)
        case .object(let members):
            out.append(JSONCollationType.object)
            for (key, value) in members.sorted(by: { JSONTextWriter.codePointLess($0.key, $1.key) }) {
                JSONCollation.appendString(key, to: &out)
                value.appendCollationKey(to: &out)
            }
            out.append(JSONCollationType.end)
        }
    }

    /// The collation key of the value; see ``appendCollationKey(to:)``.
    package var collationKey: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        appendCollationKey(to: &out)
        return out
    }

    /// The smallest byte string greater than this value's collation key followed by any bytes
    /// that do not start with `0xFF` — the exclusive upper bound of a scan that must include
    /// every engine key `(…, collationKey(self), documentID)`: the bound of an `inclusiveEnd`
    /// range, or the start of a range that excludes `self`.
    package var collationKeyAfterEqual: [UInt8] {
        var out = collationKey
        out.append(JSONCollationType.afterAll)
        return out
    }

    /// The bounds `[lower, upper)` of the collation keys of every array that starts with
    /// `elements` (including the array `elements` itself), followed by anything: CouchDB's
    /// `startkey=[a, b]`, `endkey=[a, b, {}]` idiom without the sentinel.
    package static func collationKeyRange(ofArraysStartingWith elements: [JSON]) -> (lower: [UInt8], upper: [UInt8]) {
        var lower: [UInt8] = [JSONCollationType.array]
        for element in elements { element.appendCollationKey(to: &lower) }
        var upper = lower
        upper.append(JSONCollationType.afterAll)
        return (lower, upper)
    }

    /// Decodes one collation key starting at `offset`, advancing `offset` past it; bytes after it
    /// (a document id) are left alone.
    ///
    /// The result is the canonical value of its collation class: a number that is an integer in
    /// the range of `Int64` decodes as `int`, any other number as `double` (so `double(2.0)`
    /// comes back as `int(2)`, `-0.0` as `int(0)`); a date comes back as its ISO 8601 `string`.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` with file `"collation key"` for
    ///   bytes no encoder writes (an unknown type byte, a truncated value, a number that is not in
    ///   canonical form or not a double, invalid UTF-8, unsorted object keys, nesting deeper than
    ///   ``maximumNestingDepth``); ``StrataError/invalidArgument(argument:reason:)`` when `offset` is outside
    ///   `bytes`.
    package static func decodeCollationKey(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) throws -> JSON {
        guard offset >= 0 && offset <= bytes.count else {
            throw StrataError.invalidArgument(argument: "offset", reason: "collation key offset \(offset) outside 0...\(bytes.count)")
        }
        var reader = JSONCollationReader(buffer: bytes, position: offset)
        let value = try reader.value(depth: 0)
        offset = reader.position
        return value
    }

    /// Moves `offset` past one collation key (§13.3) or Unicode collation key (§13.4) without
    /// decoding it.
    package static func skipCollationKey(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) throws {
        guard offset >= 0 && offset <= bytes.count else {
            throw StrataError.invalidArgument(argument: "offset", reason: "collation key offset \(offset) outside 0...\(bytes.count)")
        }
        var reader = JSONCollationReader(buffer: bytes, position: offset)
        try reader.skipValue(depth: 0)
        offset = reader.position
    }

    /// Decodes one collation key from an array slice, advancing `offset` (an index of `bytes`).
    package static func decodeCollationKey(_ bytes: ArraySlice<UInt8>, at offset: inout Int) throws -> JSON {
        try bytes.withUnsafeBytes { buffer in
            var local = offset - bytes.startIndex
            let value = try decodeCollationKey(buffer, at: &local)
            offset = local + bytes.startIndex
            return value
        }
    }
}

/// Helpers of collation.
package enum JSONCollation {
    /// null 0, false 1, true 2, numbers 3, strings and dates 4, arrays 5, objects 6.
    @inlinable @inline(__always)
    package static func rank(_ value: JSON) -> Int {
        switch value {
        case .null: return 0
        case .bool(let b): return b ? 2 : 1
        case .int, .double: return 3
        case .string, .date: return 4
        case .array: return 5
        case .object: return 6
        }
    }

    package static func collatedString(_ value: JSON) -> String {
        switch value {
        case .string(let s): return s
        case .date(let d): return JSON.iso8601String(d)
        default: return ""
        }
    }

    /// Strings by Unicode code point, which is UTF-8 byte order.
    package static func compare(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in JSONBinary.compareBytes(UnsafeRawBufferPointer(pa), UnsafeRawBufferPointer(pb)).signum() }
        }
    }

    /// Doubles: -inf < finite < +inf < NaN; -0.0 == 0.0; NaN == NaN.
    package static func compare(_ a: Double, _ b: Double) -> Int {
        if a.isNaN || b.isNaN { return a.isNaN ? (b.isNaN ? 0 : 1) : -1 }
        return a < b ? -1 : (a > b ? 1 : 0)
    }

    /// An integer and a double, exactly.
    package static func compare(_ i: Int64, _ d: Double) -> Int {
        if d.isNaN { return -1 }
        if d >= 9_223_372_036_854_775_808.0 { return -1 }  // 2^63 and above, +inf
        if d < -9_223_372_036_854_775_808.0 { return 1 }  // below -2^63, -inf
        let floor = d.rounded(.down)
        let f = Int64(floor)  // exact: -2^63 <= floor < 2^63
        if i != f { return i < f ? -1 : 1 }
        return d > floor ? -1 : 0
    }

    /// Appends a nonzero finite number `mantissa × 2^exponent` (mantissa > 0).
    package static func appendNumber(negative: Bool, mantissa: UInt64, exponent: Int, to out: inout [UInt8]) {
        let leading = mantissa.leadingZeroBitCount
        let e = exponent + 63 - leading  // the exponent of the leading 1 bit
        var fraction = leading == 63 ? 0 : mantissa << UInt64(leading + 1)  // bits after the leading 1, top-aligned
        let flip: UInt8 = negative ? 0xFF : 0x00
        out.append(negative ? JSONCollationType.negative : JSONCollationType.positive)
        let biased = UInt16(e + JSONCollationType.exponentBias)
        out.append(UInt8(biased >> 8) ^ flip)
        out.append(UInt8(biased & 0xFF) ^ flip)
        if fraction == 0 {
            out.append(flip)
            return
        }
        while true {
            let group = UInt8(fraction >> 57)
            fraction <<= 7
            let more: UInt8 = fraction != 0 ? 1 : 0
            out.append((group << 1 | more) ^ flip)
            if more == 0 { return }
        }
    }

    /// Appends a string: the type byte, the UTF-8 with 0x00 escaped as 0x00 0xFF, then 0x00.
    package static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(JSONCollationType.string)
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            for i in 0..<utf8.count where utf8[i] == 0 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...i]))
                out.append(0xFF)
                start = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        out.append(0x00)
    }
}

/// A bounds-checked reader of collation keys.
package struct JSONCollationReader {
    package let buffer: UnsafeRawBufferPointer
    package var position: Int

    package func corrupted(_ offset: Int, _ reason: String) -> StrataError {
        .corrupted(file: "collation key", offset: offset, reason: reason)
    }

    package mutating func byte() throws -> UInt8 {
        guard position < buffer.count else { throw corrupted(position, "truncated collation key") }
        let b = buffer[position]
        position += 1
        return b
    }

    package mutating func value(depth: Int) throws -> JSON {
        let start = position
        let type = try byte()
        switch type {
        case JSONCollationType.null: return .null
        case JSONCollationType.false: return .bool(false)
        case JSONCollationType.true: return .bool(true)
        case JSONCollationType.negativeInfinity: return .double(-.infinity)
        case JSONCollationType.zero: return .int(0)
        case JSONCollationType.positiveInfinity: return .double(.infinity)
        case JSONCollationType.nan: return .double(.nan)
        case JSONCollationType.negative, JSONCollationType.positive:
            return try number(negative: type == JSONCollationType.negative, start: start)
        case JSONCollationType.string: return .string(try string(start: start))
        case JSONCollationType.array:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(start, "nesting deeper than \(JSON.maximumNestingDepth)") }
            var elements: [JSON] = []
            while true {
                guard position < buffer.count else { throw corrupted(position, "unterminated array") }
                if buffer[position] == JSONCollationType.end {
                    position += 1
                    return .array(elements)
                }
                elements.append(try value(depth: depth + 1))
            }
        case JSONCollationType.object:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(start, "nesting deeper than \(JSON.maximumNestingDepth)") }
            var members: [String: JSON] = [:]
            var previous: String? = nil
            while true {
                let keyStart = position
                let b = try byte()
                if b == JSONCollationType.end { return .object(members) }
                guard b == JSONCollationType.string else { throw corrupted(keyStart, "object key is not a string") }
                let key = try string(start: keyStart)
                if let previous, JSONCollation.compare(previous, key) >= 0 {
                    throw corrupted(keyStart, "object keys not in strictly increasing order")
                }
                members[key] = try value(depth: depth + 1)
                previous = key
            }
        default:
            throw corrupted(start, "unknown collation type byte 0x\(String(type, radix: 16))")
        }
    }

    /// Moves past one value of a collation key (FORMAT.md §13.3) or of a Unicode collation key
    /// (§13.4) without decoding it: the structure only, each string scanned to its terminator
    /// (a Unicode key's strings are sort keys, not UTF-8).
    package mutating func skipValue(depth: Int) throws {
        let start = position
        let type = try byte()
        switch type {
        case JSONCollationType.null, JSONCollationType.false, JSONCollationType.true,
             JSONCollationType.negativeInfinity, JSONCollationType.zero, JSONCollationType.positiveInfinity,
             JSONCollationType.nan:
            return
        case JSONCollationType.negative, JSONCollationType.positive:
            let flip: UInt8 = type == JSONCollationType.negative ? 0xFF : 0x00
            _ = try byte()
            _ = try byte()
            // At most ten fraction bytes (63 bits in 7-bit groups, or the lone zero byte).
            for _ in 0..<10 {
                let b = try byte() ^ flip
                if b & 1 == 0 { return }
            }
            throw corrupted(start, "number fraction longer than 63 bits")
        case JSONCollationType.string:
            while true {
                guard position < buffer.count else { throw corrupted(start, "unterminated string") }
                if buffer[position] == 0 {
                    if position + 1 < buffer.count && buffer[position + 1] == 0xFF { position += 2; continue }
                    position += 1
                    return
                }
                position += 1
            }
        case JSONCollationType.array, JSONCollationType.object:
            guard depth < JSON.maximumNestingDepth else { throw corrupted(start, "nesting deeper than \(JSON.maximumNestingDepth)") }
            while true {
                guard position < buffer.count else { throw corrupted(position, "unterminated container") }
                if buffer[position] == JSONCollationType.end {
                    position += 1
                    return
                }
                try skipValue(depth: depth + 1)
            }
        default:
            throw corrupted(start, "unknown collation type byte 0x\(String(type, radix: 16))")
        }
    }

    package mutating func string(start: Int) throws -> String {
        var bytes: [UInt8] = []
        var escaped = false
        var chunk = position
        while true {
            guard position < buffer.count else { throw corrupted(start, "unterminated string") }
            if buffer[position] == 0 {
                if position + 1 < buffer.count && buffer[position + 1] == 0xFF {
                    bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[chunk...position]))
                    escaped = true
                    position += 2
                    chunk = position
                    continue
                }
                break
            }
            position += 1
        }
        let tail = UnsafeRawBufferPointer(rebasing: buffer[chunk..<position])
        position += 1  // the terminator
        let s: String?
        if escaped {
            bytes.append(contentsOf: tail)
            s = UTF8Text.string(bytes)
        } else {
            s = UTF8Text.string(tail)
        }
        guard let s else { throw corrupted(start, "invalid UTF-8 in string") }
        return s
    }

    package mutating func number(negative: Bool, start: Int) throws -> JSON {
        let flip: UInt8 = negative ? 0xFF : 0x00
        let high = try byte() ^ flip, low = try byte() ^ flip
        let e = (Int(high) << 8 | Int(low)) - JSONCollationType.exponentBias
        guard e >= -1074 && e <= 1023 else { throw corrupted(start, "number exponent \(e) out of range") }
        var fraction: UInt64 = 0
        var bits = 0
        while true {
            let b = try byte() ^ flip
            let group = UInt64(b >> 1)
            let more = b & 1 == 1
            guard bits <= 56 else { throw corrupted(start, "number fraction longer than 63 bits") }
            fraction |= group << UInt64(57 - bits)
            bits += 7
            if !more {
                // Canonical: the last group is nonzero unless it is the only one.
                guard group != 0 || bits == 7 else { throw corrupted(start, "number fraction not in canonical form") }
                break
            }
        }
        // An integer in the range of Int64 → int.
        if e <= 63 && e >= 0 && (e == 0 ? fraction == 0 : fraction << UInt64(e) == 0) {
            let magnitude = (UInt64(1) << UInt64(e)) | (e == 0 ? 0 : fraction >> UInt64(64 - e))
            if !negative && magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative && magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(truncatingIfNeeded: 0 &- magnitude)) }
        }
        // Otherwise it must be a double exactly: at most 52 fraction bits (fewer when subnormal).
        let available = e >= -1022 ? 52 : 52 - (-1022 - e)
        guard available >= 0, available == 64 || fraction << UInt64(available) == 0 else {
            throw corrupted(start, "number is not representable as a double")
        }
        let significand = Double(bitPattern: 0x3FF0_0000_0000_0000 | (fraction >> 12))
        return .double(Double(sign: negative ? .minus : .plus, exponent: e, significand: significand))
    }

    package init(buffer: UnsafeRawBufferPointer, position: Int) {
        self.buffer = buffer
        self.position = position
    }
}
