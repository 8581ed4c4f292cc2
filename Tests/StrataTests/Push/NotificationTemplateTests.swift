import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Notification templates")
struct NotificationTemplateTests {
    private func render(_ format: String, fields: [String], values: [String], id: String = "S1", badge: Int = 1) throws -> String {
        try NotificationTemplate(format, fields: fields).render(values: values, subscriptionID: id, badge: { badge })
    }

    @Test("placeholders inside strings: named, indexed and the subscription id")
    func insideStrings() throws {
        let format = #"{"aps":{"alert":"Stock ${stock_name} is now valued ${last_price} ($[2], $[1])"},"id":"sub ${LS_MPN_subscription_ID}"}"#
        let template = try NotificationTemplate(format, fields: ["stock_name", "last_price"])
        #expect(template.format == format)
        #expect(!template.usesBadge)
        #expect(template.render(values: ["ACME", "512.5"], subscriptionID: "S-42", badge: { Issue.record("badge taken"); return 0 })
            == #"{"aps":{"alert":"Stock ACME is now valued 512.5 (512.5, ACME)"},"id":"sub S-42"}"#)
        // A member name may hold placeholders too; a `$` that starts none is text.
        #expect(try render(#"{"k_${a}":"$5 $ ${a}$"}"#, fields: ["a"], values: ["x"]) == #"{"k_x":"$5 $ x$"}"#)
    }

    @Test("placeholders outside strings become JSON strings; whitespace is kept")
    func outsideStrings() throws {
        let format = "{ \"a\" : ${x} ,\n \"b\": [ $[2], ${LS_MPN_subscription_ID} ], \"c\": {\"d\":${y}}}"
        let rendered = try render(format, fields: ["x", "y"], values: ["1.5", "say \"hi\""], id: "S9")
        #expect(rendered == "{ \"a\" : \"1.5\" ,\n \"b\": [ \"say \\\"hi\\\"\", \"S9\" ], \"c\": {\"d\":\"say \\\"hi\\\"\"}}")
        #expect(try JSON(parsing: rendered) == ["a": "1.5", "b": ["say \"hi\"", "S9"], "c": ["d": "say \"hi\""]])
    }

