import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push trigger fuzzing")
struct TriggerFuzzTests {
    static let fields = ["price", "name", "count", "flag"]

    /// Pieces of valid and invalid expressions.
    static let vocabulary: [String] = [
        "${price}", "${name}", "${count}", "${flag}", "${nope}", "$[1]", "$[2]", "$[4]", "$[5]", "$[0]", "$", "${", "$[",
        "Double.parseDouble(", "Float.parseFloat(", "Integer.parseInt(", "Long.parseLong(", "Boolean.parseBoolean(",
        "Math.abs(", "Math.min(", "Math.max(", "java.lang.Math.max(", ".equals(", ".equalsIgnoreCase(", ".startsWith(",
        ".endsWith(", ".contains(", ".length()", ".isEmpty()", "Double", "Math", ".", "(", ")", ",", "?", ":", "!", "*", "/",
        "%", "+", "-", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "=", "&", "|", "^", "~", "--", "++", "<<", "'", "\\",
        "0", "1", "42", "-1", "2147483647", "2147483648", "-2147483648", "9223372036854775807L", "1L", "0x1F", "017", "0b1",
        "1_0", "1.5", ".5", "5.", "1e3", "1e999", "1e-999", "2.5f", "0x1p3", "1..2", "08", "1_", "\"\"", "\"a\"", "\"500\"",
        "\"\\u0041\"", "\"\\uD83D\"", "\"unterminated", "\"\\q\"", "true", "false", "null", "foo", " ", "\t", "\n", "é", "😀",
        "/*", "//", ";", "{", "}", "[", "]", "@", "#", "\u{0}", "\u{301}",
    ]

    /// Characters mutations insert.
    static let alphabet: [Character] = Array("()[]{}$.,?:!*/%+-<>=&|^~'\"\\ \t\n0123456789eEfFdDlLxXpP_abcnulltrueé😀\u{301}\u{0}")

    /// Valid expressions the mutations start from.
    static let corpus: [String] = [
        "Double.parseDouble(${price}) > 500.0",
        "Integer.parseInt($[3]) % 2 == 0 && ${name}.startsWith(\"AA\")",
        "Boolean.parseBoolean(${flag}) ? Math.abs(Double.parseDouble($[1])) >= 1e3 : ${name}.length() < 5",
        "!(${name} == \"x\") || Long.parseLong(${count}) * 3L != -9223372036854775808L",
        "(${name} + Integer.parseInt(${count}) + 1.5f).contains(\"1\")",
        "Math.max(Float.parseFloat(${price}), 0x1p3) - Math.min(1, 2L) / 0 > .5",
        "${name}.equalsIgnoreCase(\"\\u00e9\\t\\101\") != ${flag}.isEmpty() == true",
        "false ? 1 > 0 : true ? ${name}.endsWith($[2]) : null == ${name}",
    ]

    /// Values an evaluation gets: numbers, junk, empty, long, non-ASCII; sometimes fewer than the fields.
    static func values(_ random: inout SplitMix64) -> [String] {
        let pool = ["512.25", "499.99", "0", "-1", "1e308", "NaN", "Infinity", " 12 ", "0x1p3", "2147483647", "2147483648",
                    "-9223372036854775808", "true", "TRUE", "", "abc", "é", "😀", "٤٢", "1_000", "1.5f", "AAPL",
                    String(repeating: "9", count: 400), String(repeating: "x", count: 40_000)]
        let count = random.chance(100) ? random.below(Self.fields.count) : Self.fields.count
        return (0..<count).map { _ in pool[random.below(pool.count)] }
    }

