import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A straightforward reference collation, written independently of `JSON.collate`.
private enum Reference {
    static func rank(_ v: JSON) -> Int {
        switch v {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .int, .double: return 3
        case .string, .date: return 4
        case .array: return 5
        case .object: return 6
        }
    }

    static func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }

    /// An int against a double through rounding, which is monotonic: if `Double(i)` differs from
    /// `d` the order is known; if equal, `d` is an integer and the exact comparison is in Int64,
    /// except at 2^63.
    static func compare(_ i: Int64, _ d: Double) -> Int {
        if d.isNaN { return -1 }
        let c = sign(Double(i), d)
        if c != 0 { return c }
        if d == 9_223_372_036_854_775_808.0 { return -1 }
        return sign(i, Int64(d))
    }

    static func compareNumbers(_ a: JSON, _ b: JSON) -> Int {
        switch (a, b) {
        case let (.int(x), .int(y)): return sign(x, y)
        case let (.int(x), .double(y)): return compare(x, y)
        case let (.double(x), .int(y)): return -compare(y, x)
        case let (.double(x), .double(y)):
            if x.isNaN || y.isNaN { return x.isNaN && y.isNaN ? 0 : (x.isNaN ? 1 : -1) }
            return sign(x, y)
        default: return 0
        }
    }

    static func scalars(_ v: JSON) -> [UInt32] {
        switch v {
        case .string(let s): return s.unicodeScalars.map(\.value)
        case .date(let d): return JSON.iso8601String(d).unicodeScalars.map(\.value)
        default: return []
        }
    }

    static func compareScalars(_ a: [UInt32], _ b: [UInt32]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return sign(a.count, b.count)
    }

    static func compare(_ a: JSON, _ b: JSON) -> Int {
        let ra = rank(a), rb = rank(b)
        if ra != rb { return sign(ra, rb) }
        switch (a, b) {
        case (.int, _), (.double, _): return compareNumbers(a, b)
        case (.string, _), (.date, _): return compareScalars(scalars(a), scalars(b))
        case let (.array(x), .array(y)):
            for (p, q) in zip(x, y) {
                let c = compare(p, q)
                if c != 0 { return c }
            }
            return sign(x.count, y.count)
        case let (.object(x), .object(y)):
            let px = x.map { (Array($0.key.unicodeScalars.map(\.value)), $0.value) }.sorted { compareScalars($0.0, $1.0) < 0 }
            let py = y.map { (Array($0.key.unicodeScalars.map(\.value)), $0.value) }.sorted { compareScalars($0.0, $1.0) < 0 }
            for (p, q) in zip(px, py) {
                let k = compareScalars(p.0, q.0)
                if k != 0 { return k }
                let c = compare(p.1, q.1)
                if c != 0 { return c }
            }
            return sign(x.count, y.count)
        default: return 0
        }
    }
}

private func memcmpSign(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
}

private func decodeKey(_ key: [UInt8]) throws -> (JSON, Int) {
    var offset = 0
    let value = try key.withUnsafeBytes { try JSON.decodeCollationKey($0, at: &offset) }
    return (value, offset)
}

/// Whether `value` is in the canonical form collation keys decode to.
private func isCanonical(_ value: JSON) -> Bool {
    switch value {
    case .double(let d): return d.isNaN || d.isInfinite || Int64(exactly: d) == nil
    case .date: return false
    case .array(let a): return a.allSatisfy(isCanonical)
    case .object(let o): return o.values.allSatisfy(isCanonical)
    default: return true
    }
}

