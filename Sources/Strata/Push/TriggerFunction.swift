@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