    /// Compiles `text`: an error must be `.invalidArgument` with a position inside the text (or
    /// just past it); a program must return on random values.
    static func exercise(_ text: String, _ random: inout SplitMix64) -> Bool {
        do {
            let trigger = try PushTrigger(text, fields: Self.fields)
            for _ in 0..<4 { _ = trigger.evaluate(values(&random)) }
            _ = trigger.evaluate([])
            return true
        } catch let StrataError.invalidArgument(_, message) {
            let prefix = "trigger expression at character "
            #expect(message.hasPrefix(prefix), "\(text): \(message)")
            let position = Int(message.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
            #expect(position >= 1 && position <= text.count + 1, "\(text): \(message)")
            #expect(message.count < 600, "\(text): an overlong message")
            return false
        } catch {
            Issue.record("\(text): \(error)")
            return false
        }
    }

    @Test("random token soup: a positioned error or a program that returns")
    func tokenSoup() {
        var random = SplitMix64(seed: 12)
        var compiled = 0
        for _ in 0..<10_000 {
            let n = 1 + random.below(random.chance(500) ? 4 : 14)
            var text = ""
            for _ in 0..<n {
                text += Self.vocabulary[random.below(Self.vocabulary.count)]
                if random.chance(300) { text += " " }
            }
            if Self.exercise(text, &random) { compiled += 1 }
        }
        // The soup is mostly wrong, but some of it compiles: both paths are exercised.
        #expect(compiled > 20)
    }

    @Test("mutations of valid expressions: inserts, deletes, replacements, splices")
    func mutations() {
        var random = SplitMix64(seed: 7)
        var compiled = 0
        for c in Self.corpus {
            #expect(Self.exercise(c, &random), "\(c) should compile")
        }
        for _ in 0..<10_000 {
            var chars = Array(Self.corpus[random.below(Self.corpus.count)])
            for _ in 0..<(1 + random.below(4)) {
                let at = chars.isEmpty ? 0 : random.below(chars.count + 1)
                switch random.below(5) {
                case 0:
                    chars.insert(Self.alphabet[random.below(Self.alphabet.count)], at: at)
                case 1:
                    if at < chars.count { chars.remove(at: at) }
                case 2:
                    if at < chars.count { chars[at] = Self.alphabet[random.below(Self.alphabet.count)] }
                case 3:
                    // Duplicate a slice somewhere else.
                    let start = random.below(chars.count + 1)
                    let end = min(chars.count, start + random.below(12))
                    chars.insert(contentsOf: chars[start..<end], at: random.below(chars.count + 1))
                default:
                    // Splice a piece of the vocabulary in.
                    chars.insert(contentsOf: Array(Self.vocabulary[random.below(Self.vocabulary.count)]), at: at)
                }
            }
            if Self.exercise(String(chars), &random) { compiled += 1 }
        }
        #expect(compiled > 150)
    }

    @Test("extreme inputs: deep, long, huge numbers, every byte")
    func extremes() {
        var random = SplitMix64(seed: 3)
        var texts: [String] = [
            String(repeating: "(", count: 100_000), String(repeating: ")", count: 5000), String(repeating: "-", count: 4000),
            String(repeating: "!", count: 4096), String(repeating: "- ", count: 2048), String(repeating: "9", count: 4096) + " > 0",
            "\"" + String(repeating: "\\uD800", count: 600), String(repeating: "${price}", count: 600),
            String(repeating: "${price} + ", count: 400) + "\"\" == \"\"", String(repeating: "1 ? ", count: 1000),
            String(repeating: "true ? ", count: 60) + "true" + String(repeating: " : false", count: 60),
            String(repeating: "Math.abs(", count: 63) + "1" + String(repeating: ")", count: 63) + " > 0",
            String(repeating: "\u{301}", count: 3000), String(repeating: "😀", count: 1025),
        ]
        for byte in 0..<128 { texts.append("1 " + String(UnicodeScalar(UInt8(byte))) + " 1") }
        for text in texts { _ = Self.exercise(text, &random) }
        // The deep conditional and the deep abs compile, within the limit.
        #expect((try? PushTrigger(texts[10], fields: []))?.evaluate([]) == true)
        #expect((try? PushTrigger(texts[11], fields: []))?.evaluate([]) == true)
    }

    @Test("random well-typed expressions compile and evaluate as a direct reference evaluation says")
    func reference() throws {
        var random = SplitMix64(seed: 99)
        var seen: [TriggerCheck.Outcome: Int] = [:]
        for _ in 0..<3000 {
            let values = ["\(Int64(random.below(7) - 3) * 1_000_000_007 / 7)", "AAPL",
                          ["1.5", "-0.0", "1e300", "x", "NaN", "7"][random.below(6)], ["true", "False", "", "2"][random.below(4)],
                          ["12", "-2147483648", "9223372036854775807", "0", "1.0", "x"][random.below(6)]]
            var generator = ReferenceGenerator(random: random, values: values)
            let (text, value) = generator.expression(.boolean, depth: 0)
            random = generator.random
            guard text.utf8.count < PushTrigger.maximumLength - 3 else { continue }
            let outcome = try TriggerCheck.outcome(text, fields: ReferenceGenerator.fields, values: values)
            let expected: TriggerCheck.Outcome
            switch value {
            case .boolean(true): expected = .holds
            case .boolean(false): expected = .doesNotHold
            default: expected = .fails
            }
            #expect(outcome == expected, "\(text) on \(values)")
            seen[expected, default: 0] += 1
        }
        // Each outcome is well represented.
        #expect(seen.count == 3 && seen.values.allSatisfy { $0 > 300 }, "\(seen)")
    }
}

/// Generates random well-typed expressions together with their value, computed directly by
/// Java's rules (a tree-walking evaluation independent of the compiler's code).
struct ReferenceGenerator {
    static let fields = ["i", "s", "d", "b", "l"]

