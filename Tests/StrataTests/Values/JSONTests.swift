import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Random JSON values for the randomized tests of the value layer.
struct RandomJSON {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    /// Integers that stress the edges: near 2^53, near 2^63, small, negative.
    mutating func int() -> Int64 {
        switch rng.below(8) {
        case 0: return Int64(rng.below(21)) - 10
        case 1: return Int64(bitPattern: rng.next())
        case 2: return (1 << 53) + Int64(rng.below(9)) - 4
        case 3: return -(1 << 53) + Int64(rng.below(9)) - 4
        case 4: return Int64.max - Int64(rng.below(4))
        case 5: return Int64.min + Int64(rng.below(4))
        case 6: return Int64(rng.below(2000)) - 1000
        default: return Int64(bitPattern: rng.next()) >> Int64(rng.below(63))
        }
    }

    mutating func double() -> Double {
        switch rng.below(10) {
        case 0: return Double(int())
        case 1: return rng.chance(500) ? 0.0 : -0.0
        case 2: return Double(bitPattern: rng.next())  // any bit pattern, possibly NaN or infinite
        case 3: return Double(Int64(rng.below(2000)) - 1000) / 8
        case 4: return 9_007_199_254_740_992.0 * (rng.chance(500) ? 1 : -1) + Double(rng.below(5)) * 2
        case 5: return 9_223_372_036_854_775_808.0 * (rng.chance(500) ? 1 : -1)
        case 6: return Double.leastNonzeroMagnitude * Double(rng.below(5) + 1)
        case 7: return Double.greatestFiniteMagnitude / Double(rng.below(5) + 1)
        default: return (Double(rng.next() >> 11) / Double(1 << 53) - 0.5) * 1e6
        }
    }

    /// Finite doubles only.
    mutating func finiteDouble() -> Double {
        while true {
            let d = double()
            if d.isFinite { return d }
        }
    }

    mutating func string() -> String {
        let alphabet: [Unicode.Scalar] = ["a", "b", "z", "A", "0", "\u{0}", "\u{1}", "\u{7F}", "\u{80}", "é", "\u{301}",
                                           "\u{FFFF}", "\u{FFFD}", "\u{10000}", "😀", "\u{10FFFF}", "\"", "\\", "\n", "/"]
        var s = String.UnicodeScalarView()
        for _ in 0..<rng.below(7) { s.append(alphabet[rng.below(alphabet.count)]) }
        return String(s)
    }

    mutating func date() -> Date {
        Date(timeIntervalSinceReferenceDate: Double(Int64(rng.below(2_000_000_000)) - 1_000_000_000) + Double(rng.below(1000)) / 1000)
    }

    /// A random value; `finite` restricts doubles to finite ones, `dates` allows `.date`.
    mutating func value(depth: Int = 0, finite: Bool = false, dates: Bool = true) -> JSON {
        let leafOnly = depth >= 4
        switch rng.below(leafOnly ? 7 : 9) {
        case 0: return .null
        case 1: return .bool(rng.chance(500))
        case 2, 3: return .int(int())
        case 4: return .double(finite ? finiteDouble() : double())
        case 5: return .string(string())
        case 6: return dates && rng.chance(300) ? .date(date()) : .string(string())
        case 7:
            return .array((0..<rng.below(5)).map { _ in value(depth: depth + 1, finite: finite, dates: dates) })
        default:
            var members: [String: JSON] = [:]
            for _ in 0..<rng.below(5) { members[string()] = value(depth: depth + 1, finite: finite, dates: dates) }
            return .object(members)
        }
    }
}

/// Structural identity, stricter than `==`: the same case and the same bits (int 1 is not double
/// 1.0; NaN equals NaN; -0.0 is not 0.0).
func identical(_ a: JSON, _ b: JSON) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case let (.bool(x), .bool(y)): return x == y
    case let (.int(x), .int(y)): return x == y
    case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
    case let (.string(x), .string(y)): return x.unicodeScalars.elementsEqual(y.unicodeScalars)
    case let (.date(x), .date(y)): return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
    case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
    case let (.object(x), .object(y)):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { identical(value, $0) } ?? false }
    default: return false
    }
}

