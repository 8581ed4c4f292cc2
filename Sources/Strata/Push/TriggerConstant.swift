@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A literal value of the trigger language, with its Java type.
enum TriggerConstant: Sendable, Equatable {
    case boolean(Bool)
    case int(Int32)
    case long(Int64)
    case float(Float)
    case double(Double)
    case string(String)
    case null

    var type: TriggerType {
        switch self {
        case .boolean: return .boolean
        case .int: return .int
        case .long: return .long
        case .float: return .float
        case .double: return .double
        case .string: return .string
        case .null: return .null
        }
    }
}
