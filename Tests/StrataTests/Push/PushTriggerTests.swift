import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push trigger semantics")
struct PushTriggerTests {
    typealias Outcome = TriggerCheck.Outcome
    static let fields = ["a", "b", "c"]

    /// Checks each row: expression, field values, expected outcome.
    private func check(_ rows: [(String, [String], Outcome)], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (expression, values, expected) in rows {
            let found = try TriggerCheck.outcome(expression, fields: Self.fields, values: values)
            #expect(found == expected, "\(expression) on \(values)", sourceLocation: sourceLocation)
        }
    }

    @Test("the example of the contract")
    func example() throws {
        let trigger = try PushTrigger("Double.parseDouble(${last_price}) > 500.0", fields: ["stock_name", "last_price"])
        #expect(trigger.expression == "Double.parseDouble(${last_price}) > 500.0")
        #expect(trigger.fields == ["stock_name", "last_price"])
        #expect(trigger.evaluate(["ACME", "512.25"]))
        #expect(!trigger.evaluate(["ACME", "499.99"]))
        #expect(!trigger.evaluate(["ACME", "500.0"]))
        #expect(!trigger.evaluate(["ACME", "n/a"]))
        #expect(!trigger.evaluate(["ACME"]))
        #expect(!trigger.evaluate([]))
        #expect(trigger == (try PushTrigger("Double.parseDouble(${last_price}) > 500.0", fields: ["stock_name", "last_price"])))
    }

    @Test("Double.parseDouble and Float.parseFloat follow Java's grammar")
    func parseDouble() throws {
        let gt = "Double.parseDouble(${a}) > 500.0"
        try check([
            (gt, ["512.25"], .holds), (gt, ["499.99"], .doesNotHold), (gt, ["500"], .doesNotHold),
            (gt, [" \t512.25\n "], .holds), (gt, ["512.25d"], .holds), (gt, ["512.25F"], .holds),
            (gt, ["+600"], .holds), (gt, ["-600"], .doesNotHold), (gt, ["5e2"], .doesNotHold), (gt, ["5.01E2"], .holds),
            (gt, ["0x1p9"], .holds), (gt, ["0X1.0P9d"], .holds), (gt, ["Infinity"], .holds), (gt, ["-Infinity"], .doesNotHold),
            (gt, ["NaN"], .doesNotHold), (gt, ["600."], .holds), (gt, [".6e3"], .holds),
            (gt, [""], .fails), (gt, ["   "], .fails), (gt, ["abc"], .fails), (gt, ["600 1"], .fails), (gt, ["6e"], .fails),
            (gt, ["6e+"], .fails), (gt, ["."], .fails), (gt, ["0x10"], .fails), (gt, ["inf"], .fails), (gt, ["nan"], .fails),
            (gt, ["600dd"], .fails), (gt, ["1_000"], .fails), (gt, ["６００"], .fails), (gt, ["+"], .fails),
            ("Double.parseDouble(${a}) == 0.1", ["0.1"], .holds),
            ("Double.parseDouble(${a}) == 0.30000000000000004", ["0.30000000000000004"], .holds),
            ("Double.parseDouble(${a}) == 1.7976931348623157E308", ["1.7976931348623157e308"], .holds),
            ("Double.parseDouble(${a}) == 1.0 / 0", ["1e309"], .holds),
            ("Double.parseDouble(${a}) > 1.7976931348623157E308", ["1e309"], .holds),
            ("Double.parseDouble(${a}) == 4.9E-324", ["4.9e-324"], .holds),
            ("Double.parseDouble(${a}) == 0", ["1e-400"], .holds),
            ("Double.parseDouble(${a}) == 123456789012345678901234567890.0", ["123456789012345678901234567890"], .holds),
            ("Double.parseDouble(${a}) == 0.1", ["0.1000000000000000055511151231257827"], .holds),
            ("Double.parseDouble(${a}) == 9007199254740993.0", ["9007199254740993"], .holds),
            ("Float.parseFloat(${a}) == 0.1f", ["0.1"], .holds),
            ("Float.parseFloat(${a}) == 0.1", ["0.1"], .doesNotHold),
            ("Float.parseFloat(${a}) == 16777216", ["16777217"], .holds),
            ("Float.parseFloat(${a}) > 3.4028235e38f", ["3.5e38"], .holds),
            ("Float.parseFloat(${a}) == 1.0E-45f", ["1.4e-45"], .holds),
            ("Float.parseFloat(${a}) == 1.5f", [" 1.5f "], .holds),
            ("Float.parseFloat(${a}) == 1.5f", ["x"], .fails),
        ])
    }