@Suite("JSON text")
struct JSONTextTests {
    @Test("parses every kind of value")
    func parsesValues() throws {
        let value = try JSON(parsing: #" { "a" : [1, -2, 3.5, -0.25e2, 1E3, true, false, null], "b": {"c": "d\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"} } "#)
        #expect(identical(value["a"]!, [.int(1), .int(-2), .double(3.5), .double(-25), .double(1000), true, false, nil]))
        #expect(value["b"]?["c"] == .string("d\"\\/\u{8}\u{C}\n\r\té😀"))
    }

    @Test("integers that fit Int64 are ints, others doubles")
    func numberKinds() throws {
        #expect(identical(try JSON(parsing: "9223372036854775807"), .int(Int64.max)))
        #expect(identical(try JSON(parsing: "-9223372036854775808"), .int(Int64.min)))
        #expect(identical(try JSON(parsing: "9223372036854775808"), .double(9_223_372_036_854_775_808.0)))
        #expect(identical(try JSON(parsing: "-0"), .int(0)))
        #expect(identical(try JSON(parsing: "1.0"), .double(1)))
        #expect(identical(try JSON(parsing: "\"2026-01-01T00:00:00Z\""), .string("2026-01-01T00:00:00Z")))
    }

    @Test("errors name the byte offset")
    func errors() {
        let cases: [(String, Int)] = [
            ("", 0), ("  ", 2), ("[1,", 3), ("[1 2]", 3), ("{\"a\" 1}", 5), ("{\"a\":1,}", 7), ("01", 0), ("1.", 2),
            ("1e", 2), ("-", 1), ("tru", 0), ("nul", 0), ("\"abc", 0), ("\"a\\x\"", 2), ("\"\\ud800\"", 1),
            ("\"\\udc00\"", 1), ("\"\\u12g4\"", 5), ("[1] x", 4), ("\"a\u{1}\"", 2), ("1e400", 0), ("{1:2}", 1),
        ]
        for (text, offset) in cases {
            do {
                _ = try JSON(parsing: text)
                Issue.record("parsed invalid text \(text.debugDescription)")
            } catch let StrataError.invalidArgument(_, message) {
                #expect(message.hasPrefix("invalid JSON text at byte \(offset):"), "\(text.debugDescription): \(message)")
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
        // Invalid UTF-8 inside a string.
        #expect(throws: StrataError.self) { try JSON(parsing: Data([0x22, 0xC3, 0x28, 0x22])) }
    }

    @Test("nesting is bounded")
    func nesting() throws {
        let ok = String(repeating: "[", count: JSON.maximumNestingDepth) + String(repeating: "]", count: JSON.maximumNestingDepth)
        _ = try JSON(parsing: ok)
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: StrataError.self) { try JSON(parsing: deep) }
    }

    @Test("writes compact text; non-finite doubles as null; dates as ISO 8601")
    func writes() throws {
        let value: JSON = ["b": [1, 2.5, nil, .double(.infinity), .double(.nan)], "a": "x\n\u{1}\"",
                           "d": .date(Date(timeIntervalSince1970: 0))]
        #expect(value.description == #"{"a":"x\n\u0001\"","b":[1,2.5,null,null,null],"d":"1970-01-01T00:00:00.000Z"}"#)
        #expect(String(decoding: value.jsonData(sortedKeys: true), as: UTF8.self) == value.description)
        #expect(JSON.double(1).description == "1.0")
    }

    @Test("text round trip of random values")
    func roundTrip() throws {
        var random = RandomJSON(seed: 1)
        for _ in 0..<2000 {
            let value = random.value(finite: true, dates: false)
            let text = value.jsonData()
            let back = try JSON(parsing: text)
            #expect(identical(back, value) || back == value, "\(value)")
            #expect(back == value)
        }
    }
}
