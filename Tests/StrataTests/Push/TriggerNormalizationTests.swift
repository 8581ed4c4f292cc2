import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push trigger normalization and accepted patterns")
struct TriggerNormalizationTests {
    static let fields = ["stock_name", "last_price", "stock_name"]

    @Test("named arguments become indexed ones; everything else stays as written")
    func normalized() {
        let rows: [(String, String)] = [
            ("Double.parseDouble(${last_price}) > 500.0", "Double.parseDouble($[2]) > 500.0"),
            ("${stock_name}.equals(\"${stock_name}\")", "$[1].equals(\"${stock_name}\")"),
            ("${nope} == ${stock_name}", "${nope} == $[1]"),
            ("$[2]  >  ${last_price}", "$[2]  >  $[2]"),
            ("\"a\\\"${last_price}\" + ${last_price}", "\"a\\\"${last_price}\" + $[2]"),
            ("${last_price", "${last_price"),
            ("\"unterminated ${last_price}", "\"unterminated ${last_price}"),
            ("'${last_price}'", "'${last_price}'"),
            ("é${last_price}😀", "é$[2]😀"),
            ("", ""),
        ]
        for (expression, expected) in rows {
            #expect(PushTrigger.normalized(expression, fields: Self.fields) == expected, "\(expression)")
        }
        // The normalized form compiles to the same program.
        let a = try? PushTrigger("Double.parseDouble(${last_price}) > 500.0", fields: Self.fields)
        let b = try? PushTrigger(PushTrigger.normalized("Double.parseDouble(${last_price}) > 500.0", fields: Self.fields),
                                 fields: Self.fields)
        #expect(a?.program.code == b?.program.code)
    }

    @Test("a pattern must match the whole normalized trigger; a bad pattern is invalidArgument")
    func accepts() throws {
        let trigger = PushTrigger.normalized("Double.parseDouble(${last_price}) > 500.0", fields: Self.fields)
        let threshold = #"Double\.parseDouble\(\$\[\d+\]\) [<>]=? -?\d+(\.\d+)?"#
        #expect(try PushTrigger.accepts(trigger, patterns: [threshold]))
        #expect(try PushTrigger.accepts(trigger, patterns: ["x", threshold]))
        #expect(try !PushTrigger.accepts(trigger, patterns: ["Double"]))
        #expect(try !PushTrigger.accepts(trigger + " || true", patterns: [threshold]))
        #expect(try !PushTrigger.accepts(trigger, patterns: []))
        #expect(try PushTrigger.accepts(trigger, patterns: [".*"]))
        #expect(try !PushTrigger.accepts("a\nb", patterns: [".*"]))
        #expect(try PushTrigger.accepts("a\nb", patterns: ["(?s).*"]))
        #expect(throws: StrataError.self) { try PushTrigger.accepts(trigger, patterns: ["("]) }
        do {
            _ = try PushTrigger.accepts(trigger, patterns: [threshold, "[a"])
            Issue.record("a bad pattern was accepted")
        } catch let StrataError.invalidArgument(_, message) {
            #expect(message.contains("[a"))
        }
    }
}