    @Test("Integer.parseInt and Long.parseLong follow Java's grammar")
    func parseInteger() throws {
        let eq = "Integer.parseInt(${a}) == 42"
        try check([
            (eq, ["42"], .holds), (eq, ["+42"], .holds), (eq, ["042"], .holds), (eq, ["43"], .doesNotHold),
            (eq, [" 42"], .fails), (eq, ["42 "], .fails), (eq, ["42.0"], .fails), (eq, ["42L"], .fails), (eq, ["4_2"], .fails),
            (eq, ["0x2A"], .fails), (eq, [""], .fails), (eq, ["-"], .fails), (eq, ["+"], .fails), (eq, ["--42"], .fails),
            (eq, ["٤٢"], .holds), (eq, ["４２"], .holds), (eq, ["𝟒𝟐"], .fails), (eq, ["4²"], .fails),
            ("Integer.parseInt(${a}) == 2147483647", ["2147483647"], .holds),
            ("Integer.parseInt(${a}) == -2147483648", ["-2147483648"], .holds),
            ("Integer.parseInt(${a}) != 0", ["2147483648"], .fails),
            ("Integer.parseInt(${a}) != 0", ["-2147483649"], .fails),
            ("Integer.parseInt(${a}) != 0", ["99999999999999999999999"], .fails),
            ("Integer.parseInt(${a}) == 0", ["-0"], .holds),
            ("Long.parseLong(${a}) == 9223372036854775807L", ["9223372036854775807"], .holds),
            ("Long.parseLong(${a}) == -9223372036854775808L", ["-9223372036854775808"], .holds),
            ("Long.parseLong(${a}) != 0", ["9223372036854775808"], .fails),
            ("Long.parseLong(${a}) != 0", ["12L"], .fails),
            ("Long.parseLong(${a}) == 2147483648L", ["2147483648"], .holds),
            ("Boolean.parseBoolean(${a})", ["true"], .holds), ("Boolean.parseBoolean(${a})", ["TrUe"], .holds),
            ("Boolean.parseBoolean(${a})", [" true"], .doesNotHold), ("Boolean.parseBoolean(${a})", ["yes"], .doesNotHold),
            ("Boolean.parseBoolean(${a})", [""], .doesNotHold), ("Boolean.parseBoolean(${a})", ["1"], .doesNotHold),
        ])
    }

    @Test("precedence and associativity are Java's")
    func precedence() throws {
        try check([
            ("1 + 2 * 3 == 7", [], .holds), ("(1 + 2) * 3 == 9", [], .holds), ("10 - 4 - 3 == 3", [], .holds),
            ("100 / 10 / 5 == 2", [], .holds), ("7 % 4 * 2 == 6", [], .holds), ("-3 * -3 == 9", [], .holds),
            ("2 * 3 % 4 == 2", [], .holds), ("1 - -1 == 2", [], .holds), ("- -1 == 1", [], .holds), ("+1 == 1", [], .holds),
            ("-(-1) == 1", [], .holds), ("!(1 > 2) && 3 > 2", [], .holds), ("true || false && false", [], .holds),
            ("(true || false) && false", [], .doesNotHold), ("1 < 2 == true", [], .holds), ("1 < 2 != 2 < 1", [], .holds),
            ("false ? true : false ? false : true", [], .holds), ("true ? false ? false : true : false", [], .holds),
            ("1 > 2 || 3 > 2 ? true : false", [], .holds), ("(false ? 1 : 2) == 2", [], .holds),
            ("true ? 1 > 0 : 1 / 0 > 0", [], .holds), ("!true == false", [], .holds), ("!!true", [], .holds),
            ("((((true))))", [], .holds), ("1 + 2 + \"x\" == \"3x\"", [], .holds), ("\"x\" + 1 + 2 == \"x12\"", [], .holds),
            ("\"x\" + (1 + 2) == \"x3\"", [], .holds), ("\"x\" + 2 * 3 == \"x6\"", [], .holds),
            ("-${a}.length() == -3", ["abc"], .holds), ("!${a}.isEmpty()", ["abc"], .holds),
            ("(${a} + ${b}).length() == 4", ["ab", "cd"], .holds), ("${a} + ${b} == \"abcd\"", ["ab", "cd"], .holds),
            ("java.lang.Math.max(1, 2) == 2 && java.lang.Integer.parseInt(\"3\") == 3", [], .holds),
            ("Double . parseDouble ( ${a} ) > 1", ["2"], .holds),
        ])
    }

