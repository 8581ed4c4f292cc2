import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push trigger errors")
struct TriggerErrorTests {
    static let fields = ["x", "y"]

    /// Each row: expression, the expected 1-based character position, and a part of the message.
    @Test("syntax, name and type errors name the position and what was expected")
    func positions() {
        let rows: [(String, Int, String)] = [
            ("", 1, "expected an operand"),
            ("   ", 4, "expected an operand"),
            ("1 +", 4, "expected an operand"),
            ("Double.parseDouble(${x} > 500.0", 32, "expected ')'"),
            ("${z} == \"a\"", 1, "unknown field 'z'"),
            ("${} == \"a\"", 1, "expected a field name"),
            ("${x == \"a\"", 1, "expected '}'"),
            ("$[3].isEmpty()", 1, "out of range; expected 1…2"),
            ("$[0].isEmpty()", 1, "out of range"),
            ("$[99999999999999999999].isEmpty()", 1, "out of range"),
            ("$[].isEmpty()", 1, "expected a field number"),
            ("$[1 ].isEmpty()", 1, "expected a field number"),
            ("$x", 1, "expected '${name}' or '$[n]'"),
            ("Double.parseDouble(${x})", 1, "expected a boolean expression, found one of type double"),
            ("${x}", 1, "found one of type String"),
            ("null", 1, "found one of type null"),
            ("1 = 1", 3, "expected '=='"),
            ("1 > 2 )", 7, "unexpected ')'"),
            ("(1 > 2", 7, "expected ')' closing the '(' at character 1"),
            ("foo(1)", 1, "unknown name 'foo'"),
            ("Double.parse(${x}) > 1", 8, "unknown function Double.parse; expected Double.parseDouble"),
            ("Double(${x}) > 1", 7, "expected '.' after Double"),
            ("Double.parseDouble > 1", 20, "expected '(' after Double.parseDouble"),
            ("Math.pow(2, 3) > 1", 6, "expected Math.abs, min or max"),
            ("java.util.Math.max(1, 2) > 1", 1, "expected java.lang"),
            ("${x}.trim().isEmpty()", 6, "unknown method 'trim'"),
            ("${x}.length > 0", 13, "expected '(' after length"),
            ("${x}. > 0", 7, "expected a method name"),
            ("${x} > 1", 6, "'>' expects numbers, found String and int"),
            ("1 + true == 2", 3, "'+' expects numbers or a String, found int and boolean"),
            ("1 < 2 < 3", 7, "'<' expects numbers, found boolean and int"),
            ("1 && true", 3, "'&&' expects booleans"),
            ("!1", 1, "'!' expects a boolean"),
            ("-true", 1, "'-' expects a number"),
            ("${x} == 1", 6, "'==' cannot compare String with int"),
            ("true == 1", 6, "cannot compare boolean with int"),
            ("\"abc", 1, "unterminated string literal"),
            ("\"ab\ncd\".isEmpty()", 1, "unterminated string literal"),
            ("\"a\\qb\".isEmpty()", 3, "expected an escape"),
            ("\"a\\u12\".isEmpty()", 3, "four hexadecimal digits"),
            ("\"\\uD83D\".isEmpty()", 2, "lone UTF-16 surrogate"),
            ("\"\\uDE00\".isEmpty()", 2, "lone UTF-16 surrogate"),
            ("\"\\uD83Dx\".isEmpty()", 2, "lone UTF-16 surrogate"),
            ("2147483648 > 0", 1, "too large for int; only its negation"),
            ("-(2147483648) < 0", 3, "too large for int"),
            ("1 - 2147483648 < 0", 5, "too large for int"),
            ("9223372036854775808L > 0", 1, "too large for long"),
            ("2147483649 > 0", 1, "too large for int (write an L suffix"),
            ("99999999999999999999L > 0", 1, "too large for long"),
            ("0x100000000 > 0", 1, "too large for int"),
            ("1e999 > 0", 1, "too large"),
            ("1e-999 > 0", 1, "too small"),
            ("1e-50f > 0", 1, "too small"),
            ("0.0e-999 == 0", -1, ""),
            ("1.5.5 > 1", 1, "malformed number '1.5.5'"),
            ("1e > 0", 1, "malformed number"),
            ("08 > 1", 1, "malformed number"),
            ("1_ > 1", 1, "malformed number"),
            ("0x_1 > 1", 1, "malformed number"),
            ("0x > 1", 1, "malformed number"),
            ("0x1.8 > 1", 1, "malformed number"),
            ("12abc > 1", 1, "malformed number"),
            ("1L.5 > 1", 1, "malformed number"),
            ("true ? 1 : \"a\"", 6, "the two results of '?:'"),
            ("1 ? true : false", 3, "the condition before '?' must be a boolean"),
            ("true ? false", 13, "expected ':' of the '?' at character 6"),
            ("true : false", 6, "':' without a matching '?'"),
            ("Math.max(true ? 1 , 2) > 0", 19, "expected ':'"),
            ("1 , 2", 3, "',' outside the arguments"),
            ("()", 2, "expected an operand"),
            ("a--b", 2, "'--'"),
            ("1 --1 > 0", 3, "'--'"),
            ("1 ++1 > 0", 3, "'++'"),
            ("'a' == 'a'", 1, "character literals"),
            ("1 > 2 /* c */", 7, "comments"),
            ("1 > 2 // c", 7, "comments"),
            ("1 & 2", 3, "'&&'"),
            ("1 | 2", 3, "'||'"),
            ("1 ^ 2", 3, "bitwise"),
            ("1 << 2", 3, "shift"),
            ("1 >> 2", 3, "shift"),
            ("x += 1", 3, "assignment"),
            ("1 += 1", 3, "assignment"),
            ("Math.max(1) > 0", 1, "Math.max takes 2 arguments, found 1"),
            ("Math.max(1, 2, 3) > 0", 1, "takes 2 arguments, found 3"),
            ("Double.parseDouble() > 0", 1, "takes 1 argument, found 0"),
            ("${x}.length(1) > 0", 6, "length takes 0 arguments, found 1"),
            ("${x}.equals() ", 6, "equals takes 1 argument, found 0"),
            ("Math.abs(${x}) > 0", 1, "Math.abs expects a number, found String"),
            ("Double.parseDouble(1) > 0", 1, "expects a String, found int"),
            ("Math.min(1, \"a\") > 0", 1, "expects two numbers"),
            ("${x}.startsWith(1)", 6, "startsWith expects a String, found int"),
            ("${x}.startsWith(null)", 6, "null is accepted only"),
            ("(1).equals(\"1\")", 5, "equals() is a method of String, not of int"),
            ("null + \"a\" == \"a\"", 6, "null is accepted only"),
            ("(true ? null : ${x}) == null", 7, "null is accepted only"),
            ("é > 1", 1, "unexpected character 'é'"),
            ("1 > é", 5, "unexpected character 'é'"),
            ("\"éé\".equals(x)", 13, "unknown name 'x'"),
            ("\"👨‍👩‍👧\" + 1 == 2", 9, "cannot compare String with int"),
            ("1 > 2 ;", 7, "unexpected character ';'"),
            ("1 > 2 @", 7, "unexpected character '@'"),
            ("\\u0031 > 0", 1, "only inside a string literal"),
            ("1\u{A0}> 0", 2, "unexpected character"),
            ("true true", 6, "expected an operator or the end, found 'true'"),
            ("(true)(false)", 7, "expected an operator, found '('"),
            ("${x} ${y}", 6, "expected an operator or the end"),
        ]
        for (expression, position, part) in rows {
            let error = TriggerCheck.error(expression, fields: Self.fields)
            if position < 0 {
                #expect(error == nil, "\(expression) should compile: \(error?.message ?? "")")
                continue
            }
            guard let error else {
                Issue.record("\(expression) compiled")
                continue
            }
            #expect(error.position == position, "\(expression): \(error.message)")
            #expect(error.message.contains(part), "\(expression): \(error.message)")
        }
    }