    enum Value: Equatable {
        case boolean(Bool), int(Int32), long(Int64), double(Double), string(String), error
    }

    enum Kind: CaseIterable {
        case boolean, int, long, double, string
    }

    var random: SplitMix64
    let values: [String]

    mutating func expression(_ kind: Kind, depth: Int) -> (String, Value) {
        let leaf = depth >= 4 || random.chance(250)
        switch kind {
        case .int: return leaf ? intLeaf() : intNode(depth)
        case .long: return leaf ? longLeaf() : longNode(depth)
        case .double: return leaf ? doubleLeaf() : doubleNode(depth)
        case .string: return leaf ? stringLeaf() : stringNode(depth)
        case .boolean: return leaf ? booleanLeaf() : booleanNode(depth)
        }
    }

    // MARK: Leaves

    private mutating func intLeaf() -> (String, Value) {
        switch random.below(4) {
        case 0:
            let v = [Int32(0), 1, -1, 7, 1000, .max, .min, 65536][random.below(8)]
            return (v == .min ? "(-2147483648)" : "(\(v))", .int(v))
        case 1:
            return ("Integer.parseInt(${i})", Int32(values[0]).map { .int($0) } ?? .error)
        case 2:
            return ("Integer.parseInt($[5])", Int32(values[4]).map { .int($0) } ?? .error)
        default:
            return ("${s}.length()", .int(Int32(values[1].utf16.count)))
        }
    }

    private mutating func longLeaf() -> (String, Value) {
        switch random.below(3) {
        case 0:
            let v = [Int64(0), 3, -5, .max, .min, 1 << 40][random.below(6)]
            return (v == .min ? "(-9223372036854775808L)" : "(\(v)L)", .long(v))
        case 1:
            return ("Long.parseLong(${l})", Int64(values[4]).map { .long($0) } ?? .error)
        default:
            return ("Long.parseLong(${i})", Int64(values[0]).map { .long($0) } ?? .error)
        }
    }

    private mutating func doubleLeaf() -> (String, Value) {
        switch random.below(3) {
        case 0:
            let v = [0.0, 0.5, -2.25, 1e300, 3.0, 1e-3][random.below(6)]
            return ("(\(v))", .double(v))
        case 1:
            let text = values[2]
            let v: Value = text == "x" ? .error : .double(Double(text) ?? .nan)
            return ("Double.parseDouble(${d})", v)
        default:
            return ("Double.parseDouble(${i})", Double(values[0]).map { .double($0) } ?? .error)
        }
    }

    private mutating func stringLeaf() -> (String, Value) {
        switch random.below(3) {
        case 0: return ("${s}", .string(values[1]))
        case 1: return ("$[4]", .string(values[3]))
        default:
            let v = ["", "AA", "PL", "AAPL", "true"][random.below(5)]
            return ("\"\(v)\"", .string(v))
        }
    }

    private mutating func booleanLeaf() -> (String, Value) {
        switch random.below(3) {
        case 0:
            let v = random.chance(500)
            return (v ? "true" : "false", .boolean(v))
        case 1:
            return ("Boolean.parseBoolean(${b})", .boolean(values[3].lowercased() == "true"))
        default:
            return ("${b}.isEmpty()", .boolean(values[3].isEmpty))
        }
    }

