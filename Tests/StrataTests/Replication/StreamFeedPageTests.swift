import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat

/// The direct reader of `_strata/changes` pages against the `JSON` tree it replaces: on random
/// pages (members in any order, given twice, of the wrong type, with escaped names, unknown
/// members, whitespace) and on those pages truncated or with a byte changed, both accept the same
/// texts and read the same values.
@Suite struct StreamFeedPageTests {
    typealias Change = StreamFeedPage.Change

    /// What the replicator read from a page through the `JSON` tree (its accessors), or nil for
    /// a page it refused.
    static func reference(_ text: Data) -> StreamFeedPage? {
        guard let page = try? JSON(parsing: text), case .array(let results)? = page["results"],
              let last = unsigned(page["last_seq"]) else { return nil }
        let changes = results.map { r -> Change in
            var c = Change()
            switch r["kind"]?.stringValue {
            case "message": c.kind = .message
            case "delete": c.kind = .deletion
            case "event": c.kind = .event
            default: c.kind = .other
            }
            c.seq = unsigned(r["seq"])
            c.channel = r["channel"]?.stringValue
            c.series = r["series"]?.stringValue
            c.timetoken = unsigned(r["timetoken"])
            c.id = r["id"]?.stringValue
            c.message = r["message"]
            c.meta = r["meta"].flatMap { v -> JSON? in if case .null = v { return nil } else { return v } }
            c.publisher = r["publisher"]?.stringValue
            c.from = unsigned(r["from"])
            c.until = unsigned(r["until"])
            c.sequence = unsigned(r["sequence"])
            if case .int(let t)? = r["timestamp"] { c.timestamp = t }
            c.author = r["author"]?.stringValue
            c.value = r["value"]
            c.original = r["original"].flatMap { v -> JSON? in if case .null = v { return nil } else { return v } }
            return c
        }
        return StreamFeedPage(changes: changes, lastSequence: last)
    }

    static func unsigned(_ value: JSON?) -> UInt64? {
        switch value {
        case .int(let n)? where n >= 0: return UInt64(n)
        case .string(let s)?: return UInt64(s)
        default: return nil
        }
    }

    static func read(_ text: Data) -> StreamFeedPage? { try? StreamFeedPage(parsing: text) }

    static func same(_ a: StreamFeedPage?, _ b: StreamFeedPage?) -> Bool {
        a?.changes == b?.changes && a?.lastSequence == b?.lastSequence
    }

    // Values of each member's kind, right and wrong types, in the forms the feed and others write.
    static let numbers = ["0", "123", "\"123\"", "\"18446744073709551615\"", "\"18446744073709551616\"", "-5", "1.5", "1e3",
                          "\"12a\"", "\"\"", "null", "true", "\"1\\u0032\"", "9223372036854775807", "9223372036854775808",
                          "\"+7\"", "{}", "[1]", "\"0017\"", "-0"]
    static let timestamps = ["-42", "0", "1700000000000", "1.0", "\"5\"", "null", "-9223372036854775808", "[]"]
    static let names = ["\"room\"", "\"chat/room1\"", "\"ro\\u006fm\"", "\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"writer-4f2a9c0e11d84b7a\"",
                        "5", "null", "\"\"", "\"é\\n\"", "\"\\ud83d\\ude00\""]
    static let kinds = ["\"message\"", "\"delete\"", "\"event\"", "\"document\"", "\"ev\\u0065nt\"", "7", "\"Event\""]
    static let values = ["null", "1.25", "\"hi\"", "{\"a\":[1,2,{\"b\":null}]}", "[]", "-0.0", "1e-7", "true", "42",
                         "{\"z\":1,\"z\":2}", "\"\\\"quoted\\\"\""]
    static let members: [(String, [String])] = [
        ("seq", numbers), ("kind", kinds), ("channel", names), ("series", names), ("timetoken", numbers), ("id", names),
        ("message", values), ("meta", values), ("publisher", names), ("from", numbers), ("until", numbers),
        ("sequence", numbers), ("timestamp", timestamps), ("author", names), ("value", values), ("original", numbers),
        ("extra", values), ("s\\u0065q", numbers), ("\\u006bind", kinds), ("", values),
    ]

    static func space(_ random: inout SplitMix64) -> String {
        random.chance(150) ? [" ", "\n", "\t ", "\r\n  "][random.below(4)] : ""
    }