    @Test("numeric promotion, Java overflow, and division")
    func arithmetic() throws {
        try check([
            ("1 / 2 == 0", [], .holds), ("1 / 2.0 == 0.5", [], .holds), ("1 / 2f == 0.5", [], .holds),
            ("7 / 2 * 2 == 6", [], .holds), ("7 / 2.0 * 2 == 7.0", [], .holds), ("-7 / 2 == -3", [], .holds),
            ("-7 % 2 == -1", [], .holds), ("7 % -2 == 1", [], .holds), ("-7.5 % 2 == -1.5", [], .holds),
            ("1L + 1 == 2", [], .holds), ("1 == 1L", [], .holds), ("1 == 1.0f", [], .holds), ("0.1f != 0.1", [], .holds),
            ("0.1f + 0.2f == 0.3f", [], .holds), ("0.1 + 0.2 != 0.3", [], .holds), ("16777216f + 1 == 16777216f", [], .holds),
            ("16777216.0 + 1 != 16777216.0", [], .holds), ("9007199254740993L == 9007199254740992.0", [], .holds),
            ("9007199254740993L != 9007199254740992L", [], .holds), ("(true ? 1 : 2.0) == 1.0", [], .holds),
            ("2147483647 + 1 == -2147483648", [], .holds), ("2147483647 + 1L == 2147483648L", [], .holds),
            ("9223372036854775807L + 1 == -9223372036854775808L", [], .holds), ("65536 * 65536 == 0", [], .holds),
            ("65536L * 65536 == 4294967296L", [], .holds), ("-2147483648 / -1 == -2147483648", [], .holds),
            ("-2147483648 % -1 == 0", [], .holds), ("-9223372036854775808L / -1 == -9223372036854775808L", [], .holds),
            ("-(-2147483648) == -2147483648", [], .holds), ("Integer.parseInt(${a}) * 2 < 0", ["2000000000"], .holds),
            ("Integer.parseInt(${a}) + 1 < 0", ["2147483647"], .holds), ("Long.parseLong(${a}) * 2 > 0", ["2000000000"], .holds),
            ("1 / 0 == 0", [], .fails), ("1 % 0 == 0", [], .fails), ("1L / 0L == 0", [], .fails), ("1L % 0 == 0", [], .fails),
            ("Integer.parseInt(${a}) / Integer.parseInt(${b}) > 0", ["1", "0"], .fails),
            ("1.0 / 0 > 0", [], .holds), ("-1.0 / 0 < 0", [], .holds), ("0.0 / 0 != 0.0 / 0", [], .holds),
            ("0.0 / 0 == 0.0 / 0", [], .doesNotHold), ("!(0.0 / 0 < 1)", [], .holds), ("1 % 0.0 != 1 % 0.0", [], .holds),
            ("1f / 0 > 3.4028235e38f", [], .holds), ("0.0 == -0.0", [], .holds), ("1 / 0.0 != 1 / -0.0", [], .holds),
        ])
    }

    @Test("short circuit: what is not evaluated cannot fail")
    func shortCircuit() throws {
        try check([
            ("false && Integer.parseInt(\"x\") > 0", [], .doesNotHold), ("true || Integer.parseInt(\"x\") > 0", [], .holds),
            ("Integer.parseInt(\"x\") > 0 || true", [], .fails), ("Integer.parseInt(\"x\") > 0 && false", [], .fails),
            ("true ? true : 1 / 0 > 0", [], .holds), ("false ? 1 / 0 > 0 : true", [], .holds),
            ("(true ? 1 : 1 / 0) == 1", [], .holds), ("(false ? 1 : 1 / 0) == 1", [], .fails),
            ("${a}.isEmpty() || Double.parseDouble(${a}) > 1", [""], .holds),
            ("!${a}.isEmpty() && Double.parseDouble(${a}) > 1", [""], .doesNotHold),
            ("${c}.isEmpty() || true", ["x", "y"], .fails), ("true || ${c}.isEmpty()", ["x", "y"], .holds),
            ("false && true || true", [], .holds), ("true || false && 1 / 0 > 0", [], .holds),
        ])
    }

