@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
