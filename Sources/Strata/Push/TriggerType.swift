@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