    @Test("String methods compare code units, not canonical equivalents")
    func strings() throws {
        try check([
            ("${a}.equals(\"x\")", ["x"], .holds), ("${a}.equals(${b})", ["é", "e\u{301}"], .doesNotHold),
            ("${a} == ${b}", ["é", "é"], .holds), ("${a} == ${b}", ["é", "e\u{301}"], .doesNotHold),
            ("${a} != \"x\"", ["y"], .holds), ("\"x\" == ${a}", ["x"], .holds),
            ("${a}.equals(5)", ["5"], .doesNotHold), ("${a}.equals(true)", ["true"], .doesNotHold),
            ("${a} == null", ["x"], .doesNotHold), ("${a} != null", [""], .holds), ("null == null", [], .holds),
            ("null != ${a}", ["x"], .holds), ("${a}.equals(null)", ["null"], .doesNotHold),
            ("${a}.equalsIgnoreCase(null)", ["null"], .doesNotHold),
            ("${a}.equalsIgnoreCase(\"ÉCOLE\")", ["école"], .holds), ("${a}.equalsIgnoreCase(\"Hello\")", ["hELLO"], .holds),
            ("${a}.equalsIgnoreCase(\"Hello\")", ["hELLO!"], .doesNotHold), ("${a}.equalsIgnoreCase(\"i\")", ["İ"], .holds),
            ("${a}.equalsIgnoreCase(\"ß\")", ["SS"], .doesNotHold), ("${a}.equalsIgnoreCase(\"σ\")", ["Σ"], .holds),
            ("${a}.equalsIgnoreCase(\"[\")", ["{"], .doesNotHold), ("${a}.equalsIgnoreCase(\"@\")", ["`"], .doesNotHold),
            ("${a}.startsWith(\"AA\")", ["AAPL"], .holds), ("${a}.startsWith(\"\")", [""], .holds),
            ("${a}.startsWith(\"AAPLX\")", ["AAPL"], .doesNotHold), ("${a}.startsWith(${b})", ["e\u{301}x", "é"], .doesNotHold),
            ("${a}.endsWith(\"PL\")", ["AAPL"], .holds), ("${a}.endsWith(\"AP\")", ["AAPL"], .doesNotHold),
            ("${a}.contains(\"AP\")", ["AAPL"], .holds), ("${a}.contains(\"\")", [""], .holds),
            ("${a}.contains(\"PA\")", ["AAPL"], .doesNotHold),
            ("${a}.contains(${b})", [String(repeating: "a", count: 5000) + "b", String(repeating: "a", count: 40) + "b"], .holds),
            ("${a}.contains(${b})", [String(repeating: "a", count: 5000), String(repeating: "a", count: 40) + "b"], .doesNotHold),
            ("${a}.contains(${b})", ["xxabcabcabdxx", "abcabd"], .holds), ("${a}.contains(${b})", ["abababababac", "ababac"], .holds),
            ("${a}.contains(${b})", ["abcabcabcabcabcabx", "abcabcabcabx"], .holds),
            ("${a}.length() == 3", ["abc"], .holds), ("${a}.length() == 1", ["é"], .holds), ("${a}.length() == 2", ["😀"], .holds),
            ("${a}.length() == 2", ["e\u{301}"], .holds), ("${a}.isEmpty()", [""], .holds), ("${a}.isEmpty()", [" "], .doesNotHold),
            ("${a}.isEmpty()", [], .fails), ("$[2].equals(\"y\")", ["x", "y"], .holds), ("$[2].equals(\"y\")", ["x"], .fails),
            ("${a}.equals(${a})", ["x"], .holds), ("(${a} + ${a}).length() == 60000", [String(repeating: "x", count: 30000)], .holds),
            ("(${a} + ${a}).length() > 0", [String(repeating: "x", count: 40000)], .fails),
            ("(\"\" + ${a}).length() > 0", [String(repeating: "x", count: 70000)], .fails),
            ("${a}.length() == 70000", [String(repeating: "x", count: 70000)], .holds),
            ("(true ? ${a} : ${b}).equals(\"x\")", ["x", "y"], .holds), ("(false ? ${a} : ${b}).equals(\"y\")", ["x", "y"], .holds),
        ])
    }