    @Test("no fields: a reference is out of range or unknown")
    func noFields() {
        #expect(TriggerCheck.error("$[1].isEmpty()", fields: [])?.message.contains("has no fields") == true)
        #expect(TriggerCheck.error("${a}.isEmpty()", fields: [])?.message.contains("(none)") == true)
        #expect(TriggerCheck.error("true", fields: []) == nil)
    }

    @Test("nesting deeper than the limit is rejected where it passes the limit")
    func depth() {
        let limit = PushTrigger.maximumDepth
        let ok = String(repeating: "(", count: limit) + "true" + String(repeating: ")", count: limit)
        #expect(TriggerCheck.error(ok, fields: []) == nil)
        let deep = String(repeating: "(", count: limit + 1) + "true" + String(repeating: ")", count: limit + 1)
        let error = TriggerCheck.error(deep, fields: [])
        #expect(error?.position == limit + 1)
        #expect(error?.message.contains("nests deeper than \(limit)") == true)
        #expect(TriggerCheck.error(String(repeating: "!", count: limit) + "true", fields: []) == nil)
        #expect(TriggerCheck.error(String(repeating: "!", count: limit + 1) + "true", fields: [])?.position == limit + 1)
        // Far deeper than the limit, and deep in every construct: rejected, not a stack overflow.
        for opener in ["(", "!", "- ", "Math.abs(", "true ? ", "Math.max(1, ", "${x}.equals(", "(${x} + "] {
            let text = String(repeating: opener, count: 4000 / opener.utf8.count)
            let error = TriggerCheck.error(text + "1", fields: Self.fields)
            #expect(error?.message.contains("nests deeper") == true, "\(opener): \(error?.message ?? "compiled")")
        }
        // Combining characters: a position names the character (grapheme) holding the error.
        #expect(TriggerCheck.error("\"e\u{301}\" + \u{301}", fields: [])?.position == 6)
        // Long flat chains are not nesting: 800 operators in a row compile and evaluate.
        let chain = String(repeating: "1 + ", count: 800) + "1 == 801"
        #expect(chain.utf8.count < PushTrigger.maximumLength)
        #expect((try? PushTrigger(chain, fields: []))?.evaluate([]) == true)
        let conditions = String(repeating: "${x}.isEmpty() || ", count: 200) + "true"
        #expect((try? PushTrigger(conditions, fields: Self.fields))?.evaluate(["a", "b"]) == true)
        let strings = "(" + String(repeating: "${x} + ", count: 500) + "\"\").length() == 500"
        #expect((try? PushTrigger(strings, fields: Self.fields))?.evaluate(["a", "b"]) == true)
        // A right-nested tree as deep as the limit allows compiles and evaluates.
        var nested = "1"
        for _ in 0..<(limit - 1) { nested = "(1 + \(nested))" }
        #expect((try? PushTrigger(nested + " == \(limit)", fields: []))?.evaluate([]) == true)
    }

    @Test("the length limit counts bytes of UTF-8")
    func length() {
        let limit = PushTrigger.maximumLength
        let exact = "true" + String(repeating: " ", count: limit - 4)
        #expect(TriggerCheck.error(exact, fields: []) == nil)
        let error = TriggerCheck.error(exact + " ", fields: [])
        #expect(error?.position == limit + 1)
        #expect(error?.message.contains("expected at most \(limit)") == true)
        // 2-byte characters: the limit passes at character limit / 2 + 1.
        let wide = "\"" + String(repeating: "é", count: limit / 2) + "\".isEmpty()"
        #expect(TriggerCheck.error(wide, fields: [])?.position == limit / 2 + 1)
        #expect(TriggerCheck.error(String(repeating: "x", count: 1 << 20), fields: [])?.position == limit + 1)
    }
}