    @Test("values are escaped as JSON string content, never read as placeholders")
    func escaping() throws {
        let cases: [(String, String)] = [
            ("plain", "plain"),
            ("", ""),
            ("a\"b", #"a\"b"#),
            ("back\\slash", #"back\\slash"#),
            ("line\nbreak\r\ttab", #"line\nbreak\r\ttab"#),
            ("\u{0}\u{1}\u{8}\u{C}\u{1F}", #"\u0000\u0001\b\f\u001f"#),
            ("\u{7F}é😀\u{2028}\u{FEFF}\u{10FFFF}", "\u{7F}é😀\u{2028}\u{FEFF}\u{10FFFF}"),
            ("${a}$[1]", "${a}$[1]"),
            (#"\u0041\"}"#, #"\\u0041\\\"}"#),
            ("e\u{301}", "e\u{301}"),
        ]
        for (value, escaped) in cases {
            let rendered = try render(#"{"in":"<${a}>","out":${a}}"#, fields: ["a"], values: [value])
            #expect(rendered == "{\"in\":\"<\(escaped)>\",\"out\":\"\(escaped)\"}", "\(value.debugDescription)")
            let parsed = try JSON(parsing: rendered)
            #expect(parsed == ["in": .string("<\(value)>"), "out": .string(value)], "\(value.debugDescription)")
        }
    }

    @Test("the worst expansions fit: every byte escaped as \\u00XX, the longest badge numbers")
    func worstExpansion() throws {
        let template = try NotificationTemplate(#"{"aps":{"badge":"AUTO"},"a":"${a}${a}","b":${a},"id":${LS_MPN_subscription_ID}}"#, fields: ["a"])
        let value = String(repeating: "\u{1}", count: 5000) + "\u{1F}"
        for badge in [Int.min, Int.max, 0] {
            let rendered = template.render(values: [value], subscriptionID: value, badge: { badge })
            #expect(rendered.utf8.count == template.format.utf8.count - template.parts.reduce(0) { $0 + $1.end - $1.start } + 4 * 5001 * 6 + 2 * 2 + String(badge).utf8.count)
            #expect(try JSON(parsing: rendered) == ["aps": ["badge": .int(Int64(badge))], "a": .string(value + value), "b": .string(value), "id": .string(value)])
        }
    }

    @Test("the AUTO badge at aps.badge becomes a number, taken once per notification")
    func autoBadge() throws {
        let template = try NotificationTemplate(#"{"aps":{"alert":"${a}","badge":"AUTO"},"badge":"AUTO"}"#, fields: ["a"])
        #expect(template.usesBadge)
        var calls = 0
        let rendered = template.render(values: ["x"], subscriptionID: "S", badge: { calls += 1; return 12 })
        #expect(rendered == #"{"aps":{"alert":"x","badge":12},"badge":"AUTO"}"#)
        #expect(calls == 1)
        #expect(try JSON(parsing: rendered)["aps"]?["badge"] == .int(12))

        // Written with escapes and spaces, and twice (the member repeated): one number for both.
        let escaped = try NotificationTemplate(#"{ "\u0061ps" : { "b\u0061dge" : "\u0041UTO", "badge":"AUTO" } }"#, fields: [])
        calls = 0
        #expect(escaped.render(values: [], subscriptionID: "S", badge: { calls += 1; return 5 }) == #"{ "\u0061ps" : { "b\u0061dge" : 5, "badge":5 } }"#)
        #expect(calls == 1)

        // Anywhere else, or anything else, "AUTO" is text.
        for format in [
            #"{"badge":"AUTO"}"#, #"{"x":{"badge":"AUTO"}}"#, #"{"aps":{"alert":{"badge":"AUTO"}}}"#,
            #"{"aps":[{"badge":"AUTO"}]}"#, #"{"aps":{"badge":"AUTO "}}"#, #"{"aps":{"badge":"auto"}}"#,
            #"{"aps":{"badge":"AUTO${a}"}}"#, #"{"aps":{"badge":["AUTO"]}}"#, #"{"aps":{"AUTO":"badge"}}"#,
            #"{"android":{"data":{"badge":"AUTO"}}}"#,
        ] {
            let t = try NotificationTemplate(format, fields: ["a"])
            #expect(!t.usesBadge, "\(format)")
            #expect(t.render(values: ["-"], subscriptionID: "S", badge: { Issue.record("badge taken"); return 0 })
                == format.replacingOccurrences(of: "${a}", with: "-"))
        }
    }

    @Test("missing values render as empty strings; a format without holes renders as itself")
    func missingValues() throws {
        #expect(try render(#"{"a":"${x}${y}","b":$[2]}"#, fields: ["x", "y"], values: ["1"]) == #"{"a":"1","b":""}"#)
        let plain = #"{"aps": {"alert": "hello\nworld", "n": [1, -2.5e3, true, false, null]}}"#
        #expect(try render(plain, fields: [], values: []) == plain)
        #expect(try NotificationTemplate(plain, fields: []).parts.isEmpty)
    }

    @Test("a duplicated field name refers to its first occurrence; the subscription id name is reserved")
    func names() throws {
        #expect(try render(#"{"a":"${x}"}"#, fields: ["x", "x"], values: ["first", "second"]) == #"{"a":"first"}"#)
        #expect(try render(#"{"a":"${LS_MPN_subscription_ID}","b":"$[1]"}"#, fields: ["LS_MPN_subscription_ID"], values: ["v"], id: "S")
            == #"{"a":"S","b":"v"}"#)
        // Long field lists are looked up through an index: the same answers.
        let many = (0..<40).map { "f\($0)" } + ["f7"]
        let values = (0..<41).map { "v\($0)" }
        #expect(try render(#"{"a":"${f0}${f17}${f39}${f7}$[41]"}"#, fields: many, values: values) == #"{"a":"v0v17v39v7v40"}"#)
        #expect(throws: StrataError.self) { try NotificationTemplate(#"{"a":"${f40}"}"#, fields: many) }
        // Names are compared by their UTF-8 bytes: a decomposed "é" is another name.
        for fields in [["é"], many + ["é"]] {
            #expect(try render(#"{"a":"${é}"}"#, fields: fields, values: Array(repeating: "x", count: fields.count)) == #"{"a":"x"}"#)
            #expect(throws: StrataError.self) { try NotificationTemplate("{\"a\":\"${e\u{301}}\"}", fields: fields) }
        }
    }

    @Test("every error names its 1-based character position")
    func errors() throws {
        let deep = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        let cases: [(format: String, position: Int, message: String)] = [
            ("", 1, "must be a JSON object"),
            ("not json", 1, "must be a JSON object"),
            ("[1]", 1, "must be a JSON object"),
            ("  \"${a}\"", 3, "must be a JSON object"),
            (#"{"a":1"#, 7, "unexpected end"),
            (#"{"a":1}x"#, 8, "unexpected text after"),
            (#"{"a":"${nope}"}"#, 7, #"unknown field name "nope""#),
            (#"{"é":"${nope}"}"#, 7, #"unknown field name "nope""#),
            (#"{"a":"😀 ${nope}"}"#, 9, "unknown field name"),
            (#"{"a":"$[3]"}"#, 7, "$[3] out of range"),
            (#"{"a":"$[0]"}"#, 7, "$[0] out of range"),
            (#"{"a":"$[x]"}"#, 7, "invalid index"),
            (#"{"a":"$[]"}"#, 7, "invalid index"),
            (#"{"a":"$[99999999999999999999]"}"#, 7, "invalid index"),
            (#"{"a":"${}"}"#, 7, "empty placeholder name"),
            (#"{"a":"${a"}"#, 7, "unterminated placeholder"),
            (#"{"a":"x ${a\"}"}"#, 9, "unterminated placeholder"),
            (#"{"a":${a"#, 6, "unterminated placeholder"),
            (#"{"a":"$[1"}"#, 7, "unterminated placeholder"),
            (#"{"a":${a}1}"#, 6, "whole value"),
            (#"{"a":"x"${a}}"#, 9, "expected ',' or '}'"),
            (#"{"a":$x}"#, 6, "expected a value"),
            (#"{${a}:1}"#, 2, "expected a member name"),
            (#"{"a" 1}"#, 6, "expected ':'"),
            (#"{"a":[1 2]}"#, 9, "expected ',' or ']'"),
            (#"{"a":[1,]}"#, 9, "expected a value"),
            (#"{"a":"x"#, 6, "unterminated string"),
            ("{\"a\":\"x\ny\"}", 8, "unescaped control character"),
            (#"{"a":"\q"}"#, 7, "invalid escape"),
            (#"{"a":"\ud800"}"#, 7, "unpaired surrogate"),
            (#"{"a":"\udc00\ud800"}"#, 7, "unpaired surrogate"),
            (#"{"a":"\u12G4"}"#, 11, "invalid hex digit"),
            (#"{"a":1e999}"#, 6, "number out of range"),
            (#"{"a":01}"#, 6, "leading zero"),
            (#"{"a":-}"#, 7, "expected a digit"),
            (#"{"a":tru}"#, 6, "invalid literal"),
            (#"{"a":"#, 6, "unexpected end"),
            ("{\"a\":" + deep + "}", 69, "nesting deeper than 64"),
        ]
        for c in cases {
            #expect {
                _ = try NotificationTemplate(c.format, fields: ["a", "b"])
            } throws: { error in
                guard case StrataError.invalidArgument(_, let message) = error else { return false }
                let matches = message.hasPrefix("invalid notification format at position \(c.position): ") && message.contains(c.message)
                if !matches { Issue.record("\(c.format): \(message)") }
                return matches
            }
        }
        // The deepest nesting allowed, and the length limit.
        let deepest = "{\"a\":" + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}"
        #expect(throws: Never.self) { try NotificationTemplate(deepest, fields: []) }
        let long = "{\"a\":\"" + String(repeating: "x", count: NotificationTemplate.maximumLength) + "\"}"
        #expect {
            _ = try NotificationTemplate(long, fields: [])
        } throws: { error in
            guard case StrataError.invalidArgument(_, let message) = error else { return false }
            return message.contains("longer than the limit")
        }
    }

    @Test("random templates with random nasty values render to JSON that parses back to the expected values")
    func randomizedRoundTrip() throws {
        var random = RandomTemplate(seed: 12)
        for _ in 0..<1500 {
            let fields = random.fieldNames()
            let node = random.root(fieldCount: fields.count)
            let format = node.formatText(fields: fields)
            let template = try NotificationTemplate(format, fields: fields)
            #expect(template.format == format)
            for _ in 0..<3 {
                let values = fields.map { _ in random.nastyString() }
                let badge = random.rng.below(100_000)
                let id = random.nastyString()
                let rendered = template.render(values: values, subscriptionID: id, badge: { badge })
                let expected = node.expected(values: values, subscriptionID: id, badge: badge)
                let parsed = try JSON(parsing: rendered)
                #expect(parsed == expected, "\(format) with \(values)")
            }
        }
    }

    @Test("mutated formats either compile or throw invalidArgument; what compiles always renders valid JSON")
    func mutatedFormats() throws {
        var random = RandomTemplate(seed: 13)
        let alphabet = Array(#"{}[]":,$\ u0123456789aAbe-.+tfnl${a}$[1]"#.utf8) + [0x0A, 0x00, 0xC3, 0xA9]
        var compiled = 0
        for _ in 0..<4000 {
            let fields = random.fieldNames()
            var bytes = Array(random.root(fieldCount: fields.count).formatText(fields: fields).utf8)
            for _ in 0..<(1 + random.rng.below(4)) {
                let at = random.rng.below(bytes.count + 1)
                switch random.rng.below(3) {
                case 0: bytes.insert(alphabet[random.rng.below(alphabet.count)], at: at)
                case 1: if at < bytes.count { bytes.remove(at: at) }
                default: if at < bytes.count { bytes[at] = alphabet[random.rng.below(alphabet.count)] }
                }
            }
            let format = String(decoding: bytes, as: UTF8.self)
            let template: NotificationTemplate
            do {
                template = try NotificationTemplate(format, fields: fields)
            } catch let error as StrataError {
                guard case .invalidArgument(_, let message) = error, message.hasPrefix("invalid notification format at position ") else {
                    Issue.record("\(format): \(error)")
                    continue
                }
                continue
            }
            compiled += 1
            let values = fields.map { _ in random.nastyString() }
            let rendered = template.render(values: values, subscriptionID: random.nastyString(), badge: { 7 })
            #expect(throws: Never.self, "\(format)") { _ = try JSON(parsing: rendered) }
        }
        #expect(compiled > 100)
    }
}

/// A random format as a tree, which writes both the format text and the JSON its rendering
/// must parse to.
indirect enum TemplateNode {
    enum Reference {
        case named(Int), indexed(Int), subscriptionID
    }
    enum Piece {
        case text(String), reference(Reference)
    }
    case literal(JSON)
    case string([Piece])
    case placeholder(Reference)
    case autoBadge
    case object([(String, TemplateNode)])
    case array([TemplateNode])

    /// The format's text; every `$` of literal text is written `\u0024`, so that it starts no placeholder.
    func formatText(fields: [String]) -> String {
        switch self {
        case .literal(let value): return Self.protect(value.description)
        case .string(let pieces):
            return "\"" + pieces.map { piece in
                switch piece {
                case .text(let s):
                    // By scalars: a leading combining mark would join the quote in one Character.
                    let quoted = JSON.string(s).description.unicodeScalars
                    return Self.protect(String(String.UnicodeScalarView(quoted.dropFirst().dropLast())))
                case .reference(let r): return Self.text(r, fields: fields)
                }
            }.joined() + "\""
        case .placeholder(let r): return Self.text(r, fields: fields)
        case .autoBadge: return "\"AUTO\""
        case .object(let members):
            return "{" + members.map { Self.protect(JSON.string($0.0).description) + " : " + $0.1.formatText(fields: fields) }
                .joined(separator: ",") + "}"
        case .array(let elements): return "[ " + elements.map { $0.formatText(fields: fields) }.joined(separator: ", ") + "]"
        }
    }

    func expected(values: [String], subscriptionID: String, badge: Int) -> JSON {
        func value(_ r: Reference) -> String {
            switch r {
            case .named(let i), .indexed(let i): return values[i]
            case .subscriptionID: return subscriptionID
            }
        }
        switch self {
        case .literal(let v): return v
        case .string(let pieces):
            return .string(pieces.map { piece in
                switch piece {
                case .text(let s): return s
                case .reference(let r): return value(r)
                }
            }.joined())
        case .placeholder(let r): return .string(value(r))
        case .autoBadge: return .int(Int64(badge))
        case .object(let members):
            return .object(Dictionary(members.map { ($0.0, $0.1.expected(values: values, subscriptionID: subscriptionID, badge: badge)) },
                                      uniquingKeysWith: { _, last in last }))
        case .array(let elements): return .array(elements.map { $0.expected(values: values, subscriptionID: subscriptionID, badge: badge) })
        }
    }

    private static func protect(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "$" { out.append(contentsOf: "\\u0024".unicodeScalars) } else { out.append(scalar) }
        }
        return String(out)
    }

    private static func text(_ r: Reference, fields: [String]) -> String {
        switch r {
        case .named(let i): return "${\(fields[i])}"
        case .indexed(let i): return "$[\(i + 1)]"
        case .subscriptionID: return "${LS_MPN_subscription_ID}"
        }
    }
}

struct RandomTemplate {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    private static let names = ["a", "b", "last_price", "x.y", "é", "LS_MPN_field1", "$a", "a{b", "日本", "z_9"]

    /// Distinct field names (at least one).
    mutating func fieldNames() -> [String] {
        var names: [String] = []
        for name in Self.names where rng.chance(400) { names.append(name) }
        return names.isEmpty ? ["a"] : names
    }

    private static let scalars: [Unicode.Scalar] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "$", "{", "}", "[", "]", ":", ",", "\u{0}", "\u{1}", "\n", "\r", "\t", "\u{8}",
        "\u{C}", "\u{1F}", "\u{7F}", "\u{80}", "é", "\u{301}", "😀", "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}",
        "\u{10FFFF}", "日",
    ]
    private static let specials = ["${a}", "$[1]", "\\u0000", "\"}", "AUTO", "\\", "\\\"", "null", "}]}", "\u{0}"]

    mutating func nastyString() -> String {
        if rng.chance(100) { return Self.specials[rng.below(Self.specials.count)] }
        var s = String.UnicodeScalarView()
        for _ in 0..<rng.below(14) { s.append(Self.scalars[rng.below(Self.scalars.count)]) }
        return String(s)
    }

    mutating func reference(fieldCount: Int) -> TemplateNode.Reference {
        switch rng.below(5) {
        case 0: return .subscriptionID
        case 1, 2: return .indexed(rng.below(fieldCount))
        default: return .named(rng.below(fieldCount))
        }
    }

    /// A top-level object, sometimes with an `aps.badge` of `"AUTO"`.
    mutating func root(fieldCount: Int) -> TemplateNode {
        var members = objectMembers(fieldCount: fieldCount, depth: 1)
        if rng.chance(300) {
            var aps = objectMembers(fieldCount: fieldCount, depth: 2).filter { $0.0 != "badge" }
            aps.insert(("badge", .autoBadge), at: rng.below(aps.count + 1))
            members = members.filter { $0.0 != "aps" }
            members.insert(("aps", .object(aps)), at: rng.below(members.count + 1))
        } else {
            members = members.filter { $0.0 != "aps" }
        }
        return .object(members)
    }

    private mutating func objectMembers(fieldCount: Int, depth: Int) -> [(String, TemplateNode)] {
        var members: [(String, TemplateNode)] = []
        var seen = Set<String>()
        for _ in 0..<rng.below(5) {
            let key = rng.chance(300) ? ["aps", "badge", "alert", "data"][rng.below(4)] : nastyString()
            guard seen.insert(key).inserted, key != "badge" || depth != 2 else { continue }
            members.append((key, node(fieldCount: fieldCount, depth: depth + 1)))
        }
        return members
    }

    private mutating func node(fieldCount: Int, depth: Int) -> TemplateNode {
        switch rng.below(depth > 4 ? 4 : 6) {
        case 0:
            let literals: [JSON] = [nil, true, false, 0, -12, 3.25, 1e300, .string(nastyString())]
            return .literal(literals[rng.below(literals.count)])
        case 1: return .placeholder(reference(fieldCount: fieldCount))
        case 2, 3:
            var pieces: [TemplateNode.Piece] = []
            for _ in 0..<rng.below(5) {
                pieces.append(rng.chance(500) ? .reference(reference(fieldCount: fieldCount)) : .text(nastyString()))
            }
            return .string(pieces)
        case 4: return .object(objectMembers(fieldCount: fieldCount, depth: depth))
        default: return .array((0..<rng.below(4)).map { _ in node(fieldCount: fieldCount, depth: depth + 1) })
        }
    }
}
