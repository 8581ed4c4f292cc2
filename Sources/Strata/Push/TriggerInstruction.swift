@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One instruction of a compiled trigger: a stack machine with two stacks, one of numbers (64-bit
/// slots: `boolean` as 0 or 1, `int` sign-extended and kept within 32 bits, `long`, and `float`
/// and `double` as the bits of a `Double` — a float's value is exact in a double) and one of
/// strings. Jumps go forward only, so a program runs each instruction at most once.
enum TriggerInstruction: Sendable, Equatable {
    /// Pushes number bits.
    case pushNumber(UInt64)
    /// Pushes string constant `n` of the program.
    case pushString(Int)
    /// Pushes the value of field `n` (an evaluation error when the values are fewer).
    case loadField(Int)
    case popNumber
    case popString
    /// Pops a string and pushes it parsed (an evaluation error when it does not parse).
    case parse(TriggerParse)
    /// `parse` of field `n`'s value without pushing the string (the hot path of a trigger).
    case parseField(TriggerParse, Int)
    /// An `int` or `long` to `float` (rounded to nearest, as Java does).
    case integerToFloat
    /// An `int` or `long` to `double` (rounded to nearest).
    case integerToDouble
    /// Pops a number and pushes its text as Java's `String.valueOf` writes it.
    case toString(TriggerText)
    /// Pops two strings and pushes their concatenation (an evaluation error past the bound).
    case concatenate
    /// Pops `b`, then `a`, and pushes `a op b`.
    case arithmetic(TriggerArithmetic, TriggerNumeric)
    case negate(TriggerNumeric)
    case absolute(TriggerNumeric)
    case minimum(TriggerNumeric)
    case maximum(TriggerNumeric)
    case not
    /// Pops `b`, then `a`, and pushes `a op b` (1 or 0).
    case compare(TriggerComparison, TriggerNumeric)
    /// Replaces `a` by `a op constant`.
    case compareConstant(TriggerComparison, TriggerNumeric, UInt64)
    /// Pops a string argument and a receiver string and pushes the method's result.
    case stringMethod(TriggerFunction)
    case jump(Int)
    /// Pops a boolean and jumps when it is false.
    case jumpIfFalse(Int)
    /// `&&`: when the top is false, jumps leaving it; else pops it.
    case jumpIfFalseElsePop(Int)
    /// `||`: when the top is true, jumps leaving it; else pops it.
    case jumpIfTrueElsePop(Int)
}

/// The parse functions.
enum TriggerParse: Sendable, Equatable {
    case int, long, float, double, boolean
}

/// What a number is written as in a concatenation.
enum TriggerText: Sendable, Equatable {
    case boolean, integer, float, double
}

enum TriggerArithmetic: Sendable, Equatable {
    case add, subtract, multiply, divide, remainder
}

enum TriggerComparison: Sendable, Equatable {
    case less, lessEqual, greater, greaterEqual, equal, notEqual
}
