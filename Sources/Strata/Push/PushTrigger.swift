@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A compiled trigger expression of a push subscription: a boolean expression in the Java syntax
/// Lightstreamer's MPN module documents, evaluated against the field values of each update.
///
/// ```swift
/// let trigger = try PushTrigger("Double.parseDouble(${last_price}) > 500.0",
///                               fields: ["stock_name", "last_price"])
/// trigger.evaluate(["ACME", "512.25"])   // true
/// trigger.evaluate(["ACME", "499.99"])   // false
/// trigger.evaluate(["ACME", "n/a"])      // false: a number that does not parse
/// PushTrigger.normalized(trigger.expression, fields: ["stock_name", "last_price"])
/// // "Double.parseDouble($[2]) > 500.0"
/// ```
///
/// ## The language
/// - `${name}` (the first field of that name) and `$[n]` (1-based, in field order) are `String`
///   values. A value the update does not have (fewer values than the reference needs) makes the
///   evaluation fail.
/// - Literals as in Java: `true`, `false`; `int` (`42`, `0x2A`, `052`, `0b101010`, `1_000`) and
///   `long` (`42L`) literals, `2147483648` only right after a unary minus; `double` (`1.5`, `.5`,
///   `1e-3`, `2d`, `0x1.8p1`) and `float` (`1.5f`) literals; string literals with Java's escapes
///   (`\b \t \n \f \r \s \" \' \\`, octal escapes, `\uXXXX`); `null`, accepted only as an operand
///   of `==`/`!=` (a field value is never null, so only `null == null` holds) and as the argument
///   of `equals`/`equalsIgnoreCase` (false).
/// - `Double.parseDouble`, `Float.parseFloat`, `Integer.parseInt`, `Long.parseLong`,
///   `Boolean.parseBoolean` (also written `java.lang.Double.parseDouble`…) with Java's exact
///   rules: `parseInt`/`parseLong` take an optional sign and decimal digits only (no whitespace,
///   no decimal point, no `L`), within range; `parseDouble`/`parseFloat` trim characters up to
///   U+0020 at both ends and take `NaN`, `Infinity`, decimal and hexadecimal (`0x1p3`) forms with
///   an optional `f`/`d` suffix, correctly rounded; `parseBoolean` is true for `true` in any case
///   and never fails.
/// - `String` methods `equals`, `equalsIgnoreCase`, `startsWith`, `endsWith`, `contains`,
///   `length()` (UTF-16 units, as in Java), `isEmpty()`; comparisons are by code unit, without
///   Unicode normalization (unlike Swift's `==`). `equals` of a String with a number or a boolean
///   is false, as Java's `equals(Object)` is.
/// - `Math.abs`, `Math.min`, `Math.max` on `int`, `long`, `float`, `double`.
/// - Operators `!`, unary `-` and `+`, `*`, `/`, `%`, `+`, `-`, `<`, `<=`, `>`, `>=`, `==`, `!=`,
///   `&&`, `||`, `?:` and parentheses with Java's precedence and associativity; binary numeric
///   promotion (int → long → float → double); `int` and `long` arithmetic wraps around as in Java;
///   integer division or remainder by zero fails the evaluation; `float` arithmetic is done in
///   single precision; `+` with a String operand concatenates, writing numbers as Java's
///   `String.valueOf` does (`1.0E7`, `NaN`); `&&`, `||` and `?:` evaluate only what they need.
/// - `==` and `!=` on two Strings compare their contents (as `equals` does), not references as
///   in Java, where two equal field values are in general different objects: that is what a
///   trigger author means.
/// - The whole expression must be a `boolean`.
///
/// ## Bounds
/// An expression is at most ``maximumLength`` bytes of UTF-8 and nests parentheses, calls,
/// `?:` and prefix operators at most ``maximumDepth`` deep; the language has no loops and no
/// variables, so an evaluation runs each instruction of the compiled program at most once. A
/// concatenation longer than ``maximumStringLength`` bytes fails the evaluation.
///
/// Any failure during an evaluation — a number that does not parse, an integer division by zero,
/// a missing value, a string past the bound — makes ``evaluate(_:)`` return false, as
/// Lightstreamer counts a trigger that throws as not holding.
public struct PushTrigger: Sendable, Hashable {
    /// The expression, as given.
    public let expression: String
    /// The fields the expression was compiled against, in order.
    public let fields: [String]
    let program: TriggerProgram

    /// The longest expression accepted, in bytes of UTF-8.
    public static let maximumLength = 4096
    /// The deepest nesting of parentheses, calls, `?:` and prefix operators accepted.
    public static let maximumDepth = TriggerParser.maximumDepth
    /// The longest string a concatenation may make, in bytes of UTF-8.
    public static let maximumStringLength = TriggerProgram.maximumStringLength

    /// Compiles `expression` against the subscription's `fields`.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` naming the 1-based character position and
    ///   what was expected there, for a syntax error, an unknown `${name}`, an out-of-range
    ///   `$[n]`, a type error, an expression that is not boolean, or one past the length or depth
    ///   limit.
    public init(_ expression: String, fields: [String]) throws {
        let length = expression.utf8.count
        guard length <= Self.maximumLength else {
            // Positions before the limit depend only on the text up to the character there: copy
            // no more than that (a scalar is at most 4 bytes).
            let head = TriggerSource(String(decoding: expression.utf8.prefix(Self.maximumLength + 4), as: UTF8.self))
            throw head.error(at: Self.maximumLength, "the expression is \(length) bytes of UTF-8 long; "
                + "expected at most \(Self.maximumLength)")
        }
        let source = TriggerSource(expression)
        let tokens = try TriggerLexer(source: source, fields: fields).tokens()
        var parser = TriggerParser(source: source)
        let (nodes, root) = try parser.parse(tokens)
        var compiler = TriggerCompiler(source: source, nodes: nodes, root: root)
        self.program = try compiler.compile()
        self.expression = expression
        self.fields = fields
    }

    /// Evaluates the trigger on an update's field values (as strings, in field order): true when
    /// the expression holds, false when it does not or its evaluation fails.
    ///
    /// ```swift
    /// let trigger = try PushTrigger("Integer.parseInt($[1]) % 2 == 0", fields: ["count"])
    /// trigger.evaluate(["42"])   // true
    /// trigger.evaluate(["4.2"])  // false: parseInt takes no decimals
    /// trigger.evaluate([])       // false: no value for $[1]
    /// ```
    public func evaluate(_ values: [String]) -> Bool {
        program.evaluate(values)
    }

    /// Two triggers are equal when their expressions and fields are.
    public static func == (a: PushTrigger, b: PushTrigger) -> Bool {
        a.expression == b.expression && a.fields == b.fields
    }

    /// Hashes the expression and the fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(expression)
        hasher.combine(fields)
    }
}
