/// The Java types of the trigger language.
enum TriggerType: Sendable, Equatable, CustomStringConvertible {
    case boolean, int, long, float, double, string, null

    var isNumeric: Bool { self == .int || self == .long || self == .float || self == .double }

    /// The numeric kind a value of this type is computed in, for a numeric type.
    var numeric: TriggerNumeric? {
        switch self {
        case .int: return .int
        case .long: return .long
        case .float: return .float
        case .double: return .double
        default: return nil
        }
    }

    /// Java's binary numeric promotion: double, else float, else long, else int.
    static func promoted(_ a: TriggerType, _ b: TriggerType) -> TriggerType {
        if a == .double || b == .double { return .double }
        if a == .float || b == .float { return .float }
        if a == .long || b == .long { return .long }
        return .int
    }

    var description: String {
        switch self {
        case .boolean: return "boolean"
        case .int: return "int"
        case .long: return "long"
        case .float: return "float"
        case .double: return "double"
        case .string: return "String"
        case .null: return "null"
        }
    }
}

/// The arithmetic kinds of the machine (`boolean` values are kept as `long` 0 or 1).
enum TriggerNumeric: Sendable, Equatable {
    case int, long, float, double
}

/// The functions and methods of the language; a method's receiver is its first argument.
enum TriggerFunction: Sendable, Equatable {
    case parseDouble, parseFloat, parseInt, parseLong, parseBoolean
    case abs, min, max
    case equals, equalsIgnoreCase, startsWith, endsWith, contains, length, isEmpty

    /// Arguments, the receiver of a method included.
    var arity: Int {
        switch self {
        case .parseDouble, .parseFloat, .parseInt, .parseLong, .parseBoolean, .abs, .length, .isEmpty: return 1
        case .min, .max, .equals, .equalsIgnoreCase, .startsWith, .endsWith, .contains: return 2
        }
    }

    var isMethod: Bool {
        switch self {
        case .equals, .equalsIgnoreCase, .startsWith, .endsWith, .contains, .length, .isEmpty: return true
        default: return false
        }
    }

    var name: String {
        switch self {
        case .parseDouble: return "Double.parseDouble"
        case .parseFloat: return "Float.parseFloat"
        case .parseInt: return "Integer.parseInt"
        case .parseLong: return "Long.parseLong"
        case .parseBoolean: return "Boolean.parseBoolean"
        case .abs: return "Math.abs"
        case .min: return "Math.min"
        case .max: return "Math.max"
        case .equals: return "equals"
        case .equalsIgnoreCase: return "equalsIgnoreCase"
        case .startsWith: return "startsWith"
        case .endsWith: return "endsWith"
        case .contains: return "contains"
        case .length: return "length"
        case .isEmpty: return "isEmpty"
        }
    }

    /// The static function `Class.method`, or nil.
    static func staticFunction(_ type: String, _ method: String) -> TriggerFunction? {
        switch (type, method) {
        case ("Double", "parseDouble"): return .parseDouble
        case ("Float", "parseFloat"): return .parseFloat
        case ("Integer", "parseInt"): return .parseInt
        case ("Long", "parseLong"): return .parseLong
        case ("Boolean", "parseBoolean"): return .parseBoolean
        case ("Math", "abs"): return .abs
        case ("Math", "min"): return .min
        case ("Math", "max"): return .max
        default: return nil
        }
    }

    /// The functions of each class, for messages.
    static func functions(of type: String) -> String? {
        switch type {
        case "Double": return "parseDouble"
        case "Float": return "parseFloat"
        case "Integer": return "parseInt"
        case "Long": return "parseLong"
        case "Boolean": return "parseBoolean"
        case "Math": return "abs, min or max"
        default: return nil
        }
    }

    /// The `String` method `name`, or nil.
    static func method(_ name: String) -> TriggerFunction? {
        switch name {
        case "equals": return .equals
        case "equalsIgnoreCase": return .equalsIgnoreCase
        case "startsWith": return .startsWith
        case "endsWith": return .endsWith
        case "contains": return .contains
        case "length": return .length
        case "isEmpty": return .isEmpty
        default: return nil
        }
    }
}

/// The unary and binary operators.
enum TriggerOperator: Sendable, Equatable {
    case not, negate, plus
    case multiply, divide, remainder, add, subtract
    case less, lessEqual, greater, greaterEqual, equal, notEqual
    case and, or

    /// Java's precedence, higher binding tighter; unary operators above every binary one.
    var precedence: Int {
        switch self {
        case .not, .negate, .plus: return 10
        case .multiply, .divide, .remainder: return 9
        case .add, .subtract: return 8
        case .less, .lessEqual, .greater, .greaterEqual: return 7
        case .equal, .notEqual: return 6
        case .and: return 5
        case .or: return 4
        }
    }

    var isUnary: Bool { self == .not || self == .negate || self == .plus }

    var symbol: String {
        switch self {
        case .not: return "!"
        case .negate: return "-"
        case .plus: return "+"
        case .multiply: return "*"
        case .divide: return "/"
        case .remainder: return "%"
        case .add: return "+"
        case .subtract: return "-"
        case .less: return "<"
        case .lessEqual: return "<="
        case .greater: return ">"
        case .greaterEqual: return ">="
        case .equal: return "=="
        case .notEqual: return "!="
        case .and: return "&&"
        case .or: return "||"
        }
    }

    static func binary(_ p: TriggerPunctuation) -> TriggerOperator? {
        switch p {
        case .star: return .multiply
        case .slash: return .divide
        case .percent: return .remainder
        case .plus: return .add
        case .minus: return .subtract
        case .less: return .less
        case .lessEqual: return .lessEqual
        case .greater: return .greater
        case .greaterEqual: return .greaterEqual
        case .equal: return .equal
        case .notEqual: return .notEqual
        case .and: return .and
        case .or: return .or
        default: return nil
        }
    }
}

/// A node of the syntax tree. Nodes live in one array in the order the parser completes them,
/// so a node's children always come before it: the type checker is one forward loop, and no
/// pass over the tree recurses.
struct TriggerNode: Sendable {
    enum Kind: Sendable {
        case constant(TriggerConstant)
        case field(Int)
        case unary(TriggerOperator)
        case binary(TriggerOperator)
        /// `c ? a : b`.
        case conditional
        case call(TriggerFunction)
    }

    var kind: Kind
    /// Indices of the children in the node array (up to three; -1 where absent).
    var children: (Int, Int, Int)
    var childCount: Int
    /// The UTF-8 offset errors about this node point at (its operator, name or first character).
    var offset: Int
    /// Set by the type checker.
    var type: TriggerType = .null

    func child(_ k: Int) -> Int {
        switch k {
        case 0: return children.0
        case 1: return children.1
        default: return children.2
        }
    }
}