    static func change(_ random: inout SplitMix64) -> String {
        if random.chance(30) { return ["1", "null", "[{\"seq\":1}]", "\"x\""][random.below(4)] }
        var parts: [String] = []
        for _ in 0..<random.below(12) {
            let (name, pool) = members[random.below(members.count)]
            parts.append("\(space(&random))\"\(name)\"\(space(&random)):\(space(&random))\(pool[random.below(pool.count)])\(space(&random))")
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    static func page(_ random: inout SplitMix64) -> String {
        var members: [String] = []
        let results = (0..<random.below(20)).map { _ in space(&random) + change(&random) + space(&random) }
        members.append("\"results\":[" + results.joined(separator: ",") + "]")
        members.append("\"last_seq\":" + (random.chance(900) ? String(random.below(1_000_000)) : numbers[random.below(numbers.count)]))
        if random.chance(200) { members.append("\"pending\":{\"x\":[1,\"y\"]}") }
        if random.chance(50) { members.append("\"results\":" + (random.chance(500) ? "[]" : "{}")) }
        if random.chance(50) { members.removeFirst() }
        members.shuffle(using: &random)
        return (random.chance(20) ? "\u{FEFF}" : "") + space(&random) + "{" + members.joined(separator: ",") + "}" + space(&random)
    }

    @Test("random pages read the same as through the JSON tree: every member, in any order, of any type, given twice, escaped")
    func randomPagesMatchTheTree() {
        var random = SplitMix64(seed: 0x5EED_FEED)
        var accepted = 0
        for i in 0..<3_000 {
            let text = Data(Self.page(&random).utf8)
            let expected = Self.reference(text)
            let got = Self.read(text)
            #expect(Self.same(got, expected), "page \(i): \(String(decoding: text, as: UTF8.self))")
            if expected != nil { accepted += 1 }
        }
        #expect(accepted > 2_000, "the generator made too few valid pages to test anything: \(accepted)")
    }

    @Test("a page cut short or with a byte changed is refused exactly when the JSON tree refuses it, and read the same otherwise")
    func damagedPagesMatchTheTree() {
        var random = SplitMix64(seed: 0xDA3A_6ED)
        for i in 0..<3_000 {
            var bytes = Array(Self.page(&random).utf8)
            if random.chance(300) {
                bytes.removeLast(1 + random.below(bytes.count))
            } else {
                let replacements: [UInt8] = [0x22, 0x5C, 0x2C, 0x3A, 0x7B, 0x7D, 0x5B, 0x5D, 0x30, 0x2D, 0x00, 0x1F, 0xC3, 0xFF, 0x20, 0x65]
                bytes[random.below(bytes.count)] = replacements[random.below(replacements.count)]
            }
            let text = Data(bytes)
            #expect(Self.same(Self.read(text), Self.reference(text)), "page \(i): \(String(decoding: text, as: UTF8.self).debugDescription)")
        }
    }

    @Test("a page the gateway writes: a message, a deletion, an event and a document")
    func gatewayPage() throws {
        let text = #"""
        {"results":[{"seq":7,"kind":"message","channel":"chat/room1","timetoken":"17000000000000001","id":"00112233445566778899aabbccddeeff","message":{"text":"hi"},"meta":null,"publisher":"ann"},
        {"seq":8,"kind":"delete","channel":"chat/room1","from":"17000000000000000","until":"17000000000000002"},
        {"seq":9,"kind":"event","series":"sensors/t","sequence":0,"timestamp":1700000000000,"author":"w","value":21.5},
        {"seq":10,"kind":"event","series":"sensors/t","sequence":1,"timestamp":1700000000001,"author":"w","value":22,"original":0},
        {"seq":11,"kind":"document","id":"doc","rev":"1-ab","deleted":true}],"last_seq":11}
        """#
        let page = try StreamFeedPage(parsing: Data(text.utf8))
        #expect(page.lastSequence == 11)
        #expect(page.changes.map(\.kind) == [.message, .deletion, .event, .event, .other])
        #expect(page.changes.map(\.seq) == [7, 8, 9, 10, 11])
        let m = page.changes[0]
        #expect(m.channel == "chat/room1" && m.timetoken == 17_000_000_000_000_001 && m.publisher == "ann")
        #expect(m.id == "00112233445566778899aabbccddeeff" && m.message == ["text": "hi"] && m.meta == nil)
        #expect(page.changes[1].from == 17_000_000_000_000_000 && page.changes[1].until == 17_000_000_000_000_002)
        let e = page.changes[3]
        #expect(e.series == "sensors/t" && e.sequence == 1 && e.timestamp == 1_700_000_000_001 && e.author == "w")
        #expect(e.value == .int(22) && e.original == .int(0))
        #expect(page.changes[2].original == nil && page.changes[2].value == .double(21.5))
    }

    @Test("a page that is not JSON, not an object, or lacks results or last_seq is an invalid-argument error that says which")
    func refusedPages() {
        for (text, reason) in [("", "not an object"), ("[]", "not an object"), ("{\"results\":[]}", "no last_seq"),
                               ("{\"last_seq\":1}", "no results array"), ("{\"results\":{},\"last_seq\":1}", "no results array"),
                               ("{\"results\":[],\"last_seq\":-1}", "no last_seq"), ("{\"results\":[{\"seq\":1]],\"last_seq\":1}", "at byte"),
                               ("{\"results\":[],\"last_seq\":1} x", "after the value")] {
            #expect {
                try StreamFeedPage(parsing: Data(text.utf8))
            } throws: { error in
                guard case .invalidArgument(_, let why)? = error as? StrataError else { return false }
                return why.contains(reason)
            }
        }
    }

    @Test("authors and names repeated across results read as equal strings, more distinct ones than it remembers included")
    func repeatedStrings() throws {
        let authors = (0..<9).map { "author-\($0)-with-a-long-name" }
        let results = (0..<90).map { i in
            #"{"seq":\#(i),"kind":"event","series":"s\#(i % 7)","sequence":\#(i),"timestamp":0,"author":"\#(authors[(i * 5) % 9])","value":1}"#
        }
        let page = try StreamFeedPage(parsing: Data(("{\"results\":[" + results.joined(separator: ",") + "],\"last_seq\":90}").utf8))
        #expect(page.changes.map(\.author) == (0..<90).map { authors[($0 * 5) % 9] })
        #expect(page.changes.map(\.series) == (0..<90).map { "s\($0 % 7)" })
    }
}