    @Test("numbers in a concatenation are written as Java's String.valueOf writes them")
    func concatenation() throws {
        let rows: [(String, String)] = [
            ("1.0", "1.0"), ("1e7", "1.0E7"), ("9999999.0", "9999999.0"), ("0.001", "0.001"), ("1.0E-4", "1.0E-4"),
            ("100.0f", "100.0"), ("1.1f", "1.1"), ("(0.1 + 0.2)", "0.30000000000000004"), ("true", "true"),
            ("(1 > 2)", "false"), ("-0.0", "-0.0"), ("0.0", "0.0"), ("(1 / 0.0)", "Infinity"), ("(-1 / 0.0)", "-Infinity"),
            ("(0.0 / 0)", "NaN"), ("123456789.0", "1.23456789E8"), ("12L", "12"), ("-5", "-5"), ("1.0E22", "1.0E22"),
            ("4.9E-324", "4.9E-324"), ("1.7976931348623157E308", "1.7976931348623157E308"), ("0.5", "0.5"),
            ("123.456", "123.456"), ("1234567.0", "1234567.0"), ("12345678.9", "1.23456789E7"), ("3.4028235e38f", "3.4028235E38"),
            ("1.0E-5f", "1.0E-5"), ("1.4e-45f", "1.4E-45"), ("(2 * 4.9E-324)", "9.9E-324"), ("1e23", "1.0E23"), ("(1f / 3)", "0.33333334"), ("(1.0 / 3)", "0.3333333333333333"), ("-2147483648", "-2147483648"),
            ("-9223372036854775808L", "-9223372036854775808"), ("(2.5f * 2)", "5.0"), ("0.00123", "0.00123"), ("1e-3", "0.001"),
        ]
        for (expression, text) in rows {
            let found = try TriggerCheck.outcome("(\"\" + \(expression)).equals(\"\(text)\")", fields: [], values: [])
            #expect(found == .holds, "\(expression) should read \(text)")
        }
    }

    @Test("Math.abs, min and max, with Java's wrap, NaN and signed zeros")
    func math() throws {
        try check([
            ("Math.max(1, 2.5) == 2.5", [], .holds), ("Math.min(1, 2) == 1", [], .holds), ("Math.max(3L, 2) == 3L", [], .holds),
            ("Math.abs(-5) == 5", [], .holds), ("Math.abs(-2.5f) == 2.5f", [], .holds), ("Math.abs(5L) == 5", [], .holds),
            ("Math.abs(-2147483648) == -2147483648", [], .holds), ("Math.abs(-2147483648L) == 2147483648L", [], .holds),
            ("Math.abs(-9223372036854775808L) < 0", [], .holds),
            ("(\"\" + Math.abs(-0.0)).equals(\"0.0\")", [], .holds),
            ("(\"\" + Math.min(-0.0, 0.0)).equals(\"-0.0\")", [], .holds), ("(\"\" + Math.min(0.0, -0.0)).equals(\"-0.0\")", [], .holds),
            ("(\"\" + Math.max(-0.0, 0.0)).equals(\"0.0\")", [], .holds), ("(\"\" + Math.max(0.0, -0.0)).equals(\"0.0\")", [], .holds),
            ("Math.max(0.0 / 0, 1.0) != Math.max(0.0 / 0, 1.0)", [], .holds), ("Math.min(1.0, 0.0 / 0) != 0", [], .holds),
            ("(\"\" + Math.min(1, 2.0f)).equals(\"1.0\")", [], .holds),
            ("Math.max(Double.parseDouble(${a}), Double.parseDouble(${b})) > 500", ["1", "600"], .holds),
        ])
    }