    // MARK: Nodes

    private mutating func intNode(_ depth: Int) -> (String, Value) {
        switch random.below(4) {
        case 0, 1:
            let (a, x) = expression(.int, depth: depth + 1)
            let (b, y) = expression(.int, depth: depth + 1)
            let op = ["+", "-", "*", "/", "%"][random.below(5)]
            guard case .int(let p) = x, case .int(let q) = y else { return ("(\(a) \(op) \(b))", .error) }
            let r: Int32?
            switch op {
            case "+": r = p &+ q
            case "-": r = p &- q
            case "*": r = p &* q
            case "/": r = q == 0 ? nil : p.dividedReportingOverflow(by: q).partialValue
            default: r = q == 0 ? nil : p.remainderReportingOverflow(dividingBy: q).partialValue
            }
            return ("(\(a) \(op) \(b))", r.map { .int($0) } ?? .error)
        case 2:
            let (a, x) = expression(.int, depth: depth + 1)
            let f = ["Math.abs", "-"][random.below(2)]
            guard case .int(let p) = x else { return ("\(f)(\(a))", .error) }
            return ("\(f)(\(a))", .int(p < 0 || f == "-" ? 0 &- p : p))
        default:
            return conditional(.int, depth)
        }
    }

    private mutating func longNode(_ depth: Int) -> (String, Value) {
        switch random.below(3) {
        case 0, 1:
            let (a, x) = expression(random.chance(500) ? .long : .int, depth: depth + 1)
            let (b, y) = expression(.long, depth: depth + 1)
            let op = ["+", "-", "*", "/", "%", "max", "min"][random.below(7)]
            let text = op.count == 3 ? "Math.\(op)(\(a), \(b))" : "(\(a) \(op) \(b))"
            guard let p = Self.long(x), let q = Self.long(y) else { return (text, .error) }
            let r: Int64?
            switch op {
            case "+": r = p &+ q
            case "-": r = p &- q
            case "*": r = p &* q
            case "/": r = q == 0 ? nil : p.dividedReportingOverflow(by: q).partialValue
            case "%": r = q == 0 ? nil : p.remainderReportingOverflow(dividingBy: q).partialValue
            case "max": r = max(p, q)
            default: r = min(p, q)
            }
            return (text, r.map { .long($0) } ?? .error)
        default:
            return conditional(.long, depth)
        }
    }

    private mutating func doubleNode(_ depth: Int) -> (String, Value) {
        switch random.below(3) {
        case 0, 1:
            let kinds: [Kind] = [.double, .int, .long]
            let (a, x) = expression(kinds[random.below(3)], depth: depth + 1)
            let (b, y) = expression(.double, depth: depth + 1)
            let op = ["+", "-", "*", "/", "%"][random.below(5)]
            guard let p = Self.double(x), let q = Self.double(y) else { return ("(\(a) \(op) \(b))", .error) }
            let r: Double
            switch op {
            case "+": r = p + q
            case "-": r = p - q
            case "*": r = p * q
            case "/": r = p / q
            default: r = p.truncatingRemainder(dividingBy: q)
            }
            return ("(\(a) \(op) \(b))", .double(r))
        default:
            return conditional(.double, depth)
        }
    }

    private mutating func stringNode(_ depth: Int) -> (String, Value) {
        switch random.below(3) {
        case 0, 1:
            let kinds: [Kind] = [.string, .int, .long, .boolean]
            let (a, x) = expression(.string, depth: depth + 1)
            let (b, y) = expression(kinds[random.below(4)], depth: depth + 1)
            guard case .string(let p) = x else { return ("(\(a) + \(b))", .error) }
            switch y {
            case .string(let q): return ("(\(a) + \(b))", .string(p + q))
            case .int(let q): return ("(\(a) + \(b))", .string(p + String(q)))
            case .long(let q): return ("(\(a) + \(b))", .string(p + String(q)))
            case .boolean(let q): return ("(\(a) + \(b))", .string(p + (q ? "true" : "false")))
            default: return ("(\(a) + \(b))", .error)
            }
        default:
            return conditional(.string, depth)
        }
    }

