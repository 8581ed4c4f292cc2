@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A compiled trigger and the machine that runs it.
///
/// The stacks live in temporary (stack) allocations sized by the compiler, so an evaluation
/// allocates nothing unless it makes a string (a concatenation, a number written as text, or a
/// slow-path number parse). Every jump goes forward, so the time is linear in the code size (and
/// in the lengths of the strings the string methods read).
struct TriggerProgram: Sendable {
    let code: [TriggerInstruction]
    let strings: [String]
    /// The deepest each stack gets (computed by the compiler).
    let numberDepth: Int
    let stringDepth: Int

    /// The longest string a concatenation may make, in UTF-8 bytes; longer is an evaluation error.
    static let maximumStringLength = 65_536

    /// Runs the program on the field values; false on any evaluation error.
    func evaluate(_ values: [String]) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: numberDepth) { numbers in
            if stringDepth == 0 { return run(values, numbers, nil) }
            return withUnsafeTemporaryAllocation(of: String.self, capacity: stringDepth) { texts in
                run(values, numbers, texts.baseAddress)
            }
        }
    }

    private func run(_ values: [String], _ numbers: UnsafeMutableBufferPointer<UInt64>,
                     _ texts: UnsafeMutablePointer<String>?) -> Bool {
        guard let n = numbers.baseAddress else { return false }
        // sp: numbers on the stack; tp: strings on the stack (initialized memory to release).
        var sp = 0
        var tp = 0
        defer { if let texts, tp > 0 { texts.deinitialize(count: tp) } }
        return code.withUnsafeBufferPointer { code -> Bool in
            var pc = 0
            while pc < code.count {
                assert(sp <= numberDepth && tp <= stringDepth)
                switch code[pc] {
                case .pushNumber(let bits):
                    n[sp] = bits
                    sp += 1
                case .pushString(let index):
                    guard let texts, index < strings.count else { return false }
                    (texts + tp).initialize(to: strings[index])
                    tp += 1
                case .loadField(let index):
                    guard let texts, index < values.count else { return false }
                    (texts + tp).initialize(to: values[index])
                    tp += 1
                case .popNumber:
                    sp -= 1
                case .popString:
                    guard let texts else { return false }
                    tp -= 1
                    (texts + tp).deinitialize(count: 1)
                case .parse(let kind):
                    guard let texts else { return false }
                    tp -= 1
                    let s = (texts + tp).move()
                    guard let bits = Self.parse(kind, s) else { return false }
                    n[sp] = bits
                    sp += 1
                case .parseField(let kind, let index):
                    guard index < values.count, let bits = Self.parse(kind, values[index]) else { return false }
                    n[sp] = bits
                    sp += 1
                case .integerToFloat:
                    n[sp - 1] = Double(Float(Int64(bitPattern: n[sp - 1]))).bitPattern
                case .integerToDouble:
                    n[sp - 1] = Double(Int64(bitPattern: n[sp - 1])).bitPattern
                case .toString(let kind):
                    guard let texts else { return false }
                    sp -= 1
                    (texts + tp).initialize(to: Self.text(kind, n[sp]))
                    tp += 1
                case .concatenate:
                    guard let texts else { return false }
                    tp -= 1
                    let b = (texts + tp).move()
                    guard texts[tp - 1].utf8.count + b.utf8.count <= Self.maximumStringLength else { return false }
                    texts[tp - 1] += b
                case .arithmetic(let op, let kind):
                    sp -= 1
                    guard let r = Self.arithmetic(op, kind, n[sp - 1], n[sp]) else { return false }
                    n[sp - 1] = r
                case .negate(let kind):
                    n[sp - 1] = Self.negate(kind, n[sp - 1])
                case .absolute(let kind):
                    n[sp - 1] = Self.absolute(kind, n[sp - 1])
                case .minimum(let kind):
                    sp -= 1
                    n[sp - 1] = Self.minMax(kind, n[sp - 1], n[sp], minimum: true)
                case .maximum(let kind):
                    sp -= 1
                    n[sp - 1] = Self.minMax(kind, n[sp - 1], n[sp], minimum: false)
                case .not:
                    n[sp - 1] ^= 1
                case .compare(let op, let kind):
                    sp -= 1
                    n[sp - 1] = Self.compare(op, kind, n[sp - 1], n[sp]) ? 1 : 0
                case .compareConstant(let op, let kind, let bits):
                    n[sp - 1] = Self.compare(op, kind, n[sp - 1], bits) ? 1 : 0
                case .stringMethod(let f):
                    guard let texts else { return false }
                    let r: UInt64
                    if f == .length || f == .isEmpty {
                        tp -= 1
                        let s = (texts + tp).move()
                        r = f == .length ? UInt64(bitPattern: Int64(Int32(truncatingIfNeeded: TriggerStrings.length(s))))
                            : (s.isEmpty ? 1 : 0)
                    } else {
                        tp -= 2
                        let receiver = (texts + tp).move()
                        let argument = (texts + tp + 1).move()
                        r = Self.stringMethod(f, receiver, argument) ? 1 : 0
                    }
                    n[sp] = r
                    sp += 1
                case .jump(let target):
                    pc = target
                    continue
                case .jumpIfFalse(let target):
                    sp -= 1
                    if n[sp] == 0 {
                        pc = target
                        continue
                    }
                case .jumpIfFalseElsePop(let target):
                    if n[sp - 1] == 0 {
                        pc = target
                        continue
                    }
                    sp -= 1
                case .jumpIfTrueElsePop(let target):
                    if n[sp - 1] != 0 {
                        pc = target
                        continue
                    }
                    sp -= 1
                }
                pc += 1
            }
            return sp == 1 && n[0] != 0
        }
    }

    // MARK: Operations

    @inline(__always)
    private static func parse(_ kind: TriggerParse, _ s: String) -> UInt64? {
        switch kind {
        case .double: return TriggerNumbers.parseDouble(s)?.bitPattern
        case .float: return TriggerNumbers.parseFloat(s).map { Double($0).bitPattern }
        case .int: return TriggerNumbers.parseInteger(s, bits: 32).map { UInt64(bitPattern: $0) }
        case .long: return TriggerNumbers.parseInteger(s, bits: 64).map { UInt64(bitPattern: $0) }
        case .boolean: return TriggerNumbers.parseBoolean(s) ? 1 : 0
        }
    }

    private static func text(_ kind: TriggerText, _ bits: UInt64) -> String {
        switch kind {
        case .boolean: return bits != 0 ? "true" : "false"
        case .integer: return String(Int64(bitPattern: bits))
        case .float: return TriggerNumbers.javaString(Float(Double(bitPattern: bits)))
        case .double: return TriggerNumbers.javaString(Double(bitPattern: bits))
        }
    }

    /// `a op b`, or nil for an integer division by zero (Java's ArithmeticException).
    @inline(__always)
    private static func arithmetic(_ op: TriggerArithmetic, _ kind: TriggerNumeric, _ a: UInt64, _ b: UInt64) -> UInt64? {
        switch kind {
        case .int:
            integer(op, Int32(truncatingIfNeeded: Int64(bitPattern: a)), Int32(truncatingIfNeeded: Int64(bitPattern: b)))
                .map { UInt64(bitPattern: Int64($0)) }
        case .long:
            integer(op, Int64(bitPattern: a), Int64(bitPattern: b)).map { UInt64(bitPattern: $0) }
        case .float:
            Double(floating(op, Float(Double(bitPattern: a)), Float(Double(bitPattern: b)))).bitPattern
        case .double:
            floating(op, Double(bitPattern: a), Double(bitPattern: b)).bitPattern
        }
    }

    /// Java's `int`/`long` arithmetic: wrapping, and nil for a division by zero.
    @inline(__always)
    private static func integer<T: FixedWidthInteger & SignedInteger>(_ op: TriggerArithmetic, _ x: T, _ y: T) -> T? {
        switch op {
        case .add: return x &+ y
        case .subtract: return x &- y
        case .multiply: return x &* y
        case .divide: return y == 0 ? nil : x.dividedReportingOverflow(by: y).partialValue
        case .remainder: return y == 0 ? nil : x.remainderReportingOverflow(dividingBy: y).partialValue
        }
    }

    /// Java's `float`/`double` arithmetic (IEEE 754; `%` truncates as Java's does).
    @inline(__always)
    private static func floating<T: BinaryFloatingPoint>(_ op: TriggerArithmetic, _ x: T, _ y: T) -> T {
        switch op {
        case .add: return x + y
        case .subtract: return x - y
        case .multiply: return x * y
        case .divide: return x / y
        case .remainder: return x.truncatingRemainder(dividingBy: y)
        }
    }

    private static func negate(_ kind: TriggerNumeric, _ a: UInt64) -> UInt64 {
        switch kind {
        case .int: return UInt64(bitPattern: Int64(0 &- Int32(truncatingIfNeeded: Int64(bitPattern: a))))
        case .long: return UInt64(bitPattern: 0 &- Int64(bitPattern: a))
        case .float, .double: return (-Double(bitPattern: a)).bitPattern
        }
    }

    /// `Math.abs`: the minimum integer stays itself (Java's wrap); -0.0 becomes 0.0.
    private static func absolute(_ kind: TriggerNumeric, _ a: UInt64) -> UInt64 {
        switch kind {
        case .int:
            let x = Int32(truncatingIfNeeded: Int64(bitPattern: a))
            return UInt64(bitPattern: Int64(x < 0 ? 0 &- x : x))
        case .long:
            let x = Int64(bitPattern: a)
            return UInt64(bitPattern: x < 0 ? 0 &- x : x)
        case .float, .double:
            return Double(bitPattern: a).magnitude.bitPattern
        }
    }

    /// `Math.min`/`Math.max`: NaN if either is NaN; -0.0 below 0.0.
    private static func minMax(_ kind: TriggerNumeric, _ a: UInt64, _ b: UInt64, minimum: Bool) -> UInt64 {
        switch kind {
        case .int, .long:
            let x = Int64(bitPattern: a), y = Int64(bitPattern: b)
            return UInt64(bitPattern: minimum ? Swift.min(x, y) : Swift.max(x, y))
        case .float, .double:
            let x = Double(bitPattern: a), y = Double(bitPattern: b)
            if x.isNaN || y.isNaN { return Double.nan.bitPattern }
            if x == 0, y == 0 {
                // Signed zeros: min takes a negative one, max a positive one.
                return (minimum ? (x.sign == .minus ? x : y) : (x.sign == .plus ? x : y)).bitPattern
            }
            return (minimum ? (x < y ? x : y) : (x > y ? x : y)).bitPattern
        }
    }

    @inline(__always)
    private static func compare(_ op: TriggerComparison, _ kind: TriggerNumeric, _ a: UInt64, _ b: UInt64) -> Bool {
        switch kind {
        case .int, .long: ordered(op, Int64(bitPattern: a), Int64(bitPattern: b))
        case .float, .double: ordered(op, Double(bitPattern: a), Double(bitPattern: b))   // IEEE: NaN compares unequal
        }
    }

    @inline(__always)
    private static func ordered<T: Comparable>(_ op: TriggerComparison, _ x: T, _ y: T) -> Bool {
        switch op {
        case .less: x < y
        case .lessEqual: x <= y
        case .greater: x > y
        case .greaterEqual: x >= y
        case .equal: x == y
        case .notEqual: x != y
        }
    }

    private static func stringMethod(_ f: TriggerFunction, _ receiver: String, _ argument: String) -> Bool {
        switch f {
        case .equals: return TriggerStrings.equals(receiver, argument)
        case .equalsIgnoreCase: return TriggerStrings.equalsIgnoreCase(receiver, argument)
        case .startsWith: return TriggerStrings.startsWith(receiver, argument)
        case .endsWith: return TriggerStrings.endsWith(receiver, argument)
        case .contains: return TriggerStrings.contains(receiver, argument)
        default: return false
        }
    }
}