    @Test("literals as Java writes them")
    func literals() throws {
        try check([
            ("0x1F == 31", [], .holds), ("0X1f == 31", [], .holds), ("017 == 15", [], .holds), ("0b101 == 5", [], .holds),
            ("0B1_0_1 == 5", [], .holds), ("1_000 == 1000", [], .holds), ("1__0 == 10", [], .holds), ("0_17 == 15", [], .holds),
            ("0xFFFFFFFF == -1", [], .holds), ("0x7fffffffffffffffL == 9223372036854775807L", [], .holds),
            ("0xFFFFFFFFFFFFFFFFL == -1L", [], .holds), ("0L == 0", [], .holds), ("00 == 0", [], .holds),
            ("037777777777 == -1", [], .holds), ("1e3 == 1000", [], .holds), ("1E+3 == 1000", [], .holds), (".5 == 0.5", [], .holds),
            ("5. == 5", [], .holds), ("1.5f == 1.5", [], .holds), ("2d == 2", [], .holds), ("2D == 2", [], .holds),
            ("1f == 1", [], .holds), ("1.e1 == 10", [], .holds), ("1_0.0_1 == 10.01", [], .holds), ("0x1.8p1 == 3.0", [], .holds),
            ("0x1p-2f == 0.25", [], .holds), ("0x.8P1 == 1", [], .holds), ("-2147483648 == Integer.parseInt(\"-2147483648\")", [], .holds),
            ("- 2147483648 < 0", [], .holds), ("-9223372036854775808L < 0", [], .holds), ("4.9e-324 > 0", [], .holds),
            ("\"\\u0041\".equals(\"A\")", [], .holds), ("\"\\uuu0041\".equals(\"A\")", [], .holds), ("\"\\101\".equals(\"A\")", [], .holds),
            ("\"\\t\".length() == 1", [], .holds), ("\"\\uD83D\\uDE00\".equals(\"😀\")", [], .holds),
            ("\"\\s\".equals(\" \")", [], .holds), ("\"\\377\".length() == 1", [], .holds), ("\"\\400\".length() == 2", [], .holds),
            ("\"\\0\".length() == 1", [], .holds), ("\"a\\\"b\".length() == 3", [], .holds), ("\"\\\\\".length() == 1", [], .holds),
            ("\"\\'\".equals(\"'\")", [], .holds), ("\"\\b\\f\\n\\r\".length() == 4", [], .holds), ("\"é😀\".length() == 3", [], .holds),
            ("\"${a}\".equals(\"$\" + \"{a}\")", [], .holds),
        ])
    }

    @Test("fields by name and by number; a missing value fails the evaluation")
    func fields() throws {
        let trigger = try PushTrigger("${b}.equals($[2]) && ${c} == $[3] && !$[1].isEmpty()", fields: Self.fields)
        #expect(trigger.evaluate(["x", "y", "z"]))
        #expect(!trigger.evaluate(["", "y", "z"]))
        #expect(!trigger.evaluate(["x", "y"]))
        #expect(!trigger.evaluate([]))
        // Extra values are ignored; the first field of a repeated name is the one named.
        #expect(try PushTrigger("${a} == \"1\"", fields: ["a", "a"]).evaluate(["1", "2", "3"]))
        #expect(try PushTrigger("$[2] == \"2\"", fields: ["a", "a"]).evaluate(["1", "2"]))
        // Field names are any text up to '}'.
        #expect(try PushTrigger("${x.y-z$[1]} == \"v\"", fields: ["x.y-z$[1]"]).evaluate(["v"]))
    }

    @Test("the hot path allocates nothing and compiles to two instructions")
    func hotPath() throws {
        let trigger = try PushTrigger("Double.parseDouble(${x}) > 500.0", fields: ["x"])
        #expect(trigger.program.code == [.parseField(.double, 0), .compareConstant(.greater, .double, 500.0.bitPattern)])
        #expect(trigger.program.stringDepth == 0)
        let integer = try PushTrigger("Integer.parseInt($[1]) >= 10", fields: ["x"])
        #expect(integer.program.code == [.parseField(.int, 0), .compareConstant(.greaterEqual, .int, 10)])
        let promoted = try PushTrigger("Integer.parseInt($[1]) > 0.5", fields: ["x"])
        #expect(promoted.program.code == [.parseField(.int, 0), .integerToDouble, .compareConstant(.greater, .double, 0.5.bitPattern)])
    }
}