    private mutating func booleanNode(_ depth: Int) -> (String, Value) {
        switch random.below(6) {
        case 0:
            // A numeric comparison, with promotion.
            let kinds: [Kind] = [.int, .long, .double]
            let (a, x) = expression(kinds[random.below(3)], depth: depth + 1)
            let (b, y) = expression(kinds[random.below(3)], depth: depth + 1)
            let op = ["<", "<=", ">", ">=", "==", "!="][random.below(6)]
            let text = "(\(a) \(op) \(b))"
            if x == .error || y == .error { return (text, .error) }
            if case .double = x, let p = Self.double(x), let q = Self.double(y) {
                return (text, .boolean(Self.compare(op, p, q)))
            }
            if case .double = y, let p = Self.double(x), let q = Self.double(y) {
                return (text, .boolean(Self.compare(op, p, q)))
            }
            guard let p = Self.long(x), let q = Self.long(y) else { return (text, .error) }
            return (text, .boolean(Self.compare(op, p, q)))
        case 1:
            let (a, x) = expression(.boolean, depth: depth + 1)
            let (b, y) = expression(.boolean, depth: depth + 1)
            let and = random.chance(500)
            let text = "(\(a) \(and ? "&&" : "||") \(b))"
            guard case .boolean(let p) = x else { return (text, .error) }
            if and, !p { return (text, .boolean(false)) }
            if !and, p { return (text, .boolean(true)) }
            return (text, y)
        case 2:
            let (a, x) = expression(.boolean, depth: depth + 1)
            guard case .boolean(let p) = x else { return ("!\(a)", .error) }
            return ("!\(a)", .boolean(!p))
        case 3:
            let (a, x) = expression(.string, depth: depth + 1)
            let (b, y) = expression(.string, depth: depth + 1)
            let method = [".equals", ".startsWith", ".endsWith", ".contains", " == ", " != "][random.below(6)]
            let text = method.hasPrefix(".") ? "\(a)\(method)(\(b))" : "(\(a)\(method)\(b))"
            guard case .string(let p) = x, case .string(let q) = y else { return (text, .error) }
            let (pb, qb) = (Array(p.utf8), Array(q.utf8))
            switch method {
            case ".equals", " == ": return (text, .boolean(pb == qb))
            case " != ": return (text, .boolean(pb != qb))
            case ".startsWith": return (text, .boolean(pb.starts(with: qb)))
            case ".endsWith": return (text, .boolean(pb.reversed().starts(with: qb.reversed())))
            default: return (text, .boolean(qb.isEmpty || (0...max(0, pb.count - qb.count)).contains { pb.dropFirst($0).starts(with: qb) }))
            }
        case 4:
            let (a, x) = expression(.boolean, depth: depth + 1)
            let (b, y) = expression(.boolean, depth: depth + 1)
            let equal = random.chance(500)
            let text = "(\(a) \(equal ? "==" : "!=") \(b))"
            guard case .boolean(let p) = x, case .boolean(let q) = y else { return (text, .error) }
            return (text, .boolean(equal ? p == q : p != q))
        default:
            return conditional(.boolean, depth)
        }
    }

    private mutating func conditional(_ kind: Kind, _ depth: Int) -> (String, Value) {
        let (c, v) = expression(.boolean, depth: depth + 1)
        let (a, x) = expression(kind, depth: depth + 1)
        let (b, y) = expression(kind, depth: depth + 1)
        let text = "(\(c) ? \(a) : \(b))"
        guard case .boolean(let p) = v else { return (text, .error) }
        return (text, p ? x : y)
    }

    // MARK: Promotion

    private static func long(_ v: Value) -> Int64? {
        switch v {
        case .int(let x): return Int64(x)
        case .long(let x): return x
        default: return nil
        }
    }

    private static func double(_ v: Value) -> Double? {
        switch v {
        case .int(let x): return Double(x)
        case .long(let x): return Double(x)
        case .double(let x): return x
        default: return nil
        }
    }

    private static func compare<T: Comparable>(_ op: String, _ a: T, _ b: T) -> Bool {
        switch op {
        case "<": return a < b
        case "<=": return a <= b
        case ">": return a > b
        case ">=": return a >= b
        case "==": return a == b
        default: return a != b
        }
    }
}