@Suite("JSON collation")
struct JSONCollationTests {
    @Test("the documented order of kinds and edge values")
    func order() {
        let ascending: [JSON] = [
            nil, false, true, .double(-.infinity), .int(Int64.min), -9_007_199_254_740_993, .double(-9_007_199_254_740_992),
            -1.5, -1, .double(-Double.leastNonzeroMagnitude), 0, .double(Double.leastNonzeroMagnitude), 0.5, 1, 1.5,
            9_007_199_254_740_993, .int(Int64.max), .double(9_223_372_036_854_775_808.0), .double(.greatestFiniteMagnitude),
            .double(.infinity), .double(.nan), "", "\u{0}", "A", "a", "a\u{0}", "ab", "é", "\u{FFFF}", "😀",
            [], [nil], [1], [1, 2], [1, "a"], [2], ["a"], [[]], [:], ["a": nil], ["a": 1], ["a": 1, "b": 1], ["a": 2], ["b": 0],
        ]
        for i in ascending.indices {
            for j in ascending.indices {
                let expected = Reference.sign(i, j)
                #expect(JSON.collate(ascending[i], ascending[j]) == expected, "\(ascending[i]) vs \(ascending[j])")
                #expect(memcmpSign(ascending[i].collationKey, ascending[j].collationKey) == expected,
                        "keys of \(ascending[i]) vs \(ascending[j])")
            }
        }
        var rng = SplitMix64(seed: 14)
        #expect(ascending.shuffled(using: &rng).sorted().map(\.collationKey) == ascending.map(\.collationKey))
    }

    @Test("values that collate equal have identical keys")
    func equalValues() {
        let pairs: [(JSON, JSON)] = [
            (.int(1), .double(1.0)), (.int(0), .double(-0.0)), (.int(-(1 << 53)), .double(-9_007_199_254_740_992)),
            (.int(Int64.min), .double(-9_223_372_036_854_775_808.0)), (.double(.nan), .double(-.nan)),
            (.date(Date(timeIntervalSinceReferenceDate: 0)), "2001-01-01T00:00:00.000Z"),
            ([1, ["a": 2]], [1.0, ["a": 2.0]]),
        ]
        for (a, b) in pairs {
            #expect(JSON.collate(a, b) == 0)
            #expect(!(a < b) && !(b < a))
            #expect(a.collationKey == b.collationKey, "\(a) vs \(b)")
        }
    }

    @Test("the collation keys of FORMAT.md §13.3")
    func examples() throws {
        #expect(JSON.int(1).collationKey == [0x33, 0x04, 0x33, 0x00])
        #expect(JSON.double(1.5).collationKey == [0x33, 0x04, 0x33, 0x80])
        #expect(JSON.int(-1).collationKey == [0x31, 0xFB, 0xCC, 0xFF])
        #expect(JSON.int(0).collationKey == [0x32])
        #expect(JSON.string("a\u{0}").collationKey == [0x40, 0x61, 0x00, 0xFF, 0x00])
        #expect(JSON.array(["a", 1]).collationKey == [0x50, 0x40, 0x61, 0x00, 0x33, 0x04, 0x33, 0x00, 0x00])
        #expect(JSON.object(["k": true]).collationKey == [0x60, 0x40, 0x6B, 0x00, 0x21, 0x00])
        // 5 = 1.01b × 2^2: exponent 2 + 1075 = 0x0435, fraction bits 01 → group 0100000 → 0x40.
        #expect(JSON.int(5).collationKey == [0x33, 0x04, 0x35, 0x40])
        #expect(JSON.int(1000).collationKey == [0x33, 0x04, 0x3C, 0xF4])
        #expect(JSON.int((1 << 53) + 1).collationKey == [0x33, 0x04, 0x68, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x10])
    }

    @Test("randomized: collate agrees with the reference, keys with collate, decode with encode")
    func randomized() throws {
        var random = RandomJSON(seed: 7)
        var values: [JSON] = []
        for _ in 0..<1500 { values.append(random.value()) }
        // Near-equal pairs matter most: add numeric twins and shared prefixes.
        for i in 0..<300 {
            let v = values[i]
            if case .int(let n) = v { values.append(.double(Double(n))) }
            values.append([v, .int(Int64(i))])
            values.append([v])
        }
        let keys = values.map(\.collationKey)
        var rng = SplitMix64(seed: 8)
        for _ in 0..<60_000 {
            let i = rng.below(values.count), j = rng.below(values.count)
            let expected = Reference.compare(values[i], values[j])
            #expect(JSON.collate(values[i], values[j]) == expected, "\(values[i]) vs \(values[j])")
            #expect(memcmpSign(keys[i], keys[j]) == expected, "keys of \(values[i]) vs \(values[j])")
        }
        // Sorting by key bytes and by collation gives the same sequence of collation classes.
        let byKeys = keys.sorted { $0.lexicographicallyPrecedes($1) }
        let byCollation = values.sorted().map(\.collationKey)
        #expect(byKeys == byCollation)
        for (value, key) in zip(values, keys) {
            let (decoded, consumed) = try decodeKey(key)
            #expect(consumed == key.count)
            #expect(JSON.collate(decoded, value) == 0, "\(value) decoded as \(decoded)")
            #expect(decoded.collationKey == key)
            #expect(isCanonical(decoded), "\(decoded)")
        }
    }

    @Test("keys are self-delimiting: a suffix after the key is left alone and keeps the order")
    func selfDelimiting() throws {
        var random = RandomJSON(seed: 9)
        var rng = SplitMix64(seed: 10)
        for _ in 0..<2000 {
            let a = random.value(), b = random.value()
            var ka = a.collationKey, kb = b.collationKey
            // A document id after the key: a tuple-encoded string (type byte 0x02).
            var ida = TupleKeyEncoder(), idb = TupleKeyEncoder()
            ida.append("doc\(rng.below(3))")
            idb.append("doc\(rng.below(3))")
            let lengthA = ka.count
            ka += ida.bytes
            kb += idb.bytes
            let order = JSON.collate(a, b)
            if order != 0 {
                #expect(memcmpSign(ka, kb) == order)
            } else {
                #expect(memcmpSign(ka, kb) == memcmpSign(ida.bytes, idb.bytes))
            }
            let (decoded, consumed) = try decodeKey(ka)
            #expect(consumed == lengthA)
            #expect(JSON.collate(decoded, a) == 0)
        }
    }

    @Test("range bounds: after-equal and array prefixes")
    func bounds() {
        var random = RandomJSON(seed: 11)
        let prefix: [JSON] = ["user", 7]
        let (lower, upper) = JSON.collationKeyRange(ofArraysStartingWith: prefix)
        for _ in 0..<3000 {
            let v = random.value()
            var id = TupleKeyEncoder()
            id.append("d")
            let key = v.collationKey + id.bytes
            // after-equal: every key collating <= v (with any id) is below the bound, every greater above.
            let pivot: JSON = [1, "m"]
            let inRange = key.lexicographicallyPrecedes(pivot.collationKeyAfterEqual)
            #expect(inRange == (JSON.collate(v, pivot) <= 0), "\(v)")
            // Array-prefix range.
            let hasPrefix: Bool
            if case .array(let elements) = v, elements.count >= prefix.count,
                zip(elements, prefix).allSatisfy({ JSON.collate($0, $1) == 0 })
            {
                hasPrefix = true
            } else {
                hasPrefix = false
            }
            let inside = !key.lexicographicallyPrecedes(lower) && key.lexicographicallyPrecedes(upper)
            #expect(inside == hasPrefix, "\(v)")
            let extended = JSON.array(prefix + [v]).collationKey + id.bytes
            #expect(!extended.lexicographicallyPrecedes(lower) && extended.lexicographicallyPrecedes(upper))
        }
    }

    @Test("bad collation keys throw corrupted, never trap")
    func fuzz() throws {
        func check(_ bytes: [UInt8]) {
            do {
                let (value, consumed) = try decodeKey(bytes)
                // What decodes re-encodes to the same bytes: the encoding is canonical.
                #expect(value.collationKey == Array(bytes[..<consumed]), "\(bytes)")
            } catch let error as StrataError {
                if case .corrupted(let file, let offset, _) = error {
                    #expect(file == "collation key")
                    #expect(offset >= 0 && offset <= bytes.count)
                } else {
                    Issue.record("unexpected error \(error)")
                }
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
        var rng = SplitMix64(seed: 12)
        for _ in 0..<3000 {
            check((0..<rng.below(16)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        var random = RandomJSON(seed: 13)
        for _ in 0..<3000 {
            var bytes = random.value().collationKey
            switch rng.below(3) {
            case 0: bytes[rng.below(bytes.count)] = UInt8(truncatingIfNeeded: rng.next())
            case 1: bytes.removeLast(rng.below(bytes.count) + 1)
            default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(bytes.count + 1))
            }
            check(bytes)
        }
        // Specific malformed numbers.
        #expect(throws: StrataError.self) { try decodeKey([0x33, 0x04, 0x33, 0x01]) }  // continuation, then the end
        #expect(throws: StrataError.self) { try decodeKey([0x33, 0x04, 0x33, 0x01, 0x00]) }  // trailing zero group
        #expect(throws: StrataError.self) { try decodeKey([0x33, 0xFF, 0xFF, 0x00]) }  // exponent out of range
        // 1 + 2^-63: 63 fraction bits at exponent 0 is neither an int nor a double.
        #expect(throws: StrataError.self) { try decodeKey([0x33, 0x04, 0x33, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02]) }
        #expect(throws: StrataError.self) { try decodeKey(Array(repeating: 0x50, count: 10_000)) }
        // An object whose keys are out of order.
        #expect(throws: StrataError.self) { try decodeKey([0x60, 0x40, 0x62, 0x00, 0x10, 0x40, 0x61, 0x00, 0x10, 0x00]) }
    }

    @Test("decoding from an array slice")
    func slice() throws {
        let bytes: [UInt8] = [0xAA] + JSON.array([1, "x"]).collationKey + [0x02]
        let slice = bytes[1...]
        var offset = slice.startIndex
        let value = try JSON.decodeCollationKey(slice, at: &offset)
        #expect(value == [1, "x"])
        #expect(offset == bytes.count - 1)
    }
}
